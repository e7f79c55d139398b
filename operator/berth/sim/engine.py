"""The simulator: the operator's state and core driven by a scenario on a virtual clock.

The engine plays the cluster's part: it applies scenario documents at their time, turns Jobs
into Workloads exactly as the operator does (``core.batchjob``), runs scheduling cycles until a
cycle changes nothing (as if every API write were instant), finishes workloads after their
duration, makes pods ready after ``ready-after``, evicts on pods-ready timeouts with Kueue's
backoff, drains stopped queues, and records every decision as an event in the format fixed by
SIMULATE.md. Output is deterministic: identical input gives identical events.
Called by ``berth simulate``, tests and benchmarks.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import heapq
import itertools
import time
from collections.abc import Sequence
from typing import Any, Protocol

from berth.api import (
    clusterqueue,
    cohort,
    conditions,
    configuration,
    errors,
    localqueue,
    names,
    priorityclass,
    quantity,
    resourceflavor,
)
from berth.api import (
    workload as api_workload,
)
from berth.core import batchjob, cycle, fairsharing, podsready, priority, workload
from berth.sim import documents, events
from berth.state import cache as cache_mod
from berth.state import queues as queues_mod

_MAX_CYCLES_PER_INSTANT = 100_000
_EVICT = conditions.EvictionReason


@dataclasses.dataclass(slots=True)
class SimWorkload:
    """A workload's life in the simulation."""

    info: workload.WorkloadInfo
    job: names.WorkloadKey | None
    duration: float | None
    ready_after: float | None
    state: str = "pending"
    """One of pending, admitted, finished, deactivated."""
    token: int = 0
    ready: bool = False
    admitted_at: float | None = None
    reason: str = ""
    message: str = ""
    requeue_count: int = 0
    stopped_by: str | None = None
    """``ClusterQueueStopped`` or ``LocalQueueStopped`` while drained by a stop policy."""
    waited: list[float] = dataclasses.field(default_factory=list)
    """Each admission's wait: from its creation, or from its latest requeue (Kueue's
    ``QueuedWaitTime``: the Requeued condition's transition time when it has one)."""
    requeued_at: float | None = None
    class_kind: str | None = None
    """Kind of the priority class its priority came from: WorkloadPriorityClass or PriorityClass."""
    admission: workload.Admission | None = None
    """Its latest admission (kept after it ends, for observers)."""


class Observer(Protocol):
    """Watches a run without changing it: the history recorder and the metrics feed."""

    def on_event(self, simulator: Simulator, line: dict[str, Any], sim: SimWorkload) -> None:
        """Take one event (``line`` in SIMULATE.md's shape, plus Queued and Deleted)."""

    def on_cycle(self, simulator: Simulator, result: cycle.CycleResult, seconds: float) -> None:
        """Take one scheduling cycle's decisions and its wall-clock duration."""

    def on_end(self, simulator: Simulator) -> None:
        """Take the state at the end of the run."""


@dataclasses.dataclass(order=True, slots=True)
class _Timer:
    at: float
    seq: int
    action: str = dataclasses.field(compare=False)
    payload: Any = dataclasses.field(compare=False)


def _uid(seq: int, *parts: str) -> str:
    """A deterministic uid that sorts in creation order.

    Kueue breaks ties between equal priority and time by uid; the simulator's contract keeps
    input order for objects created at the same instant, so its uids sort in that order.
    """
    digest = hashlib.sha1("\x00".join(parts).encode()).hexdigest()  # noqa: S324 - an id, not security
    return f"{seq:08d}-{digest[:23]}"


class Simulator:
    """Runs one scenario; ``run`` returns the events, ending with the summary."""

    def __init__(
        self,
        docs: list[documents.Document],
        *,
        until: float | None = None,
        observers: Sequence[Observer] = (),
    ) -> None:
        self.until = until
        self.observers = tuple(observers)
        self.config = configuration.Configuration()
        for doc in docs:
            if isinstance(doc.obj, configuration.Configuration):
                self.config = doc.obj
        wfpr = self.config.wait_for_pods_ready
        self.policy = cycle.Policy(
            fair_sharing=self.config.fair_sharing is not None,
            fair_sharing_strategies=tuple(
                s.value
                for s in (
                    self.config.fair_sharing.preemption_strategies
                    if self.config.fair_sharing
                    else []
                )
            ),
            block_admission=wfpr is not None and wfpr.block_admission,
        )
        self.cache = cache_mod.Cache()
        self.queues = queues_mod.QueueManager(self.cache)
        self.now = 0.0
        self.out = events.EventLog()
        self.out.listeners.extend(functools.partial(o.on_event, self) for o in self.observers)
        self.workloads: dict[names.WorkloadKey, SimWorkload] = {}
        self.job_to_workload: dict[names.WorkloadKey, names.WorkloadKey] = {}
        self.workload_classes: dict[str, int] = {}
        self.pod_classes: dict[str, int] = {}
        self.global_default: str | None = None
        self.usage_tracker = events.UsageTracker()
        self._timers: list[_Timer] = []
        self._queues_due = False
        self._drain_due = False
        self._seq = itertools.count()
        self._tokens = itertools.count(1)
        self._created = itertools.count()
        for doc in docs:
            if isinstance(doc.obj, configuration.Configuration):
                continue
            self._schedule(doc.at, "apply", doc)
            if doc.delete_at is not None:
                self._schedule(doc.delete_at, "delete", doc)

    # Timeline -----------------------------------------------------------------------------------

    def _schedule(self, at: float, action: str, payload: object) -> None:
        heapq.heappush(self._timers, _Timer(at, next(self._seq), action, payload))

    def run(self) -> list[dict[str, Any]]:
        """Play the whole scenario and return every event, the summary last."""
        while self._timers:
            at = self._timers[0].at
            if self.until is not None and at > self.until:
                break
            self.now = at
            while self._timers and self._timers[0].at == at:
                timer = heapq.heappop(self._timers)
                self._fire(timer)
            # Queue-level consequences of this instant's changes, once, after all of them.
            if self._drain_due:
                self._drain_due = False
                self._drain_stopped()
            if self._queues_due:
                self._queues_due = False
                self._refresh_queues()
            self._settle()
        end = self.until if self.until is not None else self.now
        self.now = end
        self.out.summary(self._summary(end))
        for observer in self.observers:
            observer.on_end(self)
        return self.out.lines

    def _fire(self, timer: _Timer) -> None:
        action, payload = timer.action, timer.payload
        if action == "apply":
            self._apply(payload)
        elif action == "delete":
            self._delete(payload)
        elif action == "finish":
            self._finish(*payload)
        elif action == "ready":
            self._pods_ready(*payload)
        elif action == "ready-timeout":
            self._ready_timeout(*payload)
        elif action == "backoff":
            self._backoff_done(payload)

    # Documents ----------------------------------------------------------------------------------

    def _apply(self, doc: documents.Document) -> None:
        obj = doc.obj
        if doc.kind == documents.NAMESPACE:
            labels = (doc.raw.get("metadata") or {}).get("labels") or {}
            self.cache.upsert_namespace(doc.name, {str(k): str(v) for k, v in labels.items()})
            self._queues_changed()
        elif doc.kind == documents.JOB:
            self._apply_job(doc)
        elif isinstance(obj, priorityclass.PriorityClass):
            self.pod_classes[obj.name] = obj.value
            if obj.global_default:
                self.global_default = obj.name
        elif isinstance(obj, priorityclass.WorkloadPriorityClass):
            self._apply_workload_priority_class(obj)
        elif isinstance(obj, api_workload.Workload):
            self._apply_workload(doc, obj)
        else:
            self._apply_queue_object(doc)

    def _apply_workload_priority_class(self, obj: priorityclass.WorkloadPriorityClass) -> None:
        old_value = self.workload_classes.get(obj.name)
        self.workload_classes[obj.name] = obj.value
        if old_value is None or old_value == obj.value:
            return
        # Kueue's WorkloadPriorityClass controller rewrites the priority of every Workload that
        # names the class.
        for key in sorted(self.workloads):
            sim = self.workloads[key]
            if sim.class_kind == "WorkloadPriorityClass" and sim.info.priority_class == obj.name:
                self._set_priority(sim, obj.value)

    def _apply_queue_object(self, doc: documents.Document) -> None:
        """Apply a ResourceFlavor, Cohort, ClusterQueue or LocalQueue; ignore any other kind."""
        obj = doc.obj
        if isinstance(obj, resourceflavor.ResourceFlavor):
            self.cache.upsert_flavor(obj)
        elif isinstance(obj, cohort.Cohort):
            self.cache.upsert_cohort(obj)
        elif isinstance(obj, clusterqueue.ClusterQueue):
            self.cache.upsert_cluster_queue(obj)
            self._drain_due = True
        elif isinstance(obj, localqueue.LocalQueue):
            self._ensure_namespace(doc.namespace)
            self.cache.upsert_local_queue(obj)
            self._drain_due = True
        else:
            return
        self._queues_changed()

    def _delete(self, doc: documents.Document) -> None:
        obj = doc.obj
        if doc.kind == documents.NAMESPACE:
            self.cache.delete_namespace(doc.name)
        elif doc.kind == documents.JOB:
            key = self.job_to_workload.pop(names.WorkloadKey(doc.namespace, doc.name), None)
            if key is not None:
                self._delete_workload(key)
        elif isinstance(obj, priorityclass.PriorityClass):
            self.pod_classes.pop(obj.name, None)
            if self.global_default == obj.name:
                self.global_default = None
        elif isinstance(obj, priorityclass.WorkloadPriorityClass):
            self.workload_classes.pop(obj.name, None)
        elif isinstance(obj, api_workload.Workload):
            self._delete_workload(obj.key)
        else:
            self._delete_queue_object(doc)
        self._queues_changed()

    def _delete_queue_object(self, doc: documents.Document) -> None:
        """Delete a ResourceFlavor, Cohort, ClusterQueue or LocalQueue; ignore any other kind."""
        obj = doc.obj
        if isinstance(obj, resourceflavor.ResourceFlavor):
            self.cache.delete_flavor(obj.name)
        elif isinstance(obj, cohort.Cohort):
            self.cache.delete_cohort(obj.name)
        elif isinstance(obj, clusterqueue.ClusterQueue):
            self.cache.delete_cluster_queue(obj.name)
        elif isinstance(obj, localqueue.LocalQueue):
            self.cache.delete_local_queue(doc.namespace, obj.name)

    def _ensure_namespace(self, namespace: str) -> None:
        # Namespaces referenced but never declared exist, with no labels.
        if self.cache.namespace_labels(namespace) is None:
            self.cache.upsert_namespace(namespace, {})

    def _classes(self) -> priority.PriorityClasses:
        return priority.PriorityClasses(
            dict(self.workload_classes), dict(self.pod_classes), self.global_default
        )

    def _apply_job(self, doc: documents.Document) -> None:
        job_key = names.WorkloadKey(doc.namespace, doc.name)
        self._ensure_namespace(doc.namespace)
        if job_key in self.job_to_workload:
            self._update_job(doc, self.workloads[self.job_to_workload[job_key]])
            return
        honor = self.config.honor_kueue_labels
        if batchjob.queue_name(doc.raw, honor_kueue=honor) is None and not (
            self.config.manage_jobs_without_queue_name
        ):
            return  # not Berth's job
        uid = _uid(next(self._created), "Job", doc.namespace, doc.name)
        obj, problems = batchjob.to_workload(doc.raw, uid=uid, honor_kueue=honor)
        if obj is None:
            raise documents.ScenarioError([(doc.location, p) for p in problems])
        template = obj.spec.pod_sets[0].template.spec
        try:
            resolved = priority.resolve(
                self._classes(),
                workload_class=batchjob.priority_class(doc.raw, honor_kueue=honor),
                pod_class=template.priority_class_name,
            )
        except priority.UnknownPriorityClassError as err:
            raise documents.ScenarioError(
                [(doc.location, errors.FieldError("metadata.labels", str(err)))]
            ) from err
        self.job_to_workload[job_key] = obj.key
        self._create_workload(doc, obj, resolved, uid, job_key)

    def _update_job(self, doc: documents.Document, sim: SimWorkload) -> None:
        """A replaced Job: its pod template is immutable, but its priority-class label is not."""
        honor = self.config.honor_kueue_labels
        wanted = batchjob.priority_class(doc.raw, honor_kueue=honor)
        if wanted is None or (
            sim.class_kind == "WorkloadPriorityClass" and wanted == sim.info.priority_class
        ):
            return
        try:
            resolved = priority.resolve(self._classes(), workload_class=wanted)
        except priority.UnknownPriorityClassError as err:
            raise documents.ScenarioError(
                [(doc.location, errors.FieldError("metadata.labels", str(err)))]
            ) from err
        sim.class_kind = resolved.class_kind
        sim.info = dataclasses.replace(sim.info, priority_class=resolved.class_name)
        self._set_priority(sim, resolved.value)

    def _set_priority(self, sim: SimWorkload, value: int) -> None:
        """Change a workload's priority: it re-sorts if pending, and counts so in preemption."""
        if sim.info.priority == value:
            return
        sim.info = dataclasses.replace(sim.info, priority=value)
        if sim.state == "pending":
            pw = self.queues.pending.get(sim.info.key)
            requeue_at = pw.requeue_at if pw is not None else 0.0
            self.queues.add(sim.info, now=self.now, requeue_at=requeue_at)
            self._note_blocker(sim)
        elif sim.state == "admitted":
            self.cache.update_info(sim.info)

    def _apply_workload(self, doc: documents.Document, obj: api_workload.Workload) -> None:
        self._ensure_namespace(doc.namespace)
        existing = self.workloads.get(obj.key)
        if existing is not None and existing.state != "finished":
            self._update_workload(existing, obj)
            return
        # A Workload's priority is its spec.priority (Kueue resolves classes only for jobs);
        # a priorityClassRef without a priority takes the class's value instead of failing.
        ref = obj.spec.priority_class_ref
        try:
            resolved = priority.resolve(
                self._classes(),
                workload_class=ref.name
                if ref is not None and ref.kind == "WorkloadPriorityClass"
                else None,
                pod_class=ref.name if ref is not None and ref.kind == "PriorityClass" else None,
                explicit=obj.spec.priority,
                use_global_default=False,
            )
        except priority.UnknownPriorityClassError as err:
            raise documents.ScenarioError(
                [(doc.location, errors.FieldError("spec.priorityClassRef", str(err)))]
            ) from err
        uid = obj.metadata.uid or _uid(next(self._created), "Workload", doc.namespace, doc.name)
        self._create_workload(doc, obj, resolved, uid, None)

    def _create_workload(
        self,
        doc: documents.Document,
        obj: api_workload.Workload,
        resolved: priority.Resolved,
        uid: str,
        job: names.WorkloadKey | None,
    ) -> None:
        info = workload.from_api(
            obj,
            priority=resolved.value,
            creation_time=self.now,
            uid=uid,
            priority_class=resolved.class_name,
            job=job,
            excluded_prefixes=tuple(self.config.resources.exclude_resource_prefixes),
        )
        sim = SimWorkload(info, job, doc.duration, doc.ready_after, class_kind=resolved.class_kind)
        self.workloads[info.key] = sim
        if not info.active:
            sim.state = "deactivated"
            return
        self.out.notify(self.now, "Queued", sim)
        self._enqueue(sim)

    def _update_workload(self, sim: SimWorkload, obj: api_workload.Workload) -> None:
        if obj.spec.active == sim.info.active:
            return
        sim.info = dataclasses.replace(sim.info, active=obj.spec.active)
        if not obj.spec.active:
            if sim.state == "admitted":
                self._evict(sim, _EVICT.DEACTIVATED, "The workload is deactivated", requeue=False)
            self.queues.delete(sim.info.key)
            sim.state = "deactivated"
            self.out.emit(self.now, "Deactivated", sim, reason="Deactivated")
            return
        sim.state = "pending"
        sim.requeue_count = 0
        self._requeued(sim, "Reactivated")
        self._enqueue(sim)

    def _delete_workload(self, key: names.WorkloadKey) -> None:
        sim = self.workloads.get(key)
        if sim is None:
            return
        if sim.state in ("admitted", "pending"):
            self.out.notify(self.now, "Deleted", sim, state=sim.state)
        if sim.state == "admitted":
            self._release(sim)
        self.queues.delete(key)
        sim.state = "deleted"
        sim.token = next(self._tokens)

    # Queueing -----------------------------------------------------------------------------------

    def _enqueue(self, sim: SimWorkload, *, requeue_at: float = 0.0) -> None:
        sim.state = "pending"
        self.queues.add(sim.info, now=self.now, requeue_at=requeue_at)
        self._note_blocker(sim)

    def _note_blocker(self, sim: SimWorkload) -> None:
        if sim.info.key in self.queues.outside:
            blocker = self.cache.blocker(sim.info)
            if blocker is not None:
                self._set_pending(sim, blocker.reason, blocker.message)

    def _set_pending(self, sim: SimWorkload, reason: str, message: str) -> None:
        changed = reason != sim.reason
        sim.reason, sim.message = reason, message
        if changed:
            self.out.emit(self.now, "Pending", sim, reason=reason, message=message)

    def _queues_changed(self) -> None:
        """Note that queues, flavors, cohorts or namespaces changed at this instant."""
        self._queues_due = True

    def _refresh_queues(self) -> None:
        self.queues.refresh(self.now)
        for key in sorted(self.queues.outside):
            self._note_blocker(self.workloads[key])
        self._resume_stopped()
        self.queues.requeue_all_inadmissible(self.now)

    def _drain_stopped(self) -> None:  # runs once per instant, after its documents
        """Evict admitted workloads of queues stopped with HoldAndDrain."""
        messages = {
            _EVICT.LOCAL_QUEUE_STOPPED: "The LocalQueue is stopped",
            _EVICT.CLUSTER_QUEUE_STOPPED: "The ClusterQueue is stopped",
        }
        for key, reason in self.cache.drained():
            sim = self.workloads[key]
            self._evict(sim, reason, messages[reason], requeue=True)
            sim.stopped_by = reason

    def _resume_stopped(self) -> None:
        for key in sorted(self.workloads):
            sim = self.workloads[key]
            if sim.stopped_by is None or sim.state != "pending":
                continue
            if self.cache.blocker(sim.info) is None:
                reason = (
                    "LocalQueueRestarted"
                    if sim.stopped_by == _EVICT.LOCAL_QUEUE_STOPPED
                    else "ClusterQueueRestarted"
                )
                sim.stopped_by = None
                self._requeued(sim, reason)

    # Scheduling ---------------------------------------------------------------------------------

    def _all_ready(self) -> bool:
        return all(self.workloads[k].ready for k in self.cache.admitted)

    def _settle(self) -> None:
        for _ in range(_MAX_CYCLES_PER_INSTANT):
            heads = self.queues.heads()
            if not heads:
                return
            started = time.perf_counter()
            result = cycle.schedule(
                self.cache.snapshot,
                heads,
                self.now,
                self.policy,
                cycle=self.queues.cycle,
                generation=self.cache.generation,
                all_pods_ready=self._all_ready(),
            )
            elapsed = time.perf_counter() - started
            for observer in self.observers:
                observer.on_cycle(self, result, elapsed)
            progressed = self._apply_result(result)
            if not progressed:
                return
        msg = f"scheduling did not settle after {_MAX_CYCLES_PER_INSTANT} cycles at t={self.now}"
        raise RuntimeError(msg)

    def _apply_result(self, result: cycle.CycleResult) -> bool:
        """Apply a cycle's decisions; tell whether another cycle could decide differently."""
        progressed = result.changed
        for p in result.preempted:
            victim = self.workloads[p.victim.info.key]
            self.out.emit(
                self.now,
                "Preempted",
                victim,
                reason=p.reason.value,
                by=str(p.preemptor.key),
                message=p.message,
            )
            self._evict(victim, _EVICT.PREEMPTED, p.message, requeue=True)
            self._requeued(victim, _EVICT.PREEMPTED.value)
        for a in result.admitted:
            self._admit(self.workloads[a.info.key], a)
        for pending in result.pending:
            sim = self.workloads[pending.info.key]
            for same in self.queues.requeue(pending):
                # Parked with the head because it has the same shape: the same answer holds.
                self._set_pending(self.workloads[same.info.key], pending.reason, pending.message)
            self._set_pending(sim, pending.reason, pending.message)
            pw = self.queues.pending.get(sim.info.key)
            if pw is not None and pw.cluster_queue is not None:
                q = self.queues.queues[pw.cluster_queue]
                if sim.info.key in q.inadmissible:
                    progressed = True  # the next workload of the queue becomes its head
                elif pending.progress is not None and any(
                    idx != -1 for tried in pending.progress.tried for idx in tried.values()
                ):
                    progressed = True  # more flavors to try next cycle
        return progressed

    def _admit(self, sim: SimWorkload, decision: cycle.Admit) -> None:
        self.cache.assume(sim.info, decision.admission, self.now)
        self.queues.admitted(sim.info.key)
        self.usage_tracker.change(
            self.now, decision.admission.cluster_queue, decision.admission.usage, +1
        )
        sim.state = "admitted"
        sim.admitted_at = self.now
        sim.admission = decision.admission
        sim.reason = sim.message = ""
        sim.token = next(self._tokens)
        queued = sim.info.creation_time if sim.requeued_at is None else sim.requeued_at
        sim.waited.append(self.now - queued)
        self.out.admitted(self.now, sim, decision.admission)
        if sim.duration is not None:
            self._schedule(self.now + sim.duration, "finish", (sim.info.key, sim.token))
        wfpr = self.config.wait_for_pods_ready
        sim.ready = False
        if sim.ready_after is not None:
            if sim.ready_after == 0:
                sim.ready = True
            else:
                self._schedule(self.now + sim.ready_after, "ready", (sim.info.key, sim.token))
        if wfpr is not None and not sim.ready:
            self._schedule(self.now + wfpr.timeout, "ready-timeout", (sim.info.key, sim.token))

    def _requeued(self, sim: SimWorkload, reason: str) -> None:
        sim.requeued_at = self.now
        self.out.emit(self.now, "Requeued", sim, reason=reason)

    def _release(self, sim: SimWorkload) -> None:
        adm = self.cache.forget(sim.info.key)
        if adm is not None:
            self.usage_tracker.change(self.now, adm.cluster_queue, adm.admission.usage, -1)
            self.queues.requeue_inadmissible(self.cache.root_of(adm.cluster_queue), self.now)

    def _evict(
        self, sim: SimWorkload, reason: str, message: str, *, requeue: bool, requeue_at: float = 0.0
    ) -> None:
        self.out.emit(self.now, "Evicted", sim, reason=str(reason), message=message)
        self._release(sim)
        sim.token = next(self._tokens)
        sim.ready = False
        sim.reason = ""
        if requeue:
            self._enqueue(sim, requeue_at=requeue_at)

    def _finish(self, key: names.WorkloadKey, token: int) -> None:
        sim = self.workloads.get(key)
        if sim is None or sim.token != token or sim.state != "admitted":
            return
        self._release(sim)
        sim.state = "finished"
        self.out.emit(self.now, "Finished", sim, reason=conditions.FinishReason.SUCCEEDED.value)

    def _pods_ready(self, key: names.WorkloadKey, token: int) -> None:
        sim = self.workloads.get(key)
        if sim is not None and sim.token == token and sim.state == "admitted":
            sim.ready = True

    def _ready_timeout(self, key: names.WorkloadKey, token: int) -> None:
        sim = self.workloads.get(key)
        wfpr = self.config.wait_for_pods_ready
        if (
            sim is None
            or sim.token != token
            or sim.state != "admitted"
            or sim.ready
            or wfpr is None
        ):
            return
        decision = podsready.after_timeout(wfpr.requeuing_strategy, sim.requeue_count, self.now)
        if isinstance(decision, podsready.Deactivate):
            self._evict(sim, _EVICT.DEACTIVATED, decision.message, requeue=False)
            self.queues.delete(key)
            sim.state = "deactivated"
            sim.info = dataclasses.replace(sim.info, active=False)
            self.out.emit(self.now, "Deactivated", sim, reason="RequeuingLimitExceeded")
            return
        sim.requeue_count = decision.count
        backoff = decision.backoff
        if decision.order_time is not None:
            sim.info = sim.info.with_order_time(decision.order_time)
        requeue_at = decision.requeue_at
        self._evict(
            sim,
            _EVICT.PODS_READY_TIMEOUT,
            f"Exceeded the PodsReady timeout {sim.info.key}",
            requeue=True,
            requeue_at=requeue_at,
        )
        if backoff > 0:
            self._schedule(requeue_at, "backoff", key)
        else:
            self._requeued(sim, "BackoffFinished")

    def _backoff_done(self, key: names.WorkloadKey) -> None:
        sim = self.workloads.get(key)
        if sim is None or sim.state != "pending":
            return
        self._requeued(sim, "BackoffFinished")
        pw = self.queues.pending.get(key)
        if pw is not None:
            pw.requeue_at = 0.0
            self.queues.add(pw.info, now=self.now)
            self._note_blocker(sim)

    # Summary ------------------------------------------------------------------------------------

    def _summary(self, end: float) -> dict[str, Any]:
        pending, running, finished = [], [], []
        for key in sorted(self.workloads):
            sim = self.workloads[key]
            if sim.state == "pending":
                pending.append(self._pending_entry(sim))
            elif sim.state == "admitted":
                running.append(str(key))
            elif sim.state == "finished":
                finished.append(str(key))
        queues: dict[str, Any] = {}
        snap = self.cache.snapshot
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
                for pw in self.queues.pending.values()
                if self.cache.cluster_queue_for(pw.info) == name
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

    def _pending_entry(self, sim: SimWorkload) -> dict[str, Any]:
        reason, message = sim.reason, sim.message
        if not reason:
            placed = self.queues.position(sim.info.key)
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


def simulate(
    docs: list[documents.Document],
    *,
    until: float | None = None,
    observers: Sequence[Observer] = (),
) -> list[dict[str, Any]]:
    """Run a scenario and return its events."""
    return Simulator(docs, until=until, observers=observers).run()
