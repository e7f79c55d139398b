"""The job-integration interface: ``Integration`` and the values it passes.

After Kueue's ``GenericJob`` (``pkg/controller/jobframework``): what Berth needs to know about
a kind of job — its queue and priority class, its Workload (one pod set per role), the merge
patches that start, stop and restore it, and finished, pods-ready and active pods from its
status — pure and over the job's raw body. Beside it, capabilities only some kinds have, in
the way of Kueue's ``JobWith*`` interfaces: ``Scalable`` (a ``scale`` subresource) and
``Composed`` (a job made of many objects, as a pod group is).

Implemented by one module per kind (``jobs.batchjob``, ``jobs.jobset``, ``jobs.kubeflow``,
``jobs.trainjob``, ``jobs.ray``, ``jobs.pod.integration``); ``jobs.registry`` makes them by
framework name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from berth.api import errors, names, workload
from berth.api.bodies import Body
from berth.core import topology
from berth.jobs.framework import podsets


@dataclasses.dataclass(frozen=True, slots=True)
class PodSetRun:
    """How one pod set runs for an admission: its admitted count and its flavors' placements."""

    name: str
    count: int
    placements: tuple[podsets.FlavorPlacement, ...] = ()
    topology: topology.Assignment | None = None
    """Where its pods go, when its flavor is topology-aware."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodSetOriginal:
    """A pod set as the Workload recorded it: its template before any start, and its count."""

    name: str
    template: Body
    count: int


class Integration(Protocol):
    """One kind of job, as Berth reads, starts and stops it."""

    @property
    def kind(self) -> str:
        """The job's kind (``Job``)."""

    @property
    def api_version(self) -> str:
        """The job's apiVersion (``batch/v1``)."""

    @property
    def plural(self) -> str:
        """The job's resource name in the API (``jobs``)."""

    @property
    def size_field(self) -> str:
        """The field that sets how many pods the job runs at once, for error messages."""

    def count_field(self, job: Body, pod_set: str) -> str:
        """The field that sets how many pods one pod set runs at once, for error messages."""

    def pod_selector(self, job: Body) -> str:
        """A label selector for every pod the job runs, through its children if it has any."""

    def queue_name(self, job: Body) -> str | None:
        """The LocalQueue the job names, if any."""

    def priority_class(self, job: Body) -> str | None:
        """The WorkloadPriorityClass the job names, if any."""

    def pod_count(self, job: Body) -> int:
        """Pods the job runs at once, over all its pod sets."""

    def pod_priority_class(self, job: Body) -> str | None:
        """The PriorityClass its pods name, where Kueue reads it for this kind."""

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The job's Workload (one pod set per role), or the field errors that prevent it."""

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """The merge patch that starts the job with each pod set on its admitted flavors."""

    def stop_patch(self, job: Body) -> Body:
        """The merge patch that stops (suspends) the job."""

    def is_suspended(self, job: Body) -> bool:
        """Tell whether the job is suspended."""

    def finished(self, job: Body) -> tuple[bool, bool]:
        """Tell whether the job finished and, if so, whether it succeeded."""

    def pods_ready(self, job: Body, count: int) -> bool:
        """Tell whether the admitted ``count`` pods are ready or done."""

    def active_pods(self, job: Body) -> int:
        """Pods of the job that run or are still terminating, by its status."""


# Capabilities: what only some kinds do, each a Protocol checked with isinstance (Kueue's
# JobWith* interfaces), so a kind implements what it has and nothing stands in for the rest.


@runtime_checkable
class Parent(Protocol):
    """A kind whose controller makes other jobs (a JobSet its Jobs, a RayJob its RayCluster)."""

    def child_as_made(self, job: Body, child: Body) -> Body | str:
        """The child the job's controller makes under the child's name, or why it makes none.

        ``jobs.rules.child_jobs`` checks a child against it (no larger, same node selector).
        """


@runtime_checkable
class Restorable(Protocol):
    """A kind whose stopped job gets its recorded templates back (every kind but pods)."""

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The merge patch that gives a stopped job its recorded templates back (None if none)."""


@runtime_checkable
class RestoresStatus(Protocol):
    """A kind whose job needs its status patched before its templates may change (a Job)."""

    def before_restore(self, job: Body) -> Body | None:
        """The status merge patch the job needs before its templates may change, if any."""


@runtime_checkable
class HeldAtCount(Protocol):
    """A kind whose running job can be held at its admitted count in place (a batch Job)."""

    def hold_patch(self, job: Body, count: int) -> Body:
        """The merge patch that holds a running job at ``count`` pods."""


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """An object beside the jobs: its kind, its namespace ('' when cluster-scoped), its name."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


@dataclasses.dataclass(frozen=True, slots=True)
class WatchedKind:
    """A kind of object some jobs read, as the API serves it."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool


Watched = Mapping[ObjectKey, Body]
"""The objects the jobs read, as stored, by key (the operator's watch or a scenario keeps it)."""


@runtime_checkable
class Watching(Protocol):
    """A kind whose jobs read other objects, as a TrainJob reads its training runtime.

    It is made with the ``Watched`` mapping its driver keeps current: the operator watches each
    ``WatchedKind`` into it, and looks at a job again when the object it ``reads`` arrives.
    """

    @property
    def watched(self) -> tuple[WatchedKind, ...]:
        """The kinds of object its jobs read."""

    def key_of(self, obj: Body) -> ObjectKey | None:
        """The key of one such object (None when it is none of them)."""

    def reads(self, job: Body) -> ObjectKey | None:
        """The object a job reads (None: it names none it could read)."""

    def object_problems(self, obj: Body) -> list[errors.FieldError]:
        """What keeps one such object from being read, as written (a scenario's, say)."""


@runtime_checkable
class WatchingIntegration(Integration, Watching, Protocol):
    """An ``Integration`` that is ``Watching``: what the drivers keep the watched objects for."""


@runtime_checkable
class Scalable(Protocol):
    """A kind whose CRD has a ``scale`` subresource (an HPA's way in): how it sets the job."""

    def scaled(self, job: Body, replicas: int) -> Body | None:
        """The job once ``/scale`` set its replicas to ``replicas`` (None: this kind has none)."""


@runtime_checkable
class Composed(Protocol):
    """A job made of many member objects, as a pod group is (Kueue's ``ComposableJob``).

    The job is assembled from its members (``framework.composed.Assembly``, for the operator's
    World and the simulator alike); its Workload is owned by every member, each of its patches
    is a patch per member (None deletes one), and its members have webhooks of their own.
    """

    @property
    def member_kind(self) -> str:
        """The kind of the objects the job is made of (``Pod``)."""

    @property
    def member_label(self) -> str:
        """The label Berth puts on every member (the member webhooks select on it)."""

    def is_member(self, obj: Body) -> bool:
        """Tell whether Berth's webhook made an object a member (its label on it)."""

    def group_of(self, obj: Body) -> names.JobKey | None:
        """The job a stored member belongs to (None: it is no member, or names none)."""

    def group_of_new(self, obj: Body) -> names.JobKey | None:
        """The job a new object joins before any webhook saw it (the simulator's documents)."""

    def job_uid(self, key: names.JobKey) -> str:
        """The uid the job goes by (a group has none of its own; its members count for it)."""

    def assemble(self, namespace: str, name: str, members: Iterable[Body]) -> Body:
        """The job as made of these members."""

    def is_assembled(self, body: Body) -> bool:
        """Tell a job assembled from members from one member alone."""

    def whole(self, job: Body) -> bool:
        """Tell whether every member the job needs is there (its Workload is made then)."""

    def members(self, job: Body) -> list[Body]:
        """The job's members."""

    def member_patches(self, patch: Body) -> Mapping[str, Body | None]:
        """A patch of the job as one patch per member, by name (None: delete the member)."""

    def owner_references(self, job: Body) -> list[Body]:
        """The owner references its Workload gets: one per member."""

    def owners(self, job: Body, current: Any) -> list[Body] | None:  # noqa: ANN401 - a JSON value
        """The Workload's owner references once every member owns it (None: already so)."""

    def upkeep_patch(self, job: Body, *, finished_workload: bool) -> Body:
        """Members to delete or to let go (their finalizer off), as a patch per member."""

    def parts_problems(self, job: Body) -> list[errors.FieldError]:
        """Why members that are not whole yet can never make a job (they disagree)."""

    def admit_member(self, obj: Body) -> list[Body]:
        """The JSON patch that makes a new object a member (its webhook's mutation)."""

    def new_member_problems(self, obj: Body) -> list[errors.FieldError]:
        """Why a new member is refused."""

    def member_update_problems(
        self, old: Body, new: Body, *, admitted: bool, may_drop_finalizer: bool
    ) -> list[errors.FieldError]:
        """Why a change of a member is refused (``admitted``: its job is admitted now)."""

    def may_drop_finalizer(self, job: Body, member: Body, *, finished_workload: bool) -> bool:
        """Tell whether Berth's finalizer may come off a member now."""


@runtime_checkable
class ComposedIntegration(Integration, Composed, Protocol):
    """An ``Integration`` that is ``Composed``: what the drivers assemble members for."""


def makes_no_children(job: Body) -> str:
    """Why a child of a job whose controller makes no jobs is none it makes."""
    return f"metadata.ownerReferences: a {job.get('kind')}'s controller makes no jobs"
