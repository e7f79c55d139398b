"""The offline simulator behind ``berth simulate``: the same state and core on a virtual clock.

Owns scenario loading (documents with ``sim.berth.dev/*`` annotations), the virtual-time event loop
that plays the role of the cluster and the jobs, and the event stream in the format fixed by
``SIMULATE.md``. Called by the CLI, tests and benchmarks.
"""
