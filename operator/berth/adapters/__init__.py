"""Adapters to the outside world: Kubernetes, the history database, metrics, TLS.

Each adapter turns library errors into Berth's own and keeps the libraries out of the layers below.
Called by the drivers (``berth.operator``; for history and metrics only, ``berth.sim``) and by
``berth.entry``. The local control plane and the benchmark harness are ``berth.devtools``.
"""
