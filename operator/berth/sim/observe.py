"""Observers of a simulated run: the metrics feed (``--metrics-out``) and the history recorder.

Each implements ``engine.Observer`` and turns the simulator's events into the same calls the
operator makes: ``Metrics.report_*`` for Prometheus series and ``history.Record`` rows for the
history store. They only watch; the run's events are the same with or without them.
Called by ``berth simulate`` (``--metrics-out``, ``--record``) and by tests.
"""

from __future__ import annotations

from typing import Any

from berth.adapters import history, metrics
from berth.api import names
from berth.core import cycle
from berth.sim import engine, workloads


def _local_queue(sim: workloads.SimWorkload) -> str:
    return sim.info.local_queue or ""


def _cluster_queue(simulator: engine.Simulator, sim: workloads.SimWorkload) -> str:
    """The ClusterQueue a workload counts in: where it was admitted, else where it queues."""
    if sim.admission is not None:
        return sim.admission.cluster_queue
    return simulator.cache.cluster_queue_for(sim.info) or ""


class MetricsObserver:
    """Feeds ``metrics.Metrics`` from a simulated run, as the scheduler loop will."""

    def __init__(self, sink: metrics.Metrics) -> None:
        self.metrics = sink

    def on_event(
        self, simulator: engine.Simulator, line: dict[str, Any], sim: workloads.SimWorkload
    ) -> None:
        """Count admissions, evictions, preemptions and finishes."""
        event = line["event"]
        namespace, lq, pc = sim.info.key.namespace, _local_queue(sim), sim.info.priority_class
        if event == "Admitted":
            self.metrics.report_admission(
                cluster_queue=line["clusterQueue"],
                namespace=namespace,
                local_queue=lq,
                priority_class=pc,
                wait_seconds=sim.waited[-1],
            )
        elif event == "Evicted":
            self.metrics.report_eviction(
                cluster_queue=_cluster_queue(simulator, sim),
                namespace=namespace,
                local_queue=lq,
                priority_class=pc,
                reason=line["reason"],
            )
        elif event == "Finished":
            self.metrics.report_finish(
                cluster_queue=_cluster_queue(simulator, sim),
                namespace=namespace,
                local_queue=lq,
                priority_class=pc,
            )
        elif event == "Preempted":
            preemptor = simulator.workloads[names.WorkloadKey.parse(line["by"])]
            self.metrics.report_preemption(
                preempting_cluster_queue=_cluster_queue(simulator, preemptor),
                reason=line["reason"],
            )

    def on_cycle(
        self, simulator: engine.Simulator, result: cycle.CycleResult, seconds: float
    ) -> None:
        """Count the cycle and its duration."""
        del simulator
        self.metrics.report_cycle(
            admitted=len(result.admitted), seconds=seconds, held=result.held()
        )

    def on_end(self, simulator: engine.Simulator) -> None:
        """Set the gauges from the state the run ends in."""
        self.metrics.report_state(simulator.cache, simulator.queues)


_HISTORY_EVENTS = {
    "Queued": history.EventKind.QUEUED,
    "Admitted": history.EventKind.ADMITTED,
    "Evicted": history.EventKind.EVICTED,
    "Preempted": history.EventKind.PREEMPTED,
    "Requeued": history.EventKind.REQUEUED,
    "Finished": history.EventKind.FINISHED,
    "Deactivated": history.EventKind.DEACTIVATED,
    "Deleted": history.EventKind.DELETED,
}


class HistoryRecorder:
    """Turns a simulated run into history rows (``history.Record``), handed to ``sink``."""

    def __init__(self, sink: history.RecordSink) -> None:
        self.sink = sink
        self._quota_snapshot: object = None

    def on_event(
        self, simulator: engine.Simulator, line: dict[str, Any], sim: workloads.SimWorkload
    ) -> None:
        """Record one workload transition."""
        kind = _HISTORY_EVENTS.get(line["event"])
        if kind is None:
            return
        info = sim.info
        # Only rows about an admission carry its flavors and resources.
        about_admission = kind in (
            history.EventKind.ADMITTED,
            history.EventKind.EVICTED,
            history.EventKind.PREEMPTED,
            history.EventKind.FINISHED,
        ) or (kind == history.EventKind.DELETED and line.get("state") == "admitted")
        admission = sim.admission if about_admission else None
        admitted = kind == history.EventKind.ADMITTED
        self.sink.submit(
            history.Record(
                t=float(line["t"]),
                kind=kind,
                workload=str(info.key),
                uid=info.uid,
                job=str(sim.job) if sim.job is not None else None,
                namespace=info.key.namespace,
                local_queue=_local_queue(sim),
                cluster_queue=_cluster_queue(simulator, sim),
                priority=info.priority,
                priority_class=info.priority_class,
                reason=str(line.get("reason", "")),
                message=str(line.get("message", "")),
                by=line.get("by"),
                flavors=history.flavors_of(admission) if admission is not None else {},
                resources=history.usage_of(admission) if admission is not None else {},
                wait_seconds=sim.waited[-1] if admitted else None,
            )
        )

    def on_cycle(
        self, simulator: engine.Simulator, result: cycle.CycleResult, seconds: float
    ) -> None:
        """Record the quota table when queues changed since the last cycle."""
        del result, seconds
        self._note_quotas(simulator)

    def _note_quotas(self, simulator: engine.Simulator) -> None:
        # The cache replaces its snapshot whenever queues, cohorts or flavors change; reading it
        # here, right after a cycle read it, never triggers a rebuild of its own.
        snap = simulator.cache.snapshot
        if snap is not self._quota_snapshot:
            self._quota_snapshot = snap
            self.sink.quotas(simulator.now, history.quota_rows(simulator.cache))

    def on_end(self, simulator: engine.Simulator) -> None:
        """Record the final quota table if it changed, and close the run at the end's time."""
        self._note_quotas(simulator)
        self.sink.end(simulator.now)
