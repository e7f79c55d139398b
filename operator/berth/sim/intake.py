"""The simulator's document intake: scenario documents become cluster objects and workloads.

``Intake.apply`` and ``Intake.delete`` take one document at its instant, as the API server and
Berth's controllers would see it: Namespaces, queues, flavors and Topologies go to the cache;
PriorityClasses and WorkloadPriorityClasses to the priority registry (a class's new value
rewrites its Workloads' priority, as Kueue's controller does); the objects jobs read (training
runtimes) to the watched store; a Job becomes a Workload through its integration
(``jobs.registry``, the code the operator's job controller runs); the members of a composed job
(a pod group's Pods) are assembled until the job is whole; a Workload document is taken as it
is. The workloads themselves live in the engine, reached through ``Target``; intake only tells
it to create, update or delete one, and answers what the instant's queues must do after
(``Effect``). The pure translations (``from_job``, ``from_workload``, ``job_priority_change``)
raise ``ScenarioError`` naming the document and the field that is wrong. Called by
``engine.Simulator``.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import itertools
from collections.abc import Mapping
from typing import Any, Protocol

from berth.api import bodies, configuration, errors, names, priorityclass
from berth.api import workload as api_workload
from berth.core import priority
from berth.jobs.framework import composed, protocol, workload_body
from berth.jobs.rules import job_sync
from berth.sim import documents
from berth.sim.workloads import Phase, SimWorkload
from berth.state import cache as cache_mod
from berth.state import priorities


def _unknown_class(
    doc: documents.Document, field: str, err: priority.UnknownPriorityClassError
) -> documents.ScenarioError:
    return documents.ScenarioError([(doc.location, errors.FieldError(field, str(err)))])


def from_job(
    doc: documents.Document,
    job: protocol.Integration,
    classes: priority.PriorityClasses,
    uid: str,
) -> workload_body.NewWorkload:
    """The Workload of a Job document (raises ``ScenarioError`` if it cannot be built)."""
    new, problems = workload_body.new_workload(job, doc.raw, classes, uid=uid)
    if new is None:
        raise documents.ScenarioError([(doc.location, p) for p in problems])
    return new


def from_workload(
    doc: documents.Document, obj: api_workload.Workload, classes: priority.PriorityClasses
) -> workload_body.NewWorkload:
    """A Workload document with its priority.

    A Workload's priority is its spec.priority (Kueue resolves classes only for jobs); a
    priorityClassRef without a priority takes the class's value instead of failing.
    """
    ref = obj.spec.priority_class_ref
    try:
        resolved = priority.resolve(
            classes,
            workload_class=ref.name
            if ref is not None and ref.kind == "WorkloadPriorityClass"
            else None,
            pod_class=ref.name if ref is not None and ref.kind == "PriorityClass" else None,
            explicit=obj.spec.priority,
            use_global_default=False,
        )
    except priority.UnknownPriorityClassError as err:
        raise _unknown_class(doc, "spec.priorityClassRef", err) from err
    return workload_body.NewWorkload(obj, resolved)


def job_priority_change(
    doc: documents.Document,
    job: protocol.Integration,
    classes: priority.PriorityClasses,
    current: tuple[str | None, str | None],
) -> priority.Resolved | None:
    """The new priority of a replaced Job, or None when its class label did not change.

    ``current`` is (kind, name) of the class its priority came from. A Job's pod template is
    immutable, but its priority-class label is not.
    """
    wanted = job_sync.class_named_anew(doc.raw, current, job)
    if wanted is None:
        return None
    try:
        return priority.resolve(classes, workload_class=wanted)
    except priority.UnknownPriorityClassError as err:
        raise _unknown_class(doc, "metadata.labels", err) from err


def _uid(seq: int, *parts: str) -> str:
    """A deterministic uid that sorts in creation order.

    Kueue breaks ties between equal priority and time by uid; the simulator's contract keeps
    input order for objects created at the same instant, so its uids sort in that order.
    """
    digest = hashlib.sha1("\x00".join(parts).encode()).hexdigest()  # noqa: S324 - an id, not security
    return f"{seq:08d}-{digest[:23]}"


def _job_key(doc: documents.Document) -> names.JobKey:
    return names.JobKey(doc.kind[1], doc.namespace, doc.name)


class Effect(enum.Flag):
    """What the engine must do once all of an instant's documents are in."""

    NONE = 0
    QUEUES = enum.auto()
    """Queues and their namespaces may have changed: refresh which queues are active."""
    DRAIN = enum.auto()
    """A queue object changed: evict what a stopped queue holds."""


class Target(Protocol):
    """The engine's workloads, as intake reaches them."""

    @property
    def workloads(self) -> Mapping[names.WorkloadKey, SimWorkload]:
        """Every workload made so far, by key."""

    def create_workload(
        self,
        doc: documents.Document,
        new: workload_body.NewWorkload,
        uid: str,
        job: names.WorkloadKey | None,
    ) -> None:
        """Make a workload now (queued, or deactivated if inactive); ``job`` is its owner's."""

    def deactivate_or_reactivate(self, sim: SimWorkload, obj: api_workload.Workload) -> None:
        """Apply a replaced Workload document (only its spec.active is mutable)."""

    def delete_workload(self, key: names.WorkloadKey) -> None:
        """Delete a workload now, releasing its quota if admitted."""

    def set_priority(self, sim: SimWorkload, value: int) -> None:
        """Change a workload's priority where it stands."""


@dataclasses.dataclass(frozen=True, slots=True)
class Stores:
    """The engine's stores intake writes cluster objects to."""

    cache: cache_mod.Cache
    priorities: priorities.Registry


class Intake:
    """Takes documents at their instant; owns the jobs' side of the simulated cluster."""

    def __init__(
        self,
        config: configuration.Configuration,
        integrations: Mapping[str, protocol.Integration],
        watched: dict[protocol.ObjectKey, dict[str, Any]],
        stores: Stores,
        target: Target,
    ) -> None:
        self.config = config
        self.integrations = integrations
        self.watched = watched
        """The objects jobs read, applied so far (a TrainJob reads its pod sets off its runtime)."""
        self.cache = stores.cache
        self.priorities = stores.priorities
        self.target = target
        self.job_to_workload: dict[names.JobKey, names.WorkloadKey] = {}
        self.assemblies: dict[tuple[str, str], composed.Assembly[documents.Document]] = {
            (integ.api_version, integ.member_kind): composed.Assembly(integ, lambda d: d.raw)
            for integ in integrations.values()
            if isinstance(integ, protocol.ComposedIntegration)
        }
        """Each composed job's member documents so far (a pod group's), by member kind."""
        self._created = itertools.count()

    def apply(self, doc: documents.Document) -> Effect:
        """Create or replace the object of ``doc``."""
        obj = doc.obj
        if doc.kind == documents.NAMESPACE:
            labels = bodies.labels_of(doc.raw)
            self.cache.upsert_namespace(doc.name, {str(k): str(v) for k, v in labels.items()})
            return Effect.QUEUES
        if doc.kind in documents.COMPOSED:
            self._apply_member(doc)
        elif doc.kind in documents.JOBS:
            self._apply_job(doc)
        elif doc.kind in documents.WATCHED:
            self._watched(doc, deleted=False)
        elif isinstance(obj, priorityclass.PriorityClass):
            self.priorities.set_pod_class(obj.name, obj.value, global_default=obj.global_default)
        elif isinstance(obj, priorityclass.WorkloadPriorityClass):
            self._apply_workload_class(obj)
        elif isinstance(obj, api_workload.Workload):
            self._apply_workload(doc, obj)
        elif self.cache.upsert(obj):
            return Effect.QUEUES | Effect.DRAIN
        return Effect.NONE

    def delete(self, doc: documents.Document) -> Effect:
        """Delete the object of ``doc``."""
        obj = doc.obj
        if doc.kind == documents.NAMESPACE:
            self.cache.delete_namespace(doc.name)
        elif doc.kind in documents.COMPOSED:
            self._delete_member(doc)
        elif doc.kind in documents.JOBS:
            key = self.job_to_workload.pop(_job_key(doc), None)
            if key is not None:
                self.target.delete_workload(key)
        elif doc.kind in documents.WATCHED:
            self._watched(doc, deleted=True)
        elif isinstance(obj, priorityclass.PriorityClass):
            self.priorities.drop_pod_class(obj.name)
        elif isinstance(obj, priorityclass.WorkloadPriorityClass):
            self.priorities.drop_workload_class(obj.name)
        elif isinstance(obj, api_workload.Workload):
            self.target.delete_workload(obj.key)
        elif obj is not None:
            self.cache.delete(obj.kind, doc.namespace, obj.name)
        return Effect.QUEUES

    def _apply_workload_class(self, obj: priorityclass.WorkloadPriorityClass) -> None:
        if self.priorities.set_workload_class(obj.name, obj.value):
            # Kueue's WorkloadPriorityClass controller rewrites the priority of every Workload
            # that names the class.
            workloads = self.target.workloads
            for key in sorted(workloads):
                sim = workloads[key]
                if (sim.class_kind, sim.info.priority_class) == (obj.kind, obj.name):
                    self.target.set_priority(sim, obj.value)

    def _watched(self, doc: documents.Document, *, deleted: bool) -> None:
        key = documents.WATCHED[doc.kind].key_of(doc.raw)
        if key is not None and deleted:
            self.watched.pop(key, None)
        elif key is not None:
            self.watched[key] = doc.raw

    def _ensure_namespace(self, namespace: str) -> None:
        # Namespaces referenced but never declared exist, with no labels.
        if self.cache.namespace_labels(namespace) is None:
            self.cache.upsert_namespace(namespace, {})

    def _ours(self, integ: protocol.Integration, body: dict[str, Any]) -> bool:
        """Whether Berth manages a job: it names a queue, or unqueued jobs are managed."""
        return integ.queue_name(body) is not None or self.config.manage_jobs_without_queue_name

    def _apply_job(self, doc: documents.Document) -> None:
        job_key = _job_key(doc)
        integ = self.integrations[job_key.kind]
        self._ensure_namespace(doc.namespace)
        if job_key in self.job_to_workload:
            sim = self.target.workloads[self.job_to_workload[job_key]]
            current = (sim.class_kind, sim.info.priority_class)
            resolved = job_priority_change(doc, integ, self.priorities.classes(), current)
            if resolved is not None:
                sim.class_kind = resolved.class_kind
                sim.info = dataclasses.replace(sim.info, priority_class=resolved.class_name)
                self.target.set_priority(sim, resolved.value)
            return
        if not self._ours(integ, doc.raw):
            return
        uid = _uid(next(self._created), job_key.kind, doc.namespace, doc.name)
        new = from_job(doc, integ, self.priorities.classes(), uid)
        self.job_to_workload[job_key] = new.obj.key
        self.target.create_workload(doc, new, uid, job_key.object_key)

    def _member(self, doc: documents.Document) -> names.JobKey | None:
        """The composed job (a pod group) a member document joins (None: not Berth's)."""
        integ = self.assemblies[doc.kind].kind
        key = integ.group_of_new(doc.raw)  # None for a controller's pod (a Job's)
        return key if self._ours(integ, doc.raw) else None

    def _apply_member(self, doc: documents.Document) -> None:
        """A member joins its job; the job's Workload is made once the job is whole.

        The job runs for its longest member's duration, and is ready when its last member is.
        A member that joins later (a replacement) runs with the job.
        """
        key = self._member(doc)
        if key is None:
            return
        self._ensure_namespace(doc.namespace)
        assembly = self.assemblies[doc.kind]
        assembly.join(key, doc.name, doc)
        if key in self.job_to_workload:
            return
        body = assembly.job(key)
        if not assembly.kind.whole(body):
            return
        docs = assembly.members(key)
        durations = [d.duration for d in docs]
        readiness = [d.ready_after for d in docs]
        group = dataclasses.replace(
            doc,
            raw=body,
            duration=None if None in durations else max(d for d in durations if d is not None),
            ready_after=None if None in readiness else max(r for r in readiness if r is not None),
        )
        uid = _uid(next(self._created), key.kind, key.namespace, key.name)
        new = from_job(group, assembly.kind, self.priorities.classes(), uid)
        self.job_to_workload[key] = new.obj.key
        self.target.create_workload(group, new, uid, key.object_key)

    def _delete_member(self, doc: documents.Document) -> None:
        """A member leaves; the job's Workload goes with its last member (its members own it)."""
        key = self._member(doc)
        if key is None or not self.assemblies[doc.kind].members(key):
            return
        if not self.assemblies[doc.kind].leave(key, doc.name):
            return
        workload_key = self.job_to_workload.pop(key, None)
        if workload_key is not None:
            self.target.delete_workload(workload_key)

    def _apply_workload(self, doc: documents.Document, obj: api_workload.Workload) -> None:
        self._ensure_namespace(doc.namespace)
        existing = self.target.workloads.get(obj.key)
        if existing is not None and existing.state != Phase.FINISHED:
            self.target.deactivate_or_reactivate(existing, obj)
            return
        new = from_workload(doc, obj, self.priorities.classes())
        uid = obj.metadata.uid or _uid(next(self._created), "Workload", doc.namespace, doc.name)
        self.target.create_workload(doc, new, uid, None)
