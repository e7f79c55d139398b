"""What the leading operator tells Prometheus and the history store about the Workloads it runs.

``Observer`` compares each Workload body the watch delivers with the one seen before and turns
the difference into the transitions the simulator reports (``berth.sim.observe``): Queued,
Admitted, Evicted, Preempted, Requeued, Finished, Deactivated and Deleted. Reading transitions
off the Workloads, rather than off the code paths that write them, counts each once whoever
wrote it (the scheduler loop, the lifecycle task, the job controller, a person) and counts
nothing twice when a write echoes back through the watch. Each transition becomes a
``history.Record`` for the writer and a ``Metrics.report_*`` call.

A row's time is when the leader saw the change (conditions carry whole seconds only, which
would misorder transitions of one second); waits are computed from the conditions, as Kueue's.
Only the leader observes, and only after it primed its cache: a full list at start-up shows the
cluster's state, not transitions. The scheduler loop adds what bodies cannot say: the preemptor
of each victim (``preempting``) and each cycle's duration (``cycle``). ``state`` sets the gauges
and records the quota table when it changed; the leader calls it on a timer.
Created by ``main``; fed by ``World`` (bodies) and the scheduler loop.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TypedDict

from berth.adapters import history, metrics
from berth.api import conditions, names, workload_view
from berth.api.bodies import Body
from berth.core import admission, cycle
from berth.core import workload as core_workload
from berth.state import cache as cache_mod
from berth.state.queues import manager

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_KIND = history.EventKind


def _conditions(body: Body | None) -> dict[str, Body]:
    if body is None:
        return {}
    return {
        str(c.get("type")): c
        for c in workload_view.WorkloadView(body).raw_conditions
        if c.get("status") == "True"
    }


def _newly_true(old: dict[str, Body], new: dict[str, Body], kind: str) -> Body | None:
    """The condition if it turned True (or turned True again, with a new transition time)."""
    cond = new.get(kind)
    if cond is None:
        return None
    before = old.get(kind)
    if before is not None and before.get("lastTransitionTime") == cond.get("lastTransitionTime"):
        return None
    return cond


def _holds_quota(body: Body | None, conds: dict[str, Body]) -> bool:
    return (
        body is not None
        and _COND.QUOTA_RESERVED in conds
        and workload_view.WorkloadView(body).raw_admission is not None
    )


def _active(body: Body | None) -> bool:
    return body is not None and workload_view.WorkloadView(body).active


@dataclasses.dataclass(frozen=True, slots=True)
class Preemptor:
    """Who preempted a victim, as the scheduler loop decided it."""

    workload: names.WorkloadKey
    cluster_queue: str


class Observer:
    """Turns Workload bodies into history rows and metrics, while the operator leads."""

    def __init__(
        self,
        sink: metrics.Metrics,
        records: history.RecordSink | None,
        *,
        cache: cache_mod.Cache,
        clock: Callable[[], float],
        started_at: float,
    ) -> None:
        self.metrics = sink
        self.records = records
        self.cache = cache
        self.clock = clock
        self.started_at = started_at
        """Epoch seconds the history's ``t`` counts from (the run's start)."""
        self.active = False
        self._preemptors: dict[names.WorkloadKey, Preemptor] = {}
        self._quota_snapshot: object = None

    # Fed by the scheduler loop -----------------------------------------------------------------

    def preempting(self, decision: cycle.Preempt, preemptor_cluster_queue: str) -> None:
        """Remember who preempts a victim, until its body shows it preempted."""
        self._preemptors[decision.victim.info.key] = Preemptor(
            decision.preemptor.key, preemptor_cluster_queue
        )

    def cycle(self, result: cycle.CycleResult, seconds: float) -> None:
        """Count one scheduling cycle."""
        self.metrics.report_cycle(
            admitted=len(result.admitted), seconds=seconds, held=result.held()
        )

    def gauges(self, cache: cache_mod.Cache, queues: manager.QueueManager) -> None:
        """Set the gauges from the current state, while leading (called at each scrape)."""
        if self.active:
            self.metrics.report_state(cache, queues)

    def quotas(self, cache: cache_mod.Cache, now: float) -> None:
        """Record the quota table if queues changed since it was last recorded."""
        snap = cache.snapshot
        if self.records is not None and self.active and snap is not self._quota_snapshot:
            # The cache replaces its snapshot whenever queues, cohorts or flavors change.
            self._quota_snapshot = snap
            self.records.quotas(now - self.started_at, history.quota_rows(cache))

    # Fed by the World ----------------------------------------------------------------------------

    def workload(
        self,
        old: Body | None,
        new: Body | None,
        info: core_workload.WorkloadInfo | None,
    ) -> None:
        """Record what changed between two bodies of one Workload (``new`` None: deleted)."""
        if not self.active or info is None or old is new:
            return
        before, after = _conditions(old), _conditions(new)
        if new is None:
            self._deleted(old, before, info)
            return
        if old is None and not before and _active(new) and not after:
            self._record(_KIND.QUEUED, new, info, t=info.creation_time)
        if old is not None and _active(old) and not _active(new):
            self._record(_KIND.DEACTIVATED, new, info, t=self.clock(), reason="Deactivated")
        if _newly_true(before, after, _COND.ADMITTED) is not None and _holds_quota(new, after):
            self._admitted(new, info, after, _queued_since(old, info))
        evicted = _newly_true(before, after, _COND.EVICTED)
        if evicted is not None:
            self._evicted(old or new, new, info, evicted, after)
        requeued = _newly_true(before, after, _COND.REQUEUED)
        if requeued is not None:
            # Back in its queue: at once after a preemption, after the backoff of a pods-ready
            # timeout, when its stopped queue restarts, or when it is reactivated.
            reason = str(requeued.get("reason") or "")
            self._record(_KIND.REQUEUED, new, info, t=self.clock(), reason=reason)
        done = _newly_true(before, after, _COND.FINISHED)
        if done is not None:
            self._finished(old, new, info, done, held=_holds_quota(old, before))

    def _deleted(
        self, old: Body | None, before: dict[str, Body], info: core_workload.WorkloadInfo
    ) -> None:
        self._preemptors.pop(info.key, None)
        if old is None or _COND.FINISHED in before or not _active(old):
            return
        held = _holds_quota(old, before)
        self._record(
            _KIND.DELETED,
            old,
            info,
            t=self.clock(),
            reason="admitted" if held else "pending",
            about_admission=held,
        )

    def _admitted(
        self, body: Body, info: core_workload.WorkloadInfo, conds: dict[str, Body], since: float
    ) -> None:
        reserved = _time(conds[_COND.QUOTA_RESERVED])
        wait = max(0.0, reserved - since)
        adm = _admission(body, info)
        cq = adm.cluster_queue if adm is not None else ""
        self.metrics.report_admission(**_labels(info, cq), wait_seconds=wait)
        self._record(
            _KIND.ADMITTED,
            body,
            info,
            t=self.clock(),
            reason="Admitted",
            about_admission=True,
            wait_seconds=wait,
        )

    def _evicted(
        self,
        old: Body,
        new: Body,
        info: core_workload.WorkloadInfo,
        evicted: Body,
        after: dict[str, Body],
    ) -> None:
        # The admission being evicted: still in the new body, else in the one before.
        admitted_body = new if workload_view.WorkloadView(new).raw_admission else old
        adm = _admission(admitted_body, info)
        cq = adm.cluster_queue if adm is not None else ""
        reason = str(evicted.get("reason") or "")
        t = self.clock()
        preempted = after.get(_COND.PREEMPTED)
        if preempted is not None and reason == conditions.EvictionReason.PREEMPTED:
            by = self._preemptors.pop(info.key, None)
            self.metrics.report_preemption(
                preempting_cluster_queue=by.cluster_queue if by is not None else cq,
                reason=str(preempted.get("reason") or ""),
            )
            self._record(
                _KIND.PREEMPTED,
                admitted_body,
                info,
                t=t,
                reason=str(preempted.get("reason") or ""),
                message=str(preempted.get("message") or ""),
                by=str(by.workload) if by is not None else None,
                about_admission=True,
            )
        self.metrics.report_eviction(**_labels(info, cq), reason=reason)
        self._record(
            _KIND.EVICTED,
            admitted_body,
            info,
            t=t,
            reason=reason,
            message=str(evicted.get("message") or ""),
            about_admission=True,
        )

    def _finished(
        self,
        old: Body | None,
        new: Body,
        info: core_workload.WorkloadInfo,
        done: Body,
        *,
        held: bool,
    ) -> None:
        admitted_body = new if workload_view.WorkloadView(new).raw_admission else old
        adm = None if admitted_body is None else _admission(admitted_body, info)
        if held or adm is not None:
            self.metrics.report_finish(**_labels(info, adm.cluster_queue if adm else ""))
        self._record(
            _KIND.FINISHED,
            admitted_body or new,
            info,
            t=self.clock(),
            reason=str(done.get("reason") or ""),
            message=str(done.get("message") or ""),
            about_admission=adm is not None,
        )

    def _record(
        self,
        kind: history.EventKind,
        body: Body,
        info: core_workload.WorkloadInfo,
        *,
        t: float,
        reason: str = "",
        message: str = "",
        by: str | None = None,
        about_admission: bool = False,
        wait_seconds: float | None = None,
    ) -> None:
        if self.records is None:
            return
        adm = _admission(body, info) if about_admission else None
        cluster_queue = (
            str(adm.cluster_queue)
            if adm is not None
            else str(self.cache.cluster_queue_for(info) or "")
        )
        self.records.submit(
            history.Record(
                t=t - self.started_at,
                kind=kind,
                workload=str(info.key),
                uid=info.uid,
                job=_job_of(body, info),
                namespace=info.key.namespace,
                local_queue=info.local_queue or "",
                cluster_queue=cluster_queue,
                priority=info.priority,
                priority_class=info.priority_class,
                reason=reason,
                message=message,
                by=by,
                flavors=history.flavors_of(adm) if adm is not None else {},
                resources=history.usage_of(adm) if adm is not None else {},
                wait_seconds=wait_seconds,
            )
        )


class _Labels(TypedDict):
    cluster_queue: str
    namespace: str
    local_queue: str
    priority_class: str | None


def _labels(info: core_workload.WorkloadInfo, cluster_queue: str) -> _Labels:
    """The queue labels every per-workload series carries."""
    return _Labels(
        cluster_queue=cluster_queue,
        namespace=info.key.namespace,
        local_queue=info.local_queue or "",
        priority_class=info.priority_class,
    )


def _time(cond: Body) -> float:
    return workload_view.parse_time(cond.get("lastTransitionTime"))


def _queued_since(before: Body | None, info: core_workload.WorkloadInfo) -> float:
    """Kueue's ``QueuedWaitTime`` start: the Requeued condition's last transition, else creation.

    Read from the body before the admission, which resets that condition.
    """
    requeued = (
        None if before is None else workload_view.WorkloadView(before).condition(_COND.REQUEUED)
    )
    if requeued is not None and requeued.last_transition:
        return requeued.last_transition
    return info.creation_time


def _admission(body: Body, info: core_workload.WorkloadInfo) -> core_workload.Admission | None:
    try:
        adm = workload_view.WorkloadView(body).admission
        return None if adm is None else admission.from_status(info, adm)
    except ValueError as err:
        log.warning("cannot read the admission of %s: %s", info.key, err)
        return None


def _job_of(body: Body, info: core_workload.WorkloadInfo) -> str | None:
    for ref in workload_view.WorkloadView(body).metadata.get("ownerReferences") or []:
        if ref.get("kind") == "Job":
            return str(names.WorkloadKey(info.key.namespace, str(ref.get("name") or "")))
    return None
