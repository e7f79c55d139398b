"""Adapters to the outside world: Kubernetes, the history database, metrics, local control plane.

Each adapter turns library errors into Berth's own and keeps the libraries out of the layers below.
Called by ``berth.entry`` (and, for history only, by ``berth.sim``).
"""
