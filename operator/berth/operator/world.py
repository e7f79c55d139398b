"""Everything the operator knows, fed by watch events, and the Workload state machine.

The kopf handlers and the Workload informer call ``World.apply`` and ``World.remove`` with raw
bodies; nothing here calls the API. Stale events (an older resourceVersion than already seen, or
an object already deleted) are ignored, so a full list can be applied on top of a watch at any
time. Each kind goes to its owner:
- queue objects, namespaces and priority classes to ``queue_objects``;
- jobs of every integrated kind (``integrations``) and Pods to ``job_index``;
- Workloads stay here. Each is read through ``api.workload_view`` and fed into ``berth.state``
  through the transitions the simulator uses (``state.lifecycle``). A released admission is
  forgotten and the inadmissible workloads of its quota tree are requeued. A pending workload is
  added to its queue, after its backoff if it has one.

The tasks learn what to look at again through ``mailbox.Mailbox``es. Workloads whose admission
the scheduler loop has assumed but not yet written are *in flight*: events that do not show the
admission yet are held until the write settles. Each task is typed against its own narrow view of
this class (``ports``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from berth.api import (
    conditions,
    configuration,
    kinds,
    labels,
    names,
    workload_view,
)
from berth.api import node as api_node
from berth.api import workload as api_workload
from berth.api.configuration import RequeueTimestamp
from berth.core import admission, cycle, priority, topology, workload
from berth.jobs import registry
from berth.jobs.framework import composed, protocol
from berth.jobs.rules import job_sync, job_updates, managed, unqueued
from berth.operator import job_index, mailbox, placed_pods, queue_objects
from berth.state import lifecycle, priorities

if TYPE_CHECKING:
    from berth.operator import observe

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_EVICT = conditions.EvictionReason
_HELD = frozenset(
    {_EVICT.PODS_READY_TIMEOUT, _EVICT.LOCAL_QUEUE_STOPPED, _EVICT.CLUSTER_QUEUE_STOPPED}
)
"""Requeued=False reasons the lifecycle task turns True once their cause is over."""

Body = dict[str, Any]


def _rv(body: Body) -> int:
    try:
        return int((body.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


@dataclasses.dataclass(slots=True)
class Wakeups:
    """Signals from the handlers to the tasks that act on what changed."""

    schedule: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    statuses: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    jobs: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    lifecycle: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    finalizers: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    ungate: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


class World:
    """The operator's memory of the cluster, and the state and queues the core is fed from."""

    def __init__(self, config: configuration.Configuration, clock: Callable[[], float]) -> None:
        self.config = config
        self.clock = clock
        self.state = lifecycle.Lifecycle()
        self.cache = self.state.cache
        self.queues = self.state.queues
        self.policy = cycle.Policy.from_configuration(config)
        self.watched: dict[protocol.ObjectKey, Body] = {}
        """The objects ``Watching`` kinds read, as last seen (a TrainJob's training runtimes)."""
        self.integrations = registry.for_configuration(config, self.watched)
        """The job integrations the Configuration enables, by kind, bound to it."""
        self.watched_kinds = registry.watched_kinds(self.integrations)
        """Each kind of watched object, with the integration that reads it."""
        self.priorities = priorities.Registry()
        self.wake = Wakeups()
        self.workloads: dict[names.WorkloadKey, workload_view.WorkloadView] = {}
        """The latest stored body of every Workload, read through its view."""
        self.infos: dict[names.WorkloadKey, workload.WorkloadInfo] = {}
        self.assemblies: dict[str, composed.Assembly[Body]] = {
            integ.member_kind: composed.Assembly(integ, lambda body: body)
            for integ in self.integrations.values()
            if isinstance(integ, protocol.ComposedIntegration)
        }
        """The members of each composed job (a pod group) as last seen, by member kind."""
        self.index = job_index.JobIndex([a.kind for a in self.assemblies.values()])
        self.jobs = self.index.jobs
        self.job_of_uid = self.index.job_of_uid
        self.queue_objects = queue_objects.QueueObjects(self.cache, self.priorities)
        self.finalized = self.queue_objects.finalized
        self.take_finalize_due = self.queue_objects.take_finalize_due
        self.finalize_again = self.queue_objects.finalize_due.keep
        self.in_flight: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox("admissions in flight")
        """Admissions the scheduler loop has assumed and not yet written: events that do not
        show them yet are held until the write returns."""
        self.ready: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox("pods ready")
        """Admitted workloads whose pods are all ready (``PodsReady=True``)."""
        self.dirty_jobs: mailbox.Mailbox[names.JobKey] = mailbox.Mailbox(
            "jobs to reconcile", self.wake.jobs
        )
        self.priority_rewrites: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox(
            "priorities to rewrite", self.wake.lifecycle
        )
        """Workloads naming a WorkloadPriorityClass whose value changed: their spec.priority is
        rewritten by the leader's lifecycle task."""
        self.reactivated: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox(
            "reactivations to write", self.wake.lifecycle
        )
        """Workloads whose spec.active turned true: their requeueState is cleared by the
        lifecycle task, as the simulator restarts their requeue count."""
        self.requeue_holds: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox(
            "requeues to write when due", self.wake.lifecycle
        )
        """Pending workloads whose Requeued condition is False for a reason the lifecycle task
        turns True (BackoffFinished after a pods-ready timeout, a stopped queue restarted)."""
        self.placed_pods = placed_pods.PlacedPods(self.cache)
        """Others' usage per node (the room of topology domains) and Berth's placed pods."""
        self.to_pin: mailbox.Mailbox[str] = mailbox.Mailbox("placed pods to pin", self.wake.ungate)
        """Uids of jobs whose placed pods wait at the topology gate (the ungater pins them)."""
        self.observer: observe.Observer | None = None
        """Told of every Workload body that changes (metrics and history, on the leader)."""
        self._seen: dict[tuple[str, str, str], int] = {}
        self._gone: dict[tuple[str, str, str], int] = {}

    # Intake -------------------------------------------------------------------------------------

    def _fresh(self, kind: str, body: Body, *, deleted: bool) -> bool:
        """Tell whether this body is newer than anything seen of the object; remember it."""
        meta = body.get("metadata") or {}
        ident = (kind, meta.get("namespace") or "", meta.get("name") or "")
        rv = _rv(body)
        if rv and (rv < self._seen.get(ident, 0) or rv <= self._gone.get(ident, 0)):
            return False
        if deleted:
            self._gone[ident] = max(rv, self._seen.pop(ident, 0))
        else:
            self._seen[ident] = rv
        return True

    def apply(self, kind: str, body: Body) -> None:
        """Take in an object that was added or changed (or listed)."""
        if not self._fresh(kind, body, deleted=False):
            return
        self._dispatch(kind, body, deleted=False)

    def remove(self, kind: str, body: Body) -> None:
        """Take in an object that was deleted."""
        if not self._fresh(kind, body, deleted=True):
            return
        self._dispatch(kind, body, deleted=True)

    def _dispatch(self, kind: str, body: Body, *, deleted: bool) -> None:
        if kind == "Pod":
            self._pod(body, deleted=deleted)
        elif kind == api_node.KIND:
            self._node(body, deleted=deleted)
        elif kind in self.integrations:
            owner = job_sync.parent(body, self.integrations)
            job = self.index.take_job(
                kind, body, deleted=deleted, parent_uid=None if owner is None else owner.uid
            )
            if job is not None:
                self.mark_job(job)
        elif kind == "Workload":
            self._workload(body, deleted=deleted)
        elif kind in self.watched_kinds:
            self._watched(kind, body, deleted=deleted)
        else:
            self._react(self.queue_objects.take(kind, body, deleted=deleted))

    def _node(self, body: Body, *, deleted: bool) -> None:
        """Keep a node of topology-aware flavors; pending workloads try again when it changed."""
        name = str((body.get("metadata") or {}).get("name") or "")
        if deleted:
            changed = self.cache.delete_node(name)
        else:
            node, problems = api_node.parse(body)
            if node is None:
                log.warning("node %s not read: %s", name, "; ".join(map(str, problems)))
                return
            changed = self.cache.upsert_node(topology.node_of(node))
        if changed and self.cache.topologies:
            self._react(queue_objects.Changed(queues=True))

    def _pod(self, body: Body, *, deleted: bool) -> None:
        """Count a job's pod; a pod group's member also changes its group (the group's job).

        Every pod also counts on its node (others' usage, or a placed pod to pin).
        """
        job = self.index.take_pod(body, deleted=deleted)
        if job is not None:
            self.mark_job(job)
        # Trusted only when it names the job the pod belongs to (its owners lead there): a label
        # on any other pod is someone else's usage, never a place in a placement.
        placed_by, freed = self.placed_pods.take(
            body,
            deleted=deleted,
            known=lambda uid: job is not None and self.index.job_of_uid.get(uid) == job,
        )
        if placed_by is not None and self.placed_pods.waiting(placed_by):
            self.to_pin.add(placed_by)
        if freed:
            self._react(queue_objects.Changed(queues=True))
        assembly = self.assemblies.get("Pod")
        key = None if assembly is None else assembly.kind.group_of(body)
        if assembly is None or key is None:
            return
        name = str((body.get("metadata") or {}).get("name") or "")
        gone = False
        if deleted:
            gone = assembly.leave(key, name)
        else:
            assembly.join(key, name, body)
        job = self.index.take_job(key.kind, assembly.job(key), deleted=gone)
        if job is not None:
            self.mark_job(job)

    def pod_group(self, pod: Body) -> Body | None:
        """The group a member pod belongs to, as assembled now (None: not a member, or none yet)."""
        assembly = self.assemblies.get("Pod")
        key = None if assembly is None else assembly.kind.group_of(pod)
        return None if key is None else self.jobs.get(key)

    def _watched(self, kind: str, body: Body, *, deleted: bool) -> None:
        """Keep an object a kind's jobs read; the jobs that read it are looked at again.

        One without a Workload may now get one (a TrainJob whose runtime arrived); a queued one
        whose pod sets it changed gets its Workload made again (``jobs.rules.job_sync.drift``),
        as Kueue's reconciler does.
        """
        reader = self.watched_kinds[kind]
        key = reader.key_of(body)
        if key is None:
            return
        if deleted:
            self.watched.pop(key, None)
            return
        self.watched[key] = body
        for job_key, job in self.jobs.items():
            if job_key.kind == reader.kind and reader.reads(job) == key:
                self.mark_job(job_key)

    def _react(self, changed: queue_objects.Changed) -> None:
        """Act on what a queue object, namespace or priority class changed."""
        if changed.finalized:
            self.wake.finalizers.set()
        if changed.class_value is not None:
            # Kueue's WorkloadPriorityClass controller rewrites the priority of every Workload
            # that names the class (``state.priorities`` tells of the change, as in the
            # simulator).
            for key, view in self.workloads.items():
                if view.priority_class_ref == ("WorkloadPriorityClass", changed.class_value):
                    self.priority_rewrites.add(key)
        if changed.classes:
            # A Job whose priority class was not known yet got no Workload; try those again.
            for job_key in self.index.without_workload():
                self.mark_job(job_key)
        if changed.queues:
            # As the simulator does once per instant after queue objects change. The lifecycle
            # task is woken too: a workload held by a stopped queue that runs again may queue
            # once its Requeued condition is written.
            self.state.queues_changed(self.clock())
            self.wake.schedule.set()
            self.wake.statuses.set()
            if len(self.requeue_holds):
                self.wake.lifecycle.set()

    def classes(self) -> priority.PriorityClasses:
        """The priority classes known now."""
        return self.priorities.classes()

    # Jobs and pods ------------------------------------------------------------------------------

    def pods_left(self, job_uid: str) -> int:
        """Pods of a job that exist and have not finished (a parent's: its children's)."""
        return self.index.pods_left(job_uid)

    def mark_job(self, key: names.JobKey) -> None:
        """Ask the job controller to look at a job again."""
        self.dirty_jobs.add(key)

    def integration(self, job: Body) -> protocol.Integration:
        """The integration of a job body (a body without ``kind`` is a ``batch/v1`` Job)."""
        return self.integrations.get(str(job.get("kind") or "Job"), self.integrations["Job"])

    def managed(self, job: Body) -> bool:
        """Tell whether Berth manages a job (``jobs.rules.managed``: one predicate, every path)."""
        namespace = str((job.get("metadata") or {}).get("namespace") or "default")
        labels = self.cache.namespace_labels(namespace)
        return managed.decide(job, labels, self.config, self.integrations).managed

    def local_queue_names(self, namespace: str) -> list[str]:
        """The LocalQueues of a namespace, by name."""
        return sorted(name for ns, name in self.cache.local_queues if ns == namespace)

    def default_queue(self, job: Body) -> str | None:
        """The LocalQueue a managed job naming none is queued in (``jobs.rules.unqueued`` 1)."""
        if not self.managed(job) or self.integration(job).queue_name(job) is not None:
            return None
        namespace = str((job.get("metadata") or {}).get("namespace") or "default")
        return unqueued.default_queue(self.local_queue_names(namespace))

    def parent_of(self, job: Body) -> job_sync.Parent | None:
        """The integrated parent a child job's controller reference names (None: no child)."""
        return job_sync.parent(job, self.integrations)

    def job_seen(self, uid: str) -> Body | None:
        """The job of this uid, as last seen (None: not known)."""
        return self.index.job_of(uid)

    # Workloads ----------------------------------------------------------------------------------

    def info_of(self, view: workload_view.WorkloadView) -> workload.WorkloadInfo | None:
        """The core's view of a Workload (None if it does not load)."""
        obj, problems = kinds.try_load(without_status(view.body))
        if not isinstance(obj, api_workload.Workload):
            log.warning("ignoring invalid Workload %s: %s", view.key, problems)
            return None
        ref = obj.spec.priority_class_ref
        job_uid = view.owner_job_uid
        job_key = self.job_of_uid.get(job_uid) if job_uid else None
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

    def _workload(self, body: Body, *, deleted: bool) -> None:
        view = workload_view.WorkloadView(body)
        key = view.key
        job_uid = view.owner_job_uid
        if job_uid is not None:
            job = self.index.take_workload(job_uid, key, deleted=deleted)
            if job is not None:
                self.mark_job(job)
        old_view = self.workloads.get(key)
        old = None if old_view is None else old_view.body
        if deleted:
            if self.observer is not None:
                self.observer.workload(old, None, self.infos.get(key))
            self.workloads.pop(key, None)
            self.infos.pop(key, None)
            self.ready.discard(key)
            self.requeue_holds.discard(key)
            self.release(key)
            self.state.withdraw(key)
            self.wake.schedule.set()
            self.wake.statuses.set()
            return
        self.workloads[key] = view
        # While an admission write is in flight, the scheduler loop settles it when it returns.
        if key not in self.in_flight:
            self._refresh_info(key, view)
            self.settle_workload(key)
        if self.observer is not None:
            self.observer.workload(old, body, self.infos.get(key))

    def _refresh_info(self, key: names.WorkloadKey, view: workload_view.WorkloadView) -> None:
        """Take in a changed spec.priority, spec.active or spec.queueName.

        Priority and activity through ``state.lifecycle.Lifecycle.change_info``; the queue when a
        pending Job moved to another LocalQueue and the job controller made its Workload follow.
        """
        old = self.infos.get(key)
        if old is None:
            return
        if (view.priority, view.active, view.queue_name) == (
            old.priority,
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

    def settle_workload(self, key: names.WorkloadKey) -> None:
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
        if key in self.cache.admitted:
            self.release(key)
        self._queue_pending(key, view, info)

    def _unsupported_owner(self, view: workload_view.WorkloadView) -> bool:
        if labels.UNSUPPORTED_OWNER_LABEL in view.labels:
            return True
        job_uid = view.owner_job_uid
        job = None if job_uid is None else self.index.job_of(job_uid)
        return job is not None and job_sync.foreign_owner(job, self.integrations) is not None

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
        pw = self.queues.pending.get(key)
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
            if self.queue_objects.deleting:
                # A ClusterQueue being deleted may now hold nothing; no other object's
                # finalizer depends on an admission.
                self.wake.finalizers.set()
            self.wake.schedule.set()
            self.wake.statuses.set()

    def workload_for_job(self, job: Body) -> names.WorkloadKey | None:
        """The Workload of a Job, if it exists."""
        return self.index.workload_for_job(job)

    def job_priority_class(self, workload_body: Body) -> str | None:
        """The WorkloadPriorityClass the job owning a Workload names now (None: no job)."""
        uid = workload_view.WorkloadView(workload_body).owner_job_uid
        job = None if uid is None else self.index.job_of(uid)
        return None if job is None else self.integration(job).priority_class(job)

    def workload_of(self, job: Body) -> workload_view.WorkloadView | None:
        """The Workload of a Job as last seen, if it exists."""
        key = self.workload_for_job(job)
        return None if key is None else self.workloads.get(key)

    def workload_state(self, job: Body) -> job_updates.WorkloadState:
        """Where a Job's Workload stands, for the rules on updating the Job."""
        view = self.workload_of(job)
        if view is None:
            return job_updates.WorkloadState()
        adm = view.admission
        counts = (
            None if adm is None else {str(a.name): a.count or 0 for a in adm.pod_set_assignments}
        )
        return job_updates.WorkloadState(
            exists_unfinished=not view.is_true(_COND.FINISHED),
            exists_finished=view.is_true(_COND.FINISHED),
            holds_quota=adm is not None,
            admitted=self.admitted_for_job(job),
            admitted_counts=counts or None,
            runtime_limit=self._planned_bound(view, adm),
        )

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

    def _planned_bound(
        self, view: workload_view.WorkloadView, adm: api_workload.Admission | None
    ) -> float | None:
        """The runtime bound a Backfill queue admitted the Workload with (rule 6 of job updates)."""
        cq = None if adm is None else self.cache.snapshot.cluster_queues.get(adm.cluster_queue)
        if cq is None or cq.backfill is None:
            return None
        info = self.infos.get(view.key)
        return None if info is None else info.runtime_limit

    def admitted_for_job(self, job: Body) -> bool:
        """Tell whether a Job's Workload is admitted and not being evicted.

        A child of an integrated parent has no Workload of its own: its chain's root's counts
        (a TrainJob's, for the Jobs of its JobSet).
        """
        uid = str((job.get("metadata") or {}).get("uid") or "")
        root = self.index.root(uid)
        if root != uid:
            found = self.index.job_of(root)
            job = found if found is not None else job
        view = self.workload_of(job)
        return (
            view is not None
            and view.is_true(_COND.ADMITTED)
            and not view.is_true(_COND.EVICTED)
            and view.admission is not None
        )


def without_status(body: Body) -> Body:
    """The body without its status and server-set metadata, as the models load it.

    Of the annotations only the runtime estimates are kept (the Backfill strategy plans with
    them); the rest say nothing to the scheduler.
    """
    meta = body.get("metadata") or {}
    out = {k: v for k, v in meta.items() if k in {"name", "namespace", "uid", "labels"}}
    notes = meta.get("annotations") or {}
    runtimes = {k: notes[k] for k in api_workload.RUNTIME_ANNOTATIONS if k in notes}
    if runtimes:
        out["annotations"] = runtimes
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": out,
        "spec": body.get("spec") or {},
    }
