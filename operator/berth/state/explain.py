"""Explain a pending workload from the scheduler's state: gather, then ask ``core.explain``.

Finds the workload's ClusterQueue through its LocalQueue, its queue's pending workloads in queue
order (``QueueManager``'s heap order, inadmissible ones after), and hands them with the live
snapshot, the Backfill holders and the runtime estimates to the pure ``core.explain.explain``.
``berth explain`` calls it on a listed cluster's state, or with ``--scenario`` on the state a
simulated run ends in. No I/O, no clock (``now`` is given).
"""

from __future__ import annotations

from berth.api import names
from berth.core import cycle, workload
from berth.core import explain as core_explain
from berth.core.backfill import planning
from berth.core.backfill import reservations as reservations_mod
from berth.state import cache as cache_mod
from berth.state import lifecycle
from berth.state.queues import manager


def explain(
    state: lifecycle.Lifecycle,
    info: workload.WorkloadInfo,
    policy: cycle.Policy,
    now: float,
) -> core_explain.Explanation:
    """Explain why ``info`` (pending) is not admitted, as the core sees it at ``now``."""
    cache, queues = state.cache, state.queues
    cq_name = cache.cluster_queue_for(info)
    queued = None
    pw = queues.pending.get(info.key)
    if pw is not None and pw.cluster_queue is not None:
        q = queues.queues[pw.cluster_queue]
        queued = core_explain.Queued(
            order=tuple(queues.pending[k].info for k in q.ordered()), strategy=q.strategy
        )
    blocker = cache.blocker(info)
    held = None if blocker is None else (blocker.reason, blocker.message)
    return core_explain.explain(
        cache.snapshot,
        info,
        cq_name,
        policy,
        queued=queued,
        held=held,
        backfill=reservations_mod.Inputs(queues.holders(), state.estimate),
        now=now,
        evictions=state.evictions,
    )


def find(
    cache: cache_mod.Cache, queues: manager.QueueManager, key: names.WorkloadKey
) -> workload.WorkloadInfo | None:
    """The pending or admitted workload ``key``, if the state knows it."""
    pw = queues.pending.get(key)
    if pw is not None:
        return pw.info
    adm = cache.admitted.get(key)
    return None if adm is None else adm.info


def reservations(state: lifecycle.Lifecycle, now: float) -> list[planning.Reservation]:
    """The reservations of every Backfill queue at ``now`` (``berth queues``)."""
    queues = state.queues
    order = {
        name: [queues.pending[k].info for k in q.ordered()] for name, q in queues.queues.items()
    }
    inputs = reservations_mod.Inputs({}, state.estimate)
    return reservations_mod.current(state.cache.snapshot, now, inputs, order)
