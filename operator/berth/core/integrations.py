"""The job-integration seam: what Berth needs to know about a kind of job, after Kueue's GenericJob.

Kueue's ``pkg/controller/jobframework`` (``GenericJob``) asks each kind for its queue name, its pod
sets, how to run it on an admission and how to stop it, and whether it finished. ``Integration``
is that interface here, pure and over the job's raw body: the queue and priority class it names,
the full Workload body (one pod set per role), the merge patch that starts it on its admitted
flavors and counts, the patch that suspends it, the patch that restores its templates once
stopped, and finished, pods-ready and active pods from its status. The configuration is bound
when the integration is made (``for_configuration``), so no flag is threaded through calls.

``BatchJob`` (``batch/v1`` Job, built on ``core.batchjob``) is the first implementation. The
simulator (``sim.intake``), the operator's job controller and webhooks, and the pure rules of
``core.job_sync``, ``core.job_updates`` and ``core.managed`` all reach a job through it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from berth.api import configuration, errors, names, resourceflavor, workload
from berth.core import batchjob, priority

Body = dict[str, Any]
UNSUPPORTED_OWNER_LABEL = "berth.dev/unsupported-owner"
"""On the Workload of a child job whose controller is a kind Berth does not integrate."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodSetRun:
    """How one pod set runs for an admission: its admitted count and its flavors' placements."""

    name: str
    count: int
    placements: tuple[batchjob.FlavorPlacement, ...] = ()


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

    def queue_name(self, job: Body) -> str | None:
        """The LocalQueue the job names, if any."""

    def priority_class(self, job: Body) -> str | None:
        """The WorkloadPriorityClass the job names, if any."""

    def pod_count(self, job: Body) -> int:
        """Pods the job runs at once, over all its pod sets."""

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

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The merge patch that gives a stopped job its recorded templates back (None if none)."""

    def is_suspended(self, job: Body) -> bool:
        """Tell whether the job is suspended."""

    def finished(self, job: Body) -> tuple[bool, bool]:
        """Tell whether the job finished and, if so, whether it succeeded."""

    def pods_ready(self, job: Body, count: int) -> bool:
        """Tell whether the admitted ``count`` pods are ready or done."""

    def active_pods(self, job: Body) -> int:
        """Pods of the job that run or are still terminating, by its status."""


@dataclasses.dataclass(frozen=True, slots=True)
class BatchJob:
    """The ``batch/v1`` Job integration: one pod set ``main`` (``core.batchjob``)."""

    honor_kueue_labels: bool = False
    """Also read Kueue's ``kueue.x-k8s.io/*`` labels and annotations (migration)."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return "Job"

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return "batch/v1"

    def queue_name(self, job: Body) -> str | None:
        """The LocalQueue the Job names, if any."""
        return batchjob.queue_name(job, honor_kueue=self.honor_kueue_labels)

    def priority_class(self, job: Body) -> str | None:
        """The WorkloadPriorityClass the Job names, if any."""
        return batchjob.priority_class(job, honor_kueue=self.honor_kueue_labels)

    def pod_count(self, job: Body) -> int:
        """``parallelism`` bounded by ``completions``."""
        return batchjob.pod_count(job)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The Job's Workload, or the field errors that prevent it."""
        return batchjob.to_workload(job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Unsuspend with the flavors' node labels and tolerations, at the admitted count."""
        original = originals[0] if originals else PodSetOriginal("main", {}, self.pod_count(job))
        run = next((r for r in runs if r.name == original.name), None)
        if run is None:
            run = runs[0] if runs else PodSetRun(original.name, self.pod_count(job))
        return batchjob.start_patch(
            job,
            original.template,
            pod_set=original.name,
            count=run.count,
            flavors=list(run.placements),
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every Job
        """Suspend the Job (its controller then deletes the pods)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded template and parallelism back."""
        if not originals:
            return None
        return batchjob.restore_patch(job, originals[0].template, count=originals[0].count)

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return batchjob.is_suspended(job)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Complete`` or ``Failed`` condition."""
        return batchjob.finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:
        """Ready + succeeded >= count."""
        return batchjob.pods_ready(job, count)

    def active_pods(self, job: Body) -> int:
        """Active + terminating."""
        return batchjob.active_pods(job)


@dataclasses.dataclass(frozen=True, slots=True)
class NewWorkload:
    """A job's Workload as it will be created, with its resolved priority."""

    obj: workload.Workload
    resolved: priority.Resolved

    def body(self, job: Body, integration: Integration, foreign_owner: str | None = None) -> Body:
        """The full body to create: owned by the job, with its priority and class.

        ``foreign_owner`` (``Kind/name``) marks the Workload of a child job controlled by a kind
        Berth does not integrate: it is never queued (``core.job_sync``), and the Workload
        webhook keeps the label.
        """
        meta = job.get("metadata") or {}
        body = self.obj.to_yaml_dict()
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": integration.api_version,
                "kind": integration.kind,
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        body["spec"]["priority"] = self.resolved.value
        if self.resolved.class_name is not None:
            workload_class = self.resolved.class_kind == "WorkloadPriorityClass"
            body["spec"]["priorityClassRef"] = {
                "group": "berth.dev" if workload_class else "scheduling.k8s.io",
                "kind": self.resolved.class_kind,
                "name": self.resolved.class_name,
            }
        if foreign_owner is not None:
            labels = body["metadata"].setdefault("labels", {})
            labels[UNSUPPORTED_OWNER_LABEL] = foreign_owner.split("/")[0]
        return body


def new_workload(
    integration: Integration, job: Body, classes: priority.PriorityClasses, *, uid: str
) -> tuple[NewWorkload | None, list[errors.FieldError]]:
    """A job's Workload and priority, or the field errors that keep it from being made.

    The priority comes from the WorkloadPriorityClass the job names, else the first pod set's
    ``priorityClassName``, else the cluster's default PriorityClass (``core.priority``); a class
    that does not exist is an error on the job's labels.
    """
    obj, problems = integration.to_workload(job, uid=uid)
    if obj is None:
        return None, problems
    try:
        resolved = priority.resolve(
            classes,
            workload_class=integration.priority_class(job),
            pod_class=obj.spec.pod_sets[0].template.spec.priority_class_name,
        )
    except priority.UnknownPriorityClassError as err:
        return None, [errors.FieldError("metadata.labels", str(err))]
    return NewWorkload(obj, resolved), []


def originals(pod_sets: list[Body]) -> list[PodSetOriginal]:
    """The pod sets as a Workload recorded them (``spec.podSets``: templates before any start)."""
    return [
        PodSetOriginal(
            str(ps.get("name", "main")), ps.get("template") or {}, int(ps.get("count", 1))
        )
        for ps in pod_sets
    ]


def runs(
    admission: workload.Admission | None,
    flavors: Mapping[names.FlavorName, resourceflavor.ResourceFlavor],
    default_count: int,
) -> list[PodSetRun]:
    """How each admitted pod set runs: its count and its flavors' node labels and tolerations.

    A pod set admitted without a count runs ``default_count`` pods; a flavor deleted since the
    admission adds nothing.
    """
    out = []
    for psa in [] if admission is None else admission.pod_set_assignments:
        placements = tuple(
            batchjob.FlavorPlacement(
                dict(rf.spec.node_labels), tuple(t.to_yaml_dict() for t in rf.spec.tolerations)
            )
            for rf in (flavors.get(name) for name in sorted(set(psa.flavors.values())))
            if rf is not None
        )
        out.append(PodSetRun(psa.name, psa.count or default_count, placements))
    return out


def for_configuration(config: configuration.Configuration) -> dict[str, Integration]:
    """The integrations the Configuration enables, by job kind, bound to its settings."""
    batch = BatchJob(honor_kueue_labels=config.honor_kueue_labels)
    return {batch.kind: batch}
