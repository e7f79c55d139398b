"""The scheduler's memory: a cache of queues, flavors and admitted usage, and the pending queues.

Fed by events (watch events in the operator, scenario events in the simulator), it answers the
scheduler loop with queue heads and a snapshot for the core, and records decisions before they are
written (assume) so that a failed write can be undone (forget). No I/O and no clock.
"""
