"""The scheduler performance harness's outside world: Kueue's generator shape, the API, processes.

``generator`` reads a generator config in the shape of Kueue's ``test/performance/scheduler``
and builds the queue objects and Workloads; ``api`` is a small counted REST client; ``runner``
creates Workloads on schedule, plays the job's part (finishes each after its runtime, clears
evictions) and records every transition; ``summary`` turns the record into figures; ``ceiling``
measures what the API server itself accepts; ``proc`` starts the operator and reads its CPU time
and memory. ``command`` and ``replay_command`` are ``berth bench harness`` and ``berth bench
harness-replay``, which put them together.
"""
