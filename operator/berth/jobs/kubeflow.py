"""The pure half of the Kubeflow training-operator v1 integrations (``org/v1``).

PyTorchJob, TFJob, PaddleJob, XGBoostJob and JAXJob share one shape — a map of replica specs
by replica type, ``spec.runPolicy.suspend``, and the training-operator's common status — and so
one integration, after Kueue's ``pkg/controller/jobs/kubeflow/kubeflowjob``:

- **Pod sets**: one per replica type present, in the kind's order (Kueue's
  ``OrderedReplicaTypes``: PyTorchJob Master, Worker; TFJob Chief, Master, PS, Worker,
  Evaluator; ...), named by the lower-cased type, counting ``replicas`` (default 1), with the
  replica's pod template. No partial admission, as in Kueue.
- **Priority class**: ``spec.runPolicy.schedulingPolicy.priorityClass``, else the first replica
  template in that order that names one (Kueue's ``KubeflowJob.PriorityClass``).
- **Start / stop**: ``spec.runPolicy.suspend``, and each replica's pod template gets its pod
  set's flavor node labels and tolerations (``podsets.placed``); the replica specs are a map, so
  the merge patches name only the templates they change. Restore gives those fields back.
- **Status**: finished on a ``Succeeded`` or ``Failed`` condition; pods ready while ``Running``
  is True (Kueue's ``PodsReady``); active pods from ``status.replicaStatuses``.

Used through ``jobs.kubeflow.KubeflowJob`` by the simulator and the operator.
"""

from __future__ import annotations

import dataclasses

from berth.api import bodies, configuration, errors, workload
from berth.api.bodies import Body
from berth.jobs.framework import labelled, podsets, workload_body
from berth.jobs.framework.protocol import PodSetOriginal, PodSetRun

GROUP = "kubeflow.org"
API_VERSION = f"{GROUP}/v1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"


@dataclasses.dataclass(frozen=True, slots=True)
class Kind:
    """One training-operator kind: where its replicas are and in which order they count."""

    kind: str
    plural: str
    replica_specs: str
    """The spec field holding the replica specs by type (``pytorchReplicaSpecs``)."""
    order: tuple[str, ...]
    """Replica types in Kueue's order; a pod set per type present."""
    operator_name: str
    """The ``training.kubeflow.org/operator-name`` its controller puts on the pods."""
    framework: configuration.Framework
    scale_role: str | None = None
    """The replica type the CRD's ``scale`` subresource sets (its ``specReplicasPath``)."""


PYTORCH = Kind(
    "PyTorchJob",
    "pytorchjobs",
    "pytorchReplicaSpecs",
    ("Master", "Worker"),
    "pytorchjob-controller",
    configuration.Framework.PYTORCHJOB,
    "Worker",
)
TF = Kind(
    "TFJob",
    "tfjobs",
    "tfReplicaSpecs",
    ("Chief", "Master", "PS", "Worker", "Evaluator"),
    "tfjob-controller",
    configuration.Framework.TFJOB,
)
PADDLE = Kind(
    "PaddleJob",
    "paddlejobs",
    "paddleReplicaSpecs",
    ("Master", "Worker"),
    "paddlejob-controller",
    configuration.Framework.PADDLEJOB,
    "Worker",
)
XGBOOST = Kind(
    "XGBoostJob",
    "xgboostjobs",
    "xgbReplicaSpecs",
    ("Master", "Worker"),
    "xgboostjob-controller",
    configuration.Framework.XGBOOSTJOB,
)
JAX = Kind(
    "JAXJob",
    "jaxjobs",
    "jaxReplicaSpecs",
    ("Worker",),
    "jaxjob-controller",
    configuration.Framework.JAXJOB,
    "Worker",
)
KINDS = (PYTORCH, TF, PADDLE, XGBOOST, JAX)


def _spec(job: Body) -> Body:
    spec = job.get("spec")
    return spec if isinstance(spec, dict) else {}


def replicas(kind: Kind, job: Body) -> list[tuple[str, Body]]:
    """The replica specs present, in the kind's order, by type."""
    specs = _spec(job).get(kind.replica_specs)
    if not isinstance(specs, dict):
        return []
    return [(t, specs[t]) for t in kind.order if isinstance(specs.get(t), dict)]


def count_field(kind: Kind, job: Body, pod_set: str) -> str:
    """That replica type's ``replicas``, for messages."""
    for t, _replica in replicas(kind, job):
        if t.lower() == pod_set:
            return f"spec.{kind.replica_specs}[{t}].replicas"
    return f"spec.{kind.replica_specs}"


def scaled(kind: Kind, job: Body, count: int) -> Body | None:
    """The job once its ``scale`` subresource set ``count`` (None: the kind has no scale).

    The CRDs of the training-operator v1.9 give PyTorchJob, PaddleJob and JAXJob a scale
    subresource on their Worker replicas (``specReplicasPath``); TFJob and XGBoostJob have none.
    """
    if kind.scale_role is None:
        return None
    spec = dict(_spec(job))
    specs = dict(spec.get(kind.replica_specs) or {})
    specs[kind.scale_role] = {**(specs.get(kind.scale_role) or {}), "replicas": count}
    spec[kind.replica_specs] = specs
    return {**job, "spec": spec}


def _count(replica: Body) -> int:
    value = replica.get("replicas")
    return 1 if value is None else int(value)


def pod_count(kind: Kind, job: Body) -> int:
    """Pods over every replica type."""
    return sum(_count(r) for _, r in replicas(kind, job))


def _problems(kind: Kind, job: Body) -> list[errors.FieldError]:
    specs = _spec(job).get(kind.replica_specs)
    field = f"spec.{kind.replica_specs}"
    if not isinstance(specs, dict) or not specs:
        return [errors.FieldError(field, f"required; give at least one of {', '.join(kind.order)}")]
    problems = [
        errors.FieldError(
            f"{field}[{t}]", f"not a {kind.kind} replica type; use {', '.join(kind.order)}"
        )
        for t in specs
        if t not in kind.order
    ]
    for t, replica in replicas(kind, job):
        value = replica.get("replicas")
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            problems.append(
                errors.FieldError(f"{field}[{t}].replicas", "must be a non-negative integer")
            )
        if not isinstance(replica.get("template"), dict):
            problems.append(
                errors.FieldError(f"{field}[{t}].template", "required; give it a pod template")
            )
    return problems


def to_workload(
    kind: Kind, job: Body, *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """Build the Workload of a training job, or return the field errors that prevent it."""
    problems = _problems(kind, job)
    if problems:
        return None, problems
    present = replicas(kind, job)

    def role(index: int) -> tuple[str, str]:
        # Pod set i is replica type i (in the kind's order); its template is the replica's.
        path = f"spec.{kind.replica_specs}[{present[index][0]}]"
        return path, f"{path}.template"

    return workload_body.build_workload(
        job,
        uid=uid,
        pod_sets=[
            {"name": t.lower(), "count": _count(r), "template": r["template"]} for t, r in present
        ],
        honor_kueue=honor_kueue,
        role=role,
        kind=kind.kind,
        group=GROUP,
        runtime_limit=workload_body.deadline(job.get("spec", {}).get("runPolicy") or {}),
    )


def priority_class(kind: Kind, job: Body) -> str | None:
    """The pods' PriorityClass: the run policy's, else the first replica template's."""
    policy = (_spec(job).get("runPolicy") or {}).get("schedulingPolicy") or {}
    if policy.get("priorityClass"):
        return str(policy["priorityClass"])
    for _, replica in replicas(kind, job):
        name = ((replica.get("template") or {}).get("spec") or {}).get("priorityClassName")
        if name:
            return str(name)
    return None


def is_suspended(job: Body) -> bool:
    """``spec.runPolicy.suspend``."""
    return bool((_spec(job).get("runPolicy") or {}).get("suspend"))


def suspend_patch(*, suspended: bool) -> Body:
    """The merge patch that suspends or resumes a training job."""
    return {"spec": {"runPolicy": {"suspend": suspended}}}


def start_patch(
    kind: Kind,
    job: Body,
    originals: dict[str, Body],
    placements: dict[str, list[podsets.FlavorPlacement]],
) -> Body:
    """Resume the job with each replica's template on its pod set's flavors."""
    patch = suspend_patch(suspended=False)
    changed: Body = {}
    for t, replica in replicas(kind, job):
        name = t.lower()
        current = replica.get("template") or {}
        labels, selector, tolerations = podsets.placed(
            originals.get(name) or current, pod_set=name, flavors=placements.get(name, [])
        )
        template = podsets.template_patch(current, labels, selector, tolerations)
        if template:
            changed[t] = {"template": template}
    if changed:
        patch["spec"][kind.replica_specs] = changed
    return patch


def restore_patch(kind: Kind, job: Body, originals: dict[str, Body]) -> Body | None:
    """Each replica's recorded labels, node selector and tolerations back (None if equal)."""
    changed: Body = {}
    for t, replica in replicas(kind, job):
        original = originals.get(t.lower())
        if original is None:
            continue
        spec = original.get("spec") or {}
        template = podsets.template_patch(
            replica.get("template") or {},
            bodies.labels_of(original),
            dict(spec.get("nodeSelector") or {}),
            list(spec.get("tolerations") or []),
        )
        if template:
            changed[t] = {"template": template}
    return {"spec": {kind.replica_specs: changed}} if changed else None


def _condition(job: Body, kind: str) -> bool:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return True
    return False


def finished(job: Body) -> tuple[bool, bool]:
    """Tell whether the job finished and, if so, whether it succeeded."""
    if _condition(job, "Succeeded"):
        return True, True
    if _condition(job, "Failed"):
        return True, False
    return False, False


def pods_ready(job: Body) -> bool:
    """``Running`` is True: the training-operator saw every replica's pods run."""
    return _condition(job, "Running")


def active_pods(job: Body) -> int:
    """Active pods over every replica type, by the job's status."""
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    return sum(int((s or {}).get("active") or 0) for s in statuses.values())


def pod_selector(kind: Kind, job: Body) -> str:
    """The training-operator's labels on the job's pods."""
    name = (job.get("metadata") or {}).get("name")
    return f"{JOB_NAME_LABEL}={name},{OPERATOR_NAME_LABEL}={kind.operator_name}"


@dataclasses.dataclass(frozen=True, slots=True)
class KubeflowJob(labelled.Labelled):
    """A training-operator v1 kind (PyTorchJob, TFJob, ...): a pod set per replica type."""

    spec: Kind = PYTORCH
    """Which kind, with its replica specs field and replica order."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return self.spec.kind

    @property
    def api_version(self) -> str:
        """``org/v1``."""
        return API_VERSION

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
        return count_field(self.spec, job, pod_set)

    def scaled(self, job: Body, replicas: int) -> Body | None:
        """The job with its scale role's replicas set (None: this kind's CRD has no scale)."""
        return scaled(self.spec, job, replicas)

    def pod_selector(self, job: Body) -> str:
        """The training-operator's job-name and operator-name labels."""
        return pod_selector(self.spec, job)

    def pod_count(self, job: Body) -> int:
        """Replicas over every replica type."""
        return pod_count(self.spec, job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The run policy's ``schedulingPolicy.priorityClass``, else the first template's."""
        return priority_class(self.spec, job)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The training job's Workload, or the field errors that prevent it."""
        return to_workload(self.spec, job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Resume, each replica's template on its pod set's flavors (whole only)."""
        return start_patch(
            self.spec,
            job,
            {o.name: o.template for o in originals},
            {r.name: list(r.placements) for r in runs},
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every job
        """``spec.runPolicy.suspend`` (the training-operator deletes the pods)."""
        return suspend_patch(suspended=True)

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded templates back."""
        return restore_patch(self.spec, job, {o.name: o.template for o in originals})

    def is_suspended(self, job: Body) -> bool:
        """``spec.runPolicy.suspend``."""
        return is_suspended(job)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Succeeded`` or ``Failed`` condition."""
        return finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - the operator reports it
        """``Running`` is True."""
        return pods_ready(job)

    def active_pods(self, job: Body) -> int:
        """Active pods over every replica type."""
        return active_pods(job)
