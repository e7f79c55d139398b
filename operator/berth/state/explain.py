"""Explain a pending workload from the scheduler's state: gather, then ask ``core.explain``.

Finds the workload's ClusterQueue through its LocalQueue, its queue's pending workloads in queue
order (``QueueManager``'s heap order, inadmissible ones after), and hands them with the live
snapshot to the pure ``core.explain.explain``. The operator calls it on its live state;
``berth explain --scenario`` on the state a simulated run ends in. No I/O, no clock.
"""

from __future__ import annotations

from berth.api import names
from berth.core import cycle, workload
from berth.core import explain as core_explain
from berth.state import cache as cache_mod
from berth.state import queues as queues_mod


def explain(
    cache: cache_mod.Cache,
    queues: queues_mod.QueueManager,
    info: workload.WorkloadInfo,
    policy: cycle.Policy,
) -> core_explain.Explanation:
    """Explain why ``info`` (pending) is not admitted, as the core sees it now."""
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
    return core_explain.explain(cache.snapshot, info, cq_name, policy, queued=queued, held=held)


def find(
    cache: cache_mod.Cache, queues: queues_mod.QueueManager, key: names.WorkloadKey
) -> workload.WorkloadInfo | None:
    """The pending or admitted workload ``key``, if the state knows it."""
    pw = queues.pending.get(key)
    if pw is not None:
        return pw.info
    adm = cache.admitted.get(key)
    return None if adm is None else adm.info
