"""The scheduler's memory: the cache of queue objects and admissions, and the pending queues.

Fed by events (watch events in the operator, scenario documents in the simulator), it answers
the scheduler loop with queue heads and a snapshot for the core. ``lifecycle`` is the only code
that moves a workload between pending, admitted and released (it assumes an admission before it
is written, so a failed write can be undone); ``evictions`` decides what must be evicted now,
``priorities`` keeps the priority classes, ``runtimes`` what finished workloads teach the
estimates, and ``explain`` answers why a workload waits. No I/O and no clock.
"""
