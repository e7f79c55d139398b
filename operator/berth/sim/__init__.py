"""The offline simulator behind ``berth simulate``: the same state and core on a virtual clock.

Owns scenario loading (``documents``: documents with ``sim.berth.dev/*`` annotations), their
intake at their instant (``intake``), the virtual-time event loop that plays the role of the
cluster and the jobs (``engine``), and the event stream in the format fixed by ``SIMULATE.md``
(``events``, ``summary``). Called by the CLI, tests and benchmarks.
"""
