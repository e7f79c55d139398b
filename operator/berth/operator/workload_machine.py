"""The Workload state machine: each stored Workload body brought into ``berth.state``.

``World`` hands every Workload event here (``take``, ``forget``). Each body is read through
``api.workload_view`` and fed into ``berth.state`` through the transitions the simulator uses
(``state.lifecycle``), after what its conditions say: a finished or deactivated one is released
and withdrawn; one that holds quota (QuotaReserved and an admission that loads) is recalled as
admitted; any other is queued, in the order and after the backoff its status says (``Requeued``
False for a pods-ready timeout or a stopped queue keeps it out until the lifecycle task turns it
True, as Kueue does). A released admission is forgotten and the inadmissible workloads of its
quota tree are requeued. Workloads whose admission the scheduler loop has assumed but not yet
written are *in flight*: their events are held until the write settles (``settle``). Owned by
``World``; the scheduler loop calls ``settle`` and ``release`` through its port.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Collection, Mapping

from berth.api import bodies, conditions, configuration, kinds, labels, names, workload_view
from berth.api import workload as api_workload
from berth.api.bodies import Body
from berth.api.configuration import RequeueTimestamp
from berth.core import admission, workload
from berth.jobs.framework import protocol
from berth.jobs.rules import job_sync
from berth.operator import job_index, mailbox
from berth.state import lifecycle

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_EVICT = conditions.EvictionReason
_HELD = frozenset(
    {_EVICT.PODS_READY_TIMEOUT, _EVICT.LOCAL_QUEUE_STOPPED, _EVICT.CLUSTER_QUEUE_STOPPED}
)
"""Requeued=False reasons the lifecycle task turns True once their cause is over."""


class WorkloadMachine:
    """Every Workload as last stored, and the state each one's conditions put it in."""

    def __init__(
        self,
        config: configuration.Configuration,
        clock: Callable[[], float],
        state: lifecycle.Lifecycle,
        jobs: Jobs,
        wake: mailbox.Wakeups,
    ) -> None:
        self.config = config
        self.clock = clock
        self.state = state
        self.jobs = jobs
        self.wake = wake
        self.workloads: dict[names.WorkloadKey, workload_view.WorkloadView] = {}
        """The latest stored body of every Workload, read through its view."""
        self.infos: dict[names.WorkloadKey, workload.WorkloadInfo] = {}
        """The core's view of each Workload taken in."""
        self.in_flight: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox("admissions in flight")
        """Admissions the scheduler loop has assumed and not yet written: events that do not
        show them yet are held until the write returns."""
        self.ready: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox("pods ready")
        """Admitted workloads whose pods are all ready (``PodsReady=True``)."""
        self.reactivated: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox(
            "reactivations to write", wake.lifecycle
        )
        """Workloads whose spec.active turned true: their requeueState is cleared by the
        lifecycle task, as the simulator restarts their requeue count."""
        self.requeue_holds: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox(
            "requeues to write when due", wake.lifecycle
        )
        """Pending workloads whose Requeued condition is False for a reason the lifecycle task
        turns True (BackoffFinished after a pods-ready timeout, a stopped queue restarted)."""

    def take(self, view: workload_view.WorkloadView) -> None:
        """A Workload was stored: keep its body, and settle it unless its admission is in flight."""
        key = view.key
        self.workloads[key] = view
        # While an admission write is in flight, the scheduler loop settles it when it returns.
        if key not in self.in_flight:
            self._refresh_info(key, view)
            self.settle(key)

    def forget(self, key: names.WorkloadKey) -> None:
        """A Workload was deleted: release what it holds and take it out of its queue."""
        self.workloads.pop(key, None)
        self.infos.pop(key, None)
        self.ready.discard(key)
        self.requeue_holds.discard(key)
        self.release(key)
        self.state.withdraw(key)
        self.wake.schedule.set()
        self.wake.statuses.set()

    def info_of(self, view: workload_view.WorkloadView) -> workload.WorkloadInfo | None:
        """The core's view of a Workload (None if it does not load)."""
        obj, problems = kinds.try_load(without_status(view.body))
        if not isinstance(obj, api_workload.Workload):
            log.warning("ignoring invalid Workload %s: %s", view.key, problems)
            return None
        ref = obj.spec.priority_class_ref
        job_uid = view.owner_job_uid
        job_key = self.jobs.index.job_of_uid.get(job_uid) if job_uid else None
        job = None if job_key is None else job_key.object_key
        info = workload.from_api(
            obj,
            priority=obj.spec.priority or 0,
            creation_time=view.creation_time,
            uid=view.uid,
            priority_class=None if ref is None else ref.name,
            job=job,
            excluded_prefixes=tuple(self.config.resources.exclude_resource_prefixes),
        )
        evicted_at = self._timeout_eviction_time(view)
        return info if evicted_at is None else info.with_order_time(evicted_at)

    def _timeout_eviction_time(self, view: workload_view.WorkloadView) -> float | None:
        """When a workload was evicted by a pods-ready timeout, if it queues by that time.

        Kueue's ``GetQueueOrderTimestamp``: with ``requeuingStrategy.timestamp: Eviction``, the
        transition time of ``Evicted=True`` (reason PodsReadyTimeout), which stays True until the
        workload is admitted again.
        """
        wfpr = self.config.wait_for_pods_ready
        if wfpr is None or wfpr.requeuing_strategy.timestamp != RequeueTimestamp.EVICTION:
            return None
        evicted = view.condition(_COND.EVICTED)
        if evicted is None or not evicted.status or evicted.reason != _EVICT.PODS_READY_TIMEOUT:
            return None
        return evicted.last_transition

    def _refresh_info(self, key: names.WorkloadKey, view: workload_view.WorkloadView) -> None:
        """Take in a changed spec.priority, priority boost, checkpoint, spec.active or queue.

        Priority, checkpoint and activity through ``state.lifecycle.Lifecycle.change_info``; the
        queue when a pending Job moved to another LocalQueue and the job controller made its
        Workload follow.
        """
        old = self.infos.get(key)
        if old is None:
            return
        if (view.effective_priority, view.checkpointed_at, view.active, view.queue_name) == (
            old.priority,
            old.checkpointed_at,
            old.active,
            old.local_queue,
        ):
            return
        info = self.info_of(view)
        if info is None:
            return
        self.infos[key] = info
        if info.local_queue != old.local_queue:
            self.state.withdraw(key)  # queued again under its new LocalQueue as it settles
        if info.active and not old.active:
            self.reactivated.add(key)
        self.state.change_info(info, self.clock())
        self.wake.lifecycle.set()
        self.wake.schedule.set()

    def settle(self, key: names.WorkloadKey) -> None:
        """Bring state in line with the latest body of a Workload."""
        view = self.workloads.get(key)
        if view is None:
            return
        info = self.infos.get(key)
        if info is None:
            info = self.info_of(view)
            if info is None:
                return
            self.infos[key] = info
        if view.is_true(_COND.PODS_READY):
            self.ready.add(key)
        else:
            self.ready.discard(key)
        self.wake.statuses.set()
        # A finished Workload's admission is never needed: it is not parsed.
        finished = view.is_true(_COND.FINISHED)
        adm = None if finished else self._held_admission(key, view)
        # A deactivated workload that still holds quota keeps it until its Job has stopped and
        # the job controller clears the admission, as after any other eviction.
        if finished or (not info.active and adm is None):
            self.requeue_holds.discard(key)
            done = view.condition(_COND.FINISHED)
            self.release(
                key,
                succeeded=done is not None
                and done.status
                and done.reason == conditions.FinishReason.SUCCEEDED,
            )
            self.state.withdraw(key)
            self.wake.schedule.set()
            return
        if adm is not None:
            self.requeue_holds.discard(key)
            self.state.recall(
                info,
                lambda: (
                    admission.from_status(info, adm),
                    view.transition_time(_COND.QUOTA_RESERVED),
                ),
                evicted=view.is_true(_COND.EVICTED),
            )
            return
        if key in self.state.cache.admitted:
            self.release(key)
        self._queue_pending(key, view, info)

    def _unsupported_owner(self, view: workload_view.WorkloadView) -> bool:
        if labels.UNSUPPORTED_OWNER_LABEL in view.labels:
            return True
        job_uid = view.owner_job_uid
        job = None if job_uid is None else self.jobs.index.job_of(job_uid)
        return job is not None and job_sync.foreign_owner(job, self.jobs.integrations) is not None

    def _queue_pending(
        self, key: names.WorkloadKey, view: workload_view.WorkloadView, info: workload.WorkloadInfo
    ) -> None:
        """Queue a pending workload, in the order and after the backoff its status says."""
        if self._unsupported_owner(view):
            self.state.withdraw(key)  # never a gang of its own (jobs.rules.job_sync.foreign_owner)
            return
        now = self.clock()
        requeued = view.condition(_COND.REQUEUED)
        requeue_at = 0.0
        self.requeue_holds.discard(key)
        if requeued is not None and not requeued.status and requeued.reason in _HELD:
            # Kueue keeps such a workload out of its queue until Requeued turns True
            # (BackoffFinished, *Restarted), which the lifecycle task writes.
            self.requeue_holds.add(key)
            requeue_at = math.inf
        elif key in self.reactivated:
            requeue_at = math.inf  # until the lifecycle task writes Requeued=True (Reactivated)
        order = self._timeout_eviction_time(view)
        want = -1.0 if order is None else order  # -1: by creation time
        if info.queue_order_time != want:
            info = self.infos[key] = info.with_order_time(want)
        pw = self.state.queues.pending.get(key)
        if (
            pw is not None
            and pw.info is info
            and math.isinf(pw.requeue_at) == math.isinf(requeue_at)
        ):
            return
        if pw is not None and not math.isinf(pw.requeue_at) and requeue_at == 0.0:
            requeue_at = pw.requeue_at  # a backoff the scheduler loop set (a failed write)
        self.state.enqueue(info, now, requeue_at=requeue_at)
        self.wake.schedule.set()

    def release(self, key: names.WorkloadKey, *, succeeded: bool = False) -> None:
        """Stop counting an admission; requeue what waited in its quota tree (as the simulator).

        ``succeeded``: it finished successfully, so its runtime teaches the estimates.
        """
        if self.state.release(key, self.clock(), succeeded=succeeded) is not None:
            if self.jobs.deleting_queues:
                # A ClusterQueue being deleted may now hold nothing; no other object's
                # finalizer depends on an admission.
                self.wake.finalizers.set()
            self.wake.schedule.set()
            self.wake.statuses.set()

    def _held_admission(
        self, key: names.WorkloadKey, view: workload_view.WorkloadView
    ) -> api_workload.Admission | None:
        """The admission a Workload holds quota with (QuotaReserved and a loadable admission).

        One that does not load counts as none, with a warning: the Workload waits in its queue
        and is admitted again, which writes a new admission over it.
        """
        if not view.is_true(_COND.QUOTA_RESERVED):
            return None
        adm = view.admission
        if adm is None and view.raw_admission is not None:
            log.warning(
                "Workload %s: its status.admission does not load (%s); counted as not admitted, "
                "it waits in its queue to be admitted again",
                key,
                "; ".join(str(p) for p in view.admission_problems),
            )
        return adm


@dataclasses.dataclass(frozen=True, slots=True)
class Jobs:
    """What the machine reads of the jobs and queue objects ``World`` keeps."""

    index: job_index.JobIndex
    integrations: Mapping[str, protocol.Integration]
    deleting_queues: Collection[tuple[str, str]]
    """Queue objects being deleted, waiting for their finalizer (a release may free one)."""


def without_status(body: Body) -> Body:
    """The body without its status and server-set metadata, as the models load it.

    Of the annotations only those the scheduler reads are kept (``SCHEDULING_ANNOTATIONS``:
    runtime estimates, checkpoint time, priority boost); the rest say nothing to it.
    """
    meta = bodies.meta(body)
    out = {k: v for k, v in meta.items() if k in {"name", "namespace", "uid", "labels"}}
    notes = meta.get("annotations") or {}
    kept = {k: notes[k] for k in api_workload.SCHEDULING_ANNOTATIONS if k in notes}
    if kept:
        out["annotations"] = kept
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": out,
        "spec": body.get("spec") or {},
    }
