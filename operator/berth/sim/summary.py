"""The Summary event that ends every simulation: pending, running and finished workloads, queues.

Its shape is fixed by SIMULATE.md (the ``Summary`` line). ``build`` reads the simulator's
workloads, cache and queues at the end of the run. Called by ``engine.Simulator.run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from berth.api import conditions, quantity
from berth.core import fairsharing
from berth.sim import workloads

if TYPE_CHECKING:
    from berth.sim import engine


def build(simulator: engine.Simulator, end: float) -> dict[str, Any]:
    """The summary at time ``end``."""
    phase = workloads.Phase
    pending, running, finished = [], [], []
    for key in sorted(simulator.workloads):
        sim = simulator.workloads[key]
        if sim.state == phase.PENDING:
            pending.append(_pending_entry(simulator, sim))
        elif sim.state == phase.ADMITTED:
            running.append(str(key))
        elif sim.state == phase.FINISHED:
            finished.append(str(key))
    queues: dict[str, Any] = {}
    cache = simulator.cache
    snap = cache.snapshot
    for name in sorted(snap.cluster_queues):
        node = snap.cq_nodes[name]
        usage: dict[str, dict[str, str]] = {}
        for fr in sorted(node.quotas):
            usage.setdefault(fr.flavor, {})[fr.resource] = quantity.format(
                fr.resource, node.usage.get(fr, 0)
            )
        admitted = len(snap.admitted.get(name, {}))
        waiting = sum(
            1
            for pw in simulator.queues.pending.values()
            if cache.cluster_queue_for(pw.info) == name
        )
        queues[name] = {
            "usage": usage,
            "pendingWorkloads": waiting,
            "admittedWorkloads": admitted,
            "weightedShare": fairsharing.share(snap, node).rounded(),
        }
    return {
        "t": end,
        "pending": pending,
        "running": running,
        "finished": finished,
        "clusterQueues": queues,
    }


def _pending_entry(simulator: engine.Simulator, sim: workloads.SimWorkload) -> dict[str, Any]:
    reason, message = simulator.answer(sim)
    if not reason:
        placed = simulator.queues.position(sim.info.key)
        reason = conditions.PendingReason.PENDING_EVALUATION.value
        message = (
            f"waiting for evaluation in ClusterQueue {placed[0]} at position {placed[1]}"
            if placed is not None
            else "waiting for evaluation"
        )
    entry: dict[str, Any] = {"workload": str(sim.info.key)}
    if sim.job is not None:
        entry["job"] = str(sim.job)
    entry["reason"] = reason
    entry["message"] = message
    return entry
