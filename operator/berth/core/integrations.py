"""The job kinds Berth integrates, made by Kueue's framework names, and what they share.

``Integration`` (``core.job_kind``, after Kueue's ``GenericJob``) is read, started and stopped
the same way for every kind. Here: ``BatchJob`` (``batch/v1`` Job, on ``core.batchjob``),
``JobSetJob`` (on ``core.jobset``), ``KubeflowJob`` (the training-operator v1 kinds, on
``core.kubeflow``) and ``TrainJobJob`` (Trainer v2, on ``core.trainjob``); ``core.ray.RayKind``
is RayJob and RayCluster. ``make`` builds one by its
framework name, ``for_configuration`` those ``integrations.frameworks`` enables, bound to the
Configuration so no flag is threaded through calls. Shared by every kind: the Workload body to
create (``new_workload``), the pod sets as recorded (``originals``) and how each admitted pod
set runs (``runs``).

The simulator (``sim.intake``), the operator's job controller and webhooks, and the pure rules
of ``core.job_sync``, ``core.job_updates`` and ``core.managed`` all reach a job through it.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from berth.api import configuration, errors, names, resourceflavor, workload
from berth.api import topology as api_topology
from berth.core import (
    batchjob,
    job_kind,
    jobset,
    kubeflow,
    podgroup,
    priority,
    ray,
    topology,
    trainjob,
)
from berth.core.job_kind import Body, Integration, PodSetOriginal, PodSetRun

UNSUPPORTED_OWNER_LABEL = "berth.dev/unsupported-owner"
"""On the Workload of a child job whose controller is a kind Berth does not integrate."""


@dataclasses.dataclass(frozen=True, slots=True)
class BatchJob(job_kind.Labelled):
    """The ``batch/v1`` Job integration: one pod set ``main`` (``core.batchjob``)."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return "Job"

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return "batch/v1"

    @property
    def plural(self) -> str:
        """``jobs``."""
        return "jobs"

    @property
    def size_field(self) -> str:
        """``spec.parallelism``."""
        return "spec.parallelism"

    def count_field(self, job: Body, pod_set: str) -> str:  # noqa: ARG002 - one pod set
        """``spec.parallelism``."""
        return "spec.parallelism"

    def pod_selector(self, job: Body) -> str:
        """The Job controller's label on its pods: the Job's uid."""
        return f"batch.kubernetes.io/controller-uid={(job.get('metadata') or {}).get('uid')}"

    def child_as_made(self, job: Body, child: Body) -> Body | str:  # noqa: ARG002 - none is made
        """None: a Job's controller makes pods, not jobs."""
        return job_kind.makes_no_children(job)

    def before_restore(self, job: Body) -> Body | None:
        """A Job that started keeps an immutable template until its ``startTime`` is cleared."""
        if (job.get("status") or {}).get("startTime"):
            return {"status": {"startTime": None}}
        return None

    def pod_count(self, job: Body) -> int:
        """``parallelism`` bounded by ``completions``."""
        return batchjob.pod_count(job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The pod template's ``priorityClassName``."""
        template = (job.get("spec") or {}).get("template") or {}
        return (template.get("spec") or {}).get("priorityClassName") or None

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

    def hold_patch(self, job: Body, count: int) -> Body | None:  # noqa: ARG002 - any Job is held alike
        """``spec.parallelism`` back to the admitted count."""
        return {"spec": {"parallelism": count}}

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
class JobSetJob(job_kind.Labelled):
    """The JobSet integration: one pod set per replicated job (``core.jobset``)."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return jobset.KIND

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return jobset.API_VERSION

    @property
    def plural(self) -> str:
        """``jobsets``."""
        return jobset.PLURAL

    @property
    def size_field(self) -> str:
        """The replicated jobs (their replicas and each child Job's parallelism)."""
        return "spec.replicatedJobs"

    def count_field(self, job: Body, pod_set: str) -> str:
        """The replicated job of that name (its replicas and its Job's parallelism)."""
        return jobset.count_field(job, pod_set)

    def pod_selector(self, job: Body) -> str:
        """The JobSet controller's label on every child Job and pod: the JobSet's name."""
        return f"{jobset.NAME_LABEL}={(job.get('metadata') or {}).get('name')}"

    def child_as_made(self, job: Body, child: Body) -> Body | str:
        """The child Job the JobSet controller makes under the child's name, or why none."""
        return jobset.child_as_made(job, child)

    def before_restore(self, job: Body) -> Body | None:  # noqa: ARG002 - JobSet's webhook allows it while suspended
        """Nothing: a suspended JobSet's templates may change."""
        return None

    def pod_count(self, job: Body) -> int:
        """Pods over all replicated jobs."""
        return jobset.pod_count(job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first replicated job's pod template that names a ``priorityClassName``."""
        return jobset.priority_class(job)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The JobSet's Workload, or the field errors that prevent it."""
        return jobset.to_workload(job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Unsuspend, each replicated job's template on its pod set's flavors (whole only)."""
        return jobset.start_patch(
            job,
            {o.name: o.template for o in originals},
            {r.name: list(r.placements) for r in runs},
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every JobSet
        """Suspend the JobSet (its controller suspends the child Jobs)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded templates back."""
        if not originals:
            return None
        return jobset.restore_patch(job, {o.name: o.template for o in originals})

    def hold_patch(self, job: Body, count: int) -> Body | None:  # noqa: ARG002 - a JobSet cannot grow
        """None: JobSet's webhook keeps replicated jobs (and so the pod count) immutable."""
        return None

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return bool((job.get("spec") or {}).get("suspend"))

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Completed`` or ``Failed`` condition."""
        return jobset.finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - child Jobs report readiness
        """Every child Job ready or succeeded."""
        return jobset.pods_ready(job)

    def active_pods(self, job: Body) -> int:
        """Child Jobs with active pods (the JobSet's status counts Jobs, not pods)."""
        return jobset.active_jobs(job)


@dataclasses.dataclass(frozen=True, slots=True)
class KubeflowJob(job_kind.Labelled):
    """A training-operator v1 kind (PyTorchJob, TFJob, ...): a pod set per replica type."""

    spec: kubeflow.Kind = kubeflow.PYTORCH
    """Which kind, with its replica specs field and replica order."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return self.spec.kind

    @property
    def api_version(self) -> str:
        """``kubeflow.org/v1``."""
        return kubeflow.API_VERSION

    @property
    def plural(self) -> str:
        """``pytorchjobs`` and so on."""
        return self.spec.plural

    @property
    def size_field(self) -> str:
        """The replica specs (each type's ``replicas``)."""
        return f"spec.{self.spec.replica_specs}"

    def count_field(self, job: Body, pod_set: str) -> str:
        """That replica type's ``replicas``."""
        return kubeflow.count_field(self.spec, job, pod_set)

    def scaled(self, job: Body, replicas: int) -> Body | None:
        """The job with its scale role's replicas set (None: this kind's CRD has no scale)."""
        return kubeflow.scaled(self.spec, job, replicas)

    def pod_selector(self, job: Body) -> str:
        """The training-operator's job-name and operator-name labels."""
        return kubeflow.pod_selector(self.spec, job)

    def child_as_made(self, job: Body, child: Body) -> Body | str:  # noqa: ARG002 - none is made
        """None: the training-operator makes pods and Services, not jobs."""
        return job_kind.makes_no_children(job)

    def before_restore(self, job: Body) -> Body | None:  # noqa: ARG002 - a suspended job's templates may change
        """Nothing: the operator makes pods from the templates only while it runs."""
        return None

    def pod_count(self, job: Body) -> int:
        """Replicas over every replica type."""
        return kubeflow.pod_count(self.spec, job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The run policy's ``schedulingPolicy.priorityClass``, else the first template's."""
        return kubeflow.priority_class(self.spec, job)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The training job's Workload, or the field errors that prevent it."""
        return kubeflow.to_workload(self.spec, job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Resume, each replica's template on its pod set's flavors (whole only)."""
        return kubeflow.start_patch(
            self.spec,
            job,
            {o.name: o.template for o in originals},
            {r.name: list(r.placements) for r in runs},
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every job
        """``spec.runPolicy.suspend`` (the training-operator deletes the pods)."""
        return kubeflow.suspend_patch(suspended=True)

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded templates back."""
        return kubeflow.restore_patch(self.spec, job, {o.name: o.template for o in originals})

    def hold_patch(self, job: Body, count: int) -> Body | None:  # noqa: ARG002 - see below
        """None: a raise of replicas is refused by the webhook; it is not undone here."""
        return None

    def is_suspended(self, job: Body) -> bool:
        """``spec.runPolicy.suspend``."""
        return kubeflow.is_suspended(job)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Succeeded`` or ``Failed`` condition."""
        return kubeflow.finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - the operator reports it
        """``Running`` is True."""
        return kubeflow.pods_ready(job)

    def active_pods(self, job: Body) -> int:
        """Active pods over every replica type."""
        return kubeflow.active_pods(job)


@dataclasses.dataclass(frozen=True, slots=True)
class TrainJobJob(job_kind.Labelled):
    """The Kubeflow Trainer v2 TrainJob: its runtime's JobSet, a pod set per replicated job.

    ``core.trainjob`` reads the runtime the TrainJob names from ``runtimes``.
    """

    runtimes: trainjob.Runtimes = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}), compare=False
    )
    """The training runtimes known, by key (the operator's watch or the simulator's documents)."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return trainjob.KIND

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return trainjob.API_VERSION

    @property
    def plural(self) -> str:
        """``trainjobs``."""
        return trainjob.PLURAL

    @property
    def size_field(self) -> str:
        """``spec.trainer.numNodes`` (and the runtime's replicated jobs)."""
        return "spec.trainer.numNodes"

    def count_field(self, job: Body, pod_set: str) -> str:  # noqa: ARG002 - one field sizes all
        """``spec.trainer.numNodes`` (the runtime's replicated jobs size the rest)."""
        return "spec.trainer.numNodes"

    def pod_selector(self, job: Body) -> str:
        """The JobSet controller's label on every pod: the JobSet is named as the TrainJob."""
        return f"{jobset.NAME_LABEL}={(job.get('metadata') or {}).get('name')}"

    def before_restore(self, job: Body) -> Body | None:  # noqa: ARG002 - a suspended TrainJob's patches may change
        """Nothing: the Trainer's webhook lets runtime patches change while suspended."""
        return None

    def pod_count(self, job: Body) -> int:
        """Pods over every replicated job of the JobSet the Trainer makes."""
        return trainjob.pod_count(job, self.runtimes)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first replicated job's pod template that names a ``priorityClassName``."""
        return trainjob.priority_class(job, self.runtimes)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The TrainJob's Workload, or the field errors that prevent it."""
        return trainjob.to_workload(
            job, self.runtimes, uid=uid, honor_kueue=self.honor_kueue_labels
        )

    def child_as_made(self, job: Body, child: Body) -> Body | str:
        """The JobSet the Trainer makes under the child's name, or why none is."""
        return trainjob.child_as_made(job, self.runtimes, child)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Berth's runtime patch (each pod set's flavors), unsuspended; whole only."""
        return trainjob.start_patch(
            job,
            {o.name: o.template for o in originals},
            {r.name: list(r.placements) for r in runs},
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every TrainJob
        """``spec.suspend`` (the Trainer suspends its JobSet)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:  # noqa: ARG002 - Berth's patch is all it changed
        """Berth's runtime patch removed."""
        return trainjob.restore_patch(job)

    def hold_patch(self, job: Body, count: int) -> Body | None:  # noqa: ARG002 - see below
        """None: the Trainer does not resize a running JobSet."""
        return None

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return trainjob.is_suspended(job)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Complete`` or ``Failed`` condition."""
        return trainjob.finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - child Jobs report readiness
        """Every child Job ready or succeeded."""
        return trainjob.pods_ready(job, self.runtimes)

    def active_pods(self, job: Body) -> int:
        """Child Jobs with active pods (the status counts Jobs, not pods)."""
        return trainjob.active_jobs(job)


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
        body["metadata"]["ownerReferences"] = (
            podgroup.owner_references(job)
            if isinstance(integration, PodGroupJob)
            else [
                {
                    "apiVersion": integration.api_version,
                    "kind": integration.kind,
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        )
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


def merge_patch(target: Any, patch: Any) -> Any:  # noqa: ANN401 - JSON values
    """``target`` with the JSON merge patch ``patch`` applied (RFC 7386), as a new value."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def suspended_spec(integration: Integration, job: Body) -> Body:
    """The job's spec once suspended, wherever its kind keeps the switch (the webhook writes it)."""
    spec: Body = merge_patch(job, integration.stop_patch(job)).get("spec") or {}
    return spec


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
            pod_class=integration.pod_priority_class(job),
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
    *,
    job_uid: str = "",
) -> list[PodSetRun]:
    """How each admitted pod set runs: its count and its flavors' node labels and tolerations.

    A pod set admitted without a count runs ``default_count`` pods; a flavor deleted since the
    admission adds nothing. A pod set placed by topology also labels its pods with ``job_uid``
    (``berth.dev/tas``): the webhook gates them and the ungater pins each to its domain.
    """
    out = []
    for psa in [] if admission is None else admission.pod_set_assignments:
        placed = topology.from_status(psa.topology_assignment)
        placements = tuple(
            batchjob.FlavorPlacement(
                dict(rf.spec.node_labels),
                tuple(t.to_yaml_dict() for t in rf.spec.tolerations),
                ((api_topology.PLACED_LABEL, job_uid),)
                if placed is not None and rf.spec.topology_name is not None
                else (),
            )
            for rf in (flavors.get(name) for name in sorted(set(psa.flavors.values())))
            if rf is not None
        )
        out.append(PodSetRun(psa.name, psa.count or default_count, placements, placed))
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class ChildKind:
    """A kind of child an integrated parent's controller makes, as the webhooks select it."""

    parent: str
    """The parent's kind."""
    group: str
    version: str
    plural: str
    label: str | None
    """The label the controller puts on every such child (a JobSet's name, the kind a RayJob's
    submitter Job comes from), which the hooks select on; None when it puts none of its own
    (the Trainer's JobSet), and every such object that names no queue is sent to the hooks."""


CHILD_KINDS = (
    ChildKind(jobset.KIND, "batch", "v1", "jobs", jobset.NAME_LABEL),
    ChildKind(ray.RAYJOB.kind, "batch", "v1", "jobs", ray.ORIGIN_KIND_LABEL),
    ChildKind(trainjob.KIND, jobset.GROUP, "v1alpha2", jobset.PLURAL, None),
)
"""The children the webhooks see, so a child cannot be started before its parent is admitted
(the Helm chart's webhook template lists the same, in this order)."""

_KUBEFLOW = {k.framework: k for k in kubeflow.KINDS}


MEMBERS = "pods"
"""The key of a pod group's patches: a map from each member's name to its strategic merge patch,
or None to delete it (a group is many objects; ``PodGroupJob``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodGroupJob(job_kind.Labelled):
    """The pod integration: plain Pods admitted as a group, one pod set per role.

    The job is the group ``core.podgroup.group_body`` assembles from its pods, and every patch
    is a map of member patches under ``MEMBERS`` (``core.podgroup``).
    """

    @property
    def kind(self) -> str:
        """``Pod``."""
        return podgroup.KIND

    @property
    def api_version(self) -> str:
        """``v1``."""
        return podgroup.API_VERSION

    @property
    def plural(self) -> str:
        """``pods``."""
        return podgroup.PLURAL

    @property
    def size_field(self) -> str:
        """The group's size annotation."""
        return f"metadata.annotations[{podgroup.TOTAL_ANNOTATION}]"

    def count_field(self, job: Body, pod_set: str) -> str:  # noqa: ARG002 - one size for the group
        """The group's size annotation."""
        return f"metadata.annotations[{podgroup.TOTAL_ANNOTATION}]"

    def pod_selector(self, job: Body) -> str:  # noqa: ARG002 - one label marks every member
        """Berth's label on every member (the group's own members are ``job['pods']``)."""
        return f"{podgroup.MANAGED_LABEL}=true"

    def child_as_made(self, job: Body, child: Body) -> Body | str:  # noqa: ARG002 - none is made
        """None: pods make no jobs."""
        return job_kind.makes_no_children(job)

    def before_restore(self, job: Body) -> Body | None:  # noqa: ARG002 - pods are never restored
        """Nothing: a stopped member is deleted, not restored."""
        return None

    def pod_count(self, job: Body) -> int:
        """The group's size."""
        return podgroup.total(job, honor_kueue=self.honor_kueue_labels)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first member's ``priorityClassName``."""
        members = podgroup.pods(job)
        spec = (members[0].get("spec") or {}) if members else {}
        return spec.get("priorityClassName") or None

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The group's Workload, or why it cannot be made (yet)."""
        return podgroup.to_workload(job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self,
        job: Body,
        originals: list[PodSetOriginal],  # noqa: ARG002 - a member keeps its own template
        runs: list[PodSetRun],
    ) -> Body:
        """Each gated member of the group, ungated on its role's flavors.

        A role placed by topology pins each member to its domain at once: the members exist
        already, so none waits at the topology gate.
        """
        by_role = {r.name: r for r in runs}
        size = self.pod_count(job)
        gated = [p for p in podgroup.runnable(job)[:size] if podgroup.is_gated(p)]
        pinned: dict[str, dict[str, str]] = {}
        for role, run in by_role.items():
            if run.topology is not None:
                members = sorted(
                    str(p["metadata"]["name"]) for p in gated if podgroup.role_of(p) == role
                )
                pinned.update(topology.pin(run.topology, (), members))
        out: dict[str, Body] = {}
        for pod in gated:
            name, role = str(pod["metadata"]["name"]), podgroup.role_of(pod)
            found = by_role.get(role)
            out[name] = podgroup.start_patch(
                pod,
                pod_set=role,
                flavors=[] if found is None else list(found.placements),
                pinned=pinned.get(name),
            )
        return {MEMBERS: out}

    def stop_patch(self, job: Body) -> Body:
        """Delete the members that were started and still run."""
        return {MEMBERS: {str(p["metadata"]["name"]): None for p in podgroup.to_stop(job)}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:  # noqa: ARG002 - deleted, not restored
        """None: pods are deleted, never restored."""
        return None

    def hold_patch(self, job: Body, count: int) -> Body | None:  # noqa: ARG002 - a group cannot grow
        """None: the size annotation is fixed and excess members are deleted."""
        return None

    def upkeep_patch(self, job: Body, *, finished_workload: bool) -> Body:
        """Excess members deleted, and finalizers off the members that may go."""
        out: dict[str, Body | None] = {
            str(p["metadata"]["name"]): podgroup.DROP_FINALIZER
            for p in podgroup.finalizer_drops(
                job, finished_workload=finished_workload, honor_kueue=self.honor_kueue_labels
            )
        }
        for pod in podgroup.excess(job, honor_kueue=self.honor_kueue_labels):
            out[str(pod["metadata"]["name"])] = None
        return {MEMBERS: out}

    def is_suspended(self, job: Body) -> bool:
        """A member that counts is still gated."""
        return podgroup.is_suspended(job, honor_kueue=self.honor_kueue_labels)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """``total`` members succeeded, or an unretriable group stopped."""
        return podgroup.finished(job, honor_kueue=self.honor_kueue_labels)

    def pods_ready(self, job: Body, count: int) -> bool:
        """Ready + succeeded members >= count."""
        return podgroup.pods_ready(job, count)

    def active_pods(self, job: Body) -> int:
        """Members bound and not finished."""
        return podgroup.active_pods(job)


def make(
    framework: configuration.Framework,
    *,
    honor_kueue_labels: bool = False,
    runtimes: trainjob.Runtimes | None = None,
) -> Integration:
    """The integration a framework name in ``integrations.frameworks`` names (Kueue's names).

    ``runtimes``: the training runtimes a TrainJob integration reads (none known by default).
    """
    if framework is configuration.Framework.TRAINJOB:
        if runtimes is None:
            return TrainJobJob(honor_kueue_labels=honor_kueue_labels)
        return TrainJobJob(honor_kueue_labels=honor_kueue_labels, runtimes=runtimes)
    if framework is configuration.Framework.BATCH_JOB:
        return BatchJob(honor_kueue_labels=honor_kueue_labels)
    if framework is configuration.Framework.JOBSET:
        return JobSetJob(honor_kueue_labels=honor_kueue_labels)
    if framework is configuration.Framework.POD:
        return PodGroupJob(honor_kueue_labels=honor_kueue_labels)
    if framework is configuration.Framework.RAYJOB:
        return ray.RayKind(honor_kueue_labels=honor_kueue_labels, shape=ray.RAYJOB)
    if framework is configuration.Framework.RAYCLUSTER:
        return ray.RayKind(honor_kueue_labels=honor_kueue_labels, shape=ray.RAYCLUSTER)
    return KubeflowJob(honor_kueue_labels=honor_kueue_labels, spec=_KUBEFLOW[framework])


EVERY_KIND: tuple[Integration, ...] = tuple(make(f) for f in configuration.Framework)
"""One integration of every kind Berth knows (Kueue's labels off): what may be read, not what
a Configuration enables."""


def for_configuration(
    config: configuration.Configuration, runtimes: trainjob.Runtimes | None = None
) -> dict[str, Integration]:
    """The integrations the Configuration enables, by job kind, bound to its settings.

    ``runtimes``: the training runtimes TrainJobs name, read live (the caller keeps it current).

    ``batch/job`` is always on: Berth's own guards (the Job webhooks, the child-Job rules) rest
    on it. Unknown names are refused when the Configuration is loaded (``api.configuration``).
    """
    out: dict[str, Integration] = {}
    for name in [configuration.Framework.BATCH_JOB, *config.integrations.frameworks]:
        made = make(name, honor_kueue_labels=config.honor_kueue_labels, runtimes=runtimes)
        out[made.kind] = made
    return out


def by_api_version(
    enabled: Mapping[str, Integration], api_version: str, kind: str
) -> Integration | None:
    """The enabled integration of an object of this apiVersion and kind, if any.

    Any version of the integration's group matches.
    """
    found = enabled.get(kind)
    if found is None:
        return None
    return found if api_version.rpartition("/")[0] == found.api_version.rpartition("/")[0] else None
