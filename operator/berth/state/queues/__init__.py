"""Pending workloads: one ordered queue per ClusterQueue plus an inadmissible set.

Mirrors Kueue's queue manager (``pkg/cache/queue``). Each ClusterQueue keeps an *active* heap
ordered by ``core.ordering.queue_key`` and an *inadmissible* set (``cluster_queue``). The
``manager`` pops one head from every ClusterQueue that may admit and puts a head that was not
admitted back where the ``requeue`` table says (by strategy and reason: straight back into the
heap, or parked alone or with its shape). Backfill (Berth's own) is BestEffortFIFO whose heads
held for a reservation are parked with their shape: in a Backfill queue a shape (``shapes``)
includes what decides the workload's runtime estimate, so the workloads of one shape would delay
the same reservation; the manager's ``holders`` gives the cycle each Backfill queue's first
parked workloads, which hold the reservations (``core.backfill``).

Inadmissible workloads of a whole quota tree go back to the heap when something there changed
(a workload finished or was evicted, a queue, cohort or flavor changed). Parked workloads move
as whole scheduling shapes (``groups``), so a release costs in proportion to the shapes parked,
with the same heads in the same order as moving each one. A head parked with its shape shares
what it was told (a ``pending.Note``) with the workloads parked with it: the queues keep the note
once for the whole group, so telling a thousand workloads why they wait costs as much as telling
one.

Workloads whose LocalQueue or ClusterQueue is missing or stopped wait outside any queue. Used by
the operator's scheduler loop and the simulator; no I/O, no clock.
"""
