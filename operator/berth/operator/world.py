"""Everything the operator knows, fed by watch events.

The kopf handlers and the Workload informer call ``World.apply`` and ``World.remove`` with raw
bodies; nothing here calls the API. Stale events (an older resourceVersion than already seen, or
an object already deleted) are ignored, so a full list can be applied on top of a watch at any
time. Each kind goes to its owner:
- queue objects, namespaces and priority classes to ``queue_objects``;
- jobs of every integrated kind (``integrations``) and Pods to ``job_index``;
- Workloads to the Workload state machine (``workload_machine``), which feeds them into
  ``berth.state`` through the transitions the simulator uses; the job index learns which job
  each belongs to, and the observer (metrics, history) sees every body that changes.

The tasks learn what to look at again through ``mailbox.Mailbox``es. Each task is typed against
its own narrow view of this class (``ports``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from berth.api import (
    bodies,
    conditions,
    configuration,
    names,
    quantity,
    workload_view,
)
from berth.api import node as api_node
from berth.api import workload as api_workload
from berth.api.bodies import Body
from berth.core import cycle, priority, topology
from berth.jobs import registry
from berth.jobs.framework import composed, protocol
from berth.jobs.rules import job_sync, job_updates, managed, unqueued
from berth.operator import job_index, mailbox, placed_pods, queue_objects, workload_machine
from berth.state import fair_usage, lifecycle, priorities

if TYPE_CHECKING:
    from berth.operator import observe

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_EVICT = conditions.EvictionReason
_HELD = frozenset(
    {_EVICT.PODS_READY_TIMEOUT, _EVICT.LOCAL_QUEUE_STOPPED, _EVICT.CLUSTER_QUEUE_STOPPED}
)
"""Requeued=False reasons the lifecycle task turns True once their cause is over."""


def _rv(body: Body) -> int:
    try:
        return int(bodies.resource_version(body) or 0)
    except ValueError:
        return 0


class World:
    """The operator's memory of the cluster, and the state and queues the core is fed from."""

    def __init__(self, config: configuration.Configuration, clock: Callable[[], float]) -> None:
        self.config = config
        self.clock = clock
        self.state = lifecycle.Lifecycle()
        self.state.usage.configure(config.admission_fair_sharing)
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
        self.wake = mailbox.Wakeups()
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
        self.dirty_jobs: mailbox.Mailbox[names.JobKey] = mailbox.Mailbox(
            "jobs to reconcile", self.wake.jobs
        )
        self.priority_rewrites: mailbox.Mailbox[names.WorkloadKey] = mailbox.Mailbox(
            "priorities to rewrite", self.wake.lifecycle
        )
        """Workloads naming a WorkloadPriorityClass whose value changed: their spec.priority is
        rewritten by the leader's lifecycle task."""
        self.machine = workload_machine.WorkloadMachine(
            config,
            clock,
            self.state,
            workload_machine.Jobs(self.index, self.integrations, self.queue_objects.deleting),
            self.wake,
        )
        """Every Workload as last stored, and the state its conditions put it in."""
        self.workloads = self.machine.workloads
        self.infos = self.machine.infos
        self.in_flight = self.machine.in_flight
        self.ready = self.machine.ready
        self.reactivated = self.machine.reactivated
        self.requeue_holds = self.machine.requeue_holds
        self.info_of = self.machine.info_of
        self.settle_workload = self.machine.settle
        self.release = self.machine.release
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
        meta = bodies.meta(body)
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
            if kind == "LocalQueue" and not deleted:
                self._restore_usage(body)
            self._react(self.queue_objects.take(kind, body, deleted=deleted))

    def _restore_usage(self, body: Body) -> None:
        """Seed a LocalQueue's admission fair-sharing usage from its status, at first sight.

        After a restart the usage goes on from what the last leader wrote (Kueue's
        ``initializeAfsIfNeeded``: the clock starts now, the downtime does not decay it).
        """
        status = ((body.get("status") or {}).get("fairSharing") or {}).get(
            "admissionFairSharingStatus"
        ) or {}
        consumed = status.get("consumedResources")
        if not isinstance(consumed, dict) or not self.state.usage.enabled:
            return
        usage = {}
        for resource, value in consumed.items():
            try:
                usage[names.ResourceName(str(resource))] = float(quantity.parse_decimal(value))
            except quantity.QuantityError:
                log.warning("ignoring LocalQueue usage %s=%r: not a quantity", resource, value)
        key = fair_usage.LocalQueueKey(bodies.namespace(body, "default"), bodies.name(body))
        self.state.usage.restore(key, usage, self.clock())

    def _node(self, body: Body, *, deleted: bool) -> None:
        """Keep a node of topology-aware flavors; pending workloads try again when it changed."""
        name = bodies.name(body)
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
        name = bodies.name(body)
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
        namespace = bodies.namespace(job, "default")
        labels = self.cache.namespace_labels(namespace)
        return managed.decide(job, labels, self.config, self.integrations).managed

    def local_queue_names(self, namespace: str) -> list[str]:
        """The LocalQueues of a namespace, by name."""
        return sorted(name for ns, name in self.cache.local_queues if ns == namespace)

    def default_queue(self, job: Body) -> str | None:
        """The LocalQueue a managed job naming none is queued in (``jobs.rules.unqueued`` 1)."""
        if not self.managed(job) or self.integration(job).queue_name(job) is not None:
            return None
        namespace = bodies.namespace(job, "default")
        return unqueued.default_queue(self.local_queue_names(namespace))

    def parent_of(self, job: Body) -> job_sync.Parent | None:
        """The integrated parent a child job's controller reference names (None: no child)."""
        return job_sync.parent(job, self.integrations)

    def job_seen(self, uid: str) -> Body | None:
        """The job of this uid, as last seen (None: not known)."""
        return self.index.job_of(uid)

    # Workloads ----------------------------------------------------------------------------------

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
            self.machine.forget(key)
            return
        self.machine.take(view)
        if self.observer is not None:
            self.observer.workload(old, body, self.infos.get(key))

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
        uid = bodies.uid(job)
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
