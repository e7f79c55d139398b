"""The KubeRay integrations (``ray.io/v1`` RayJob and RayCluster): pure half and ``Integration``.

After Kueue's ``pkg/controller/jobs/rayjob`` and ``pkg/controller/jobs/raycluster``:

- **Pod sets**: ``head`` (one pod, the head group's template), then one per worker group in the
  cluster's order, named by the lower-cased ``groupName`` and counting the pods KubeRay runs
  for it (``replicas`` within ``minReplicas`` and ``maxReplicas``, 0 if suspended, x
  ``numOfHosts``; Kueue counts ``replicas`` alone, ``group_count`` says why not); a RayJob in
  ``K8sJobMode`` (KubeRay's default) adds ``submitter``, one pod of
  ``spec.submitterPodTemplate`` or of KubeRay's default submitter template (the head's image,
  500m CPU and 200Mi memory). No partial admission, as in Kueue.
- **What Berth refuses** (Kueue's webhooks): a RayJob without ``rayClusterSpec`` or that selects
  an existing cluster (``clusterSelector``), or whose cluster outlives it
  (``shutdownAfterJobFinishes`` false); the in-tree autoscaler (it would grow the cluster past
  its admission); more than 7 worker groups (a Workload holds 8 pod sets); a worker group named
  ``head`` (or ``submitter`` for a RayJob that submits with a Job).
- **Priority class**: the first pod set's template, in that order, that names one.
- **Start**: ``spec.suspend`` false, and each role's template gets its pod set's flavor node
  labels and tolerations (``podsets.placed``) and the ``berth.dev/job-uid`` label, which is how
  Berth finds the job's pods once KubeRay forgets which cluster it made (``pod_selector``). The
  worker groups are a list, sent whole; the default submitter template is not in the RayJob,
  so (as in Kueue) it is placed only when ``submitterPodTemplate`` is given.
- **Stop**: ``spec.suspend`` true (KubeRay deletes the cluster and the submitter Job);
  **restore**: each template's labels, node selector and tolerations as recorded.
- **Status**: a RayJob finished when its deployment status is ``Complete`` or ``Failed``,
  succeeded when its job status is ``SUCCEEDED``; a RayCluster never finishes. Pods are ready
  when the cluster's state is ``ready``.

The RayCluster a RayJob makes, and the submitter Job, are children of the RayJob
(``jobs.rules.job_sync.parent``): never queued on their own. Used through ``RayKind`` by the
simulator and the operator.
"""

from __future__ import annotations

import copy
import dataclasses

from berth.api import bodies, errors, workload
from berth.api.bodies import Body
from berth.api.labels import JOB_UID_LABEL
from berth.jobs.framework import podsets, protocol, workload_body
from berth.jobs.framework.labelled import Labelled
from berth.jobs.framework.protocol import PodSetOriginal, PodSetRun

GROUP = "ray.io"
API_VERSION = f"{GROUP}/v1"
ORIGIN_KIND_LABEL = "ray.io/originated-from-crd"
"""Put by KubeRay on the submitter Job (and cluster) it makes for a RayJob."""
HEAD = "head"
SUBMITTER = "submitter"
MAX_WORKER_GROUPS = 7
"""A Workload holds at most 8 pod sets; one is the head."""
_SUBMIT_WITH_JOB = "K8sJobMode"
_SUBMIT_IN_HEAD = "SidecarMode"
_FINISHED = {"Complete", "Failed"}
_IDLE = {"", "New", "Suspended", "Complete", "Failed", "ValidationFailed"}
"""RayJob deployment statuses with no cluster running for the job."""


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    """Which KubeRay kind: where its cluster spec lives."""

    kind: str
    plural: str
    cluster_field: str | None
    """The spec field holding the cluster spec (``rayClusterSpec``); None: the spec is one."""

    def path(self, rest: str) -> str:
        """A field path under the cluster spec, for error messages."""
        return f"spec.{rest}" if self.cluster_field is None else f"spec.{self.cluster_field}.{rest}"


RAYJOB = Shape("RayJob", "rayjobs", "rayClusterSpec")
RAYCLUSTER = Shape("RayCluster", "rayclusters", None)


def _spec(job: Body) -> Body:
    spec = job.get("spec")
    return spec if isinstance(spec, dict) else {}


def cluster(shape: Shape, job: Body) -> Body:
    """The cluster spec (a RayJob's ``rayClusterSpec``, a RayCluster's ``spec``)."""
    spec = _spec(job)
    found = spec if shape.cluster_field is None else spec.get(shape.cluster_field)
    return found if isinstance(found, dict) else {}


def _head_template(shape: Shape, job: Body) -> Body:
    head = cluster(shape, job).get("headGroupSpec") or {}
    found = head.get("template") if isinstance(head, dict) else None
    return found if isinstance(found, dict) else {}


def worker_groups(shape: Shape, job: Body) -> list[Body]:
    """The worker groups, in the cluster's order."""
    groups = cluster(shape, job).get("workerGroupSpecs")
    return [g if isinstance(g, dict) else {} for g in groups] if isinstance(groups, list) else []


def group_count(group: Body) -> int:
    """Pods KubeRay runs for a worker group (its ``GetWorkerGroupDesiredReplicas``).

    ``replicas`` (default 1) kept within ``minReplicas`` (default 0) and ``maxReplicas``
    (default unbounded), the lower bound first; 0 for a suspended group; times ``numOfHosts``
    (default 1). Kueue counts ``replicas`` alone, but KubeRay raises a group below its
    ``minReplicas`` to it, so a count of ``replicas`` would let pods run past the admission.
    """
    if group.get("suspend") is True:
        return 0
    replicas = 1 if group.get("replicas") is None else int(group["replicas"])
    low = int(group.get("minReplicas") or 0)
    high = group.get("maxReplicas")
    if replicas < low:
        replicas = low
    elif high is not None and replicas > int(high):
        replicas = int(high)
    hosts = group.get("numOfHosts")
    return replicas * (int(hosts) if hosts else 1)


def count_field(shape: Shape, job: Body, pod_set: str) -> str:
    """Where a role's pod count is set, for messages."""
    for i, group in enumerate(worker_groups(shape, job)):
        if str(group.get("groupName") or "").lower() == pod_set:
            return shape.path(f"workerGroupSpecs[{i}]")
    if pod_set == SUBMITTER:
        return "spec.submitterPodTemplate"
    return shape.path("headGroupSpec")


def _submits_with_job(shape: Shape, job: Body) -> bool:
    mode = _spec(job).get("submissionMode") or _SUBMIT_WITH_JOB
    return shape is RAYJOB and mode == _SUBMIT_WITH_JOB


def _default_submitter(job: Body) -> Body:
    containers = (_head_template(RAYJOB, job).get("spec") or {}).get("containers") or [{}]
    return {
        "spec": {
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": containers[0].get("image") or "",
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                    },
                }
            ],
            "restartPolicy": "Never",
        }
    }


def pod_sets(shape: Shape, job: Body) -> list[tuple[str, int, Body]]:
    """Each role's pod set: name, count and template, in Kueue's order."""
    out = [(HEAD, 1, _head_template(shape, job))]
    for group in worker_groups(shape, job):
        template = group.get("template")
        out.append(
            (
                str(group.get("groupName") or "").lower(),
                group_count(group),
                template if isinstance(template, dict) else {},
            )
        )
    if _submits_with_job(shape, job):
        given = _spec(job).get("submitterPodTemplate")
        out.append((SUBMITTER, 1, given if isinstance(given, dict) else _default_submitter(job)))
    return out


def child_as_made(rayjob: Body, child: Body) -> Body | str:
    """A RayJob's child as KubeRay makes it under the child's name, or why it makes none such.

    KubeRay makes one RayCluster, named as the RayJob's ``status.rayClusterName`` (written
    before the cluster is made), of the RayJob's ``rayClusterSpec`` (in ``SidecarMode`` the
    head also runs KubeRay's default submitter container), and in ``K8sJobMode`` one submitter
    Job named as the RayJob.
    """
    meta = bodies.meta(rayjob)
    ref = f"RayJob {meta.get('namespace')}/{meta.get('name')}"
    name = bodies.name(child)
    kind = str(child.get("kind") or "Job")
    made = {"metadata": child.get("metadata") or {}}
    if kind == RAYCLUSTER.kind:
        status = rayjob.get("status")
        expected = (status.get("rayClusterName") if isinstance(status, dict) else None) or ""
        if not expected:
            return f"metadata.name: {ref} has named no RayCluster yet (status.rayClusterName)"
        if name != expected:
            return (
                f"metadata.name: {ref} runs one RayCluster, named in its "
                f"status.rayClusterName ({expected}); {name} is not it"
            )
        spec = copy.deepcopy(cluster(RAYJOB, rayjob))
        if _spec(rayjob).get("submissionMode") == _SUBMIT_IN_HEAD:
            head = (spec.get("headGroupSpec") or {}).get("template") or {}
            containers = (head.get("spec") or {}).get("containers")
            if isinstance(containers, list):
                containers.append(_default_submitter(rayjob)["spec"]["containers"][0])
        return {"apiVersion": API_VERSION, "kind": RAYCLUSTER.kind, **made, "spec": spec}
    if kind == "Job" and _submits_with_job(RAYJOB, rayjob):
        if name != meta.get("name"):
            return f"metadata.name: {ref} submits with one Job, named {meta.get('name')}"
        given = _spec(rayjob).get("submitterPodTemplate")
        template = given if isinstance(given, dict) else _default_submitter(rayjob)
        return {"apiVersion": "batch/v1", "kind": "Job", **made, "spec": {"template": template}}
    return f"kind: KubeRay makes no {kind} for {ref}"


def pod_count(shape: Shape, job: Body) -> int:
    """Pods over every role."""
    return sum(count for _, count, _ in pod_sets(shape, job))


def priority_class(shape: Shape, job: Body) -> str | None:
    """The first role's template, in pod-set order, that names a ``priorityClassName``."""
    for _, _, template in pod_sets(shape, job):
        name = (template.get("spec") or {}).get("priorityClassName")
        if name:
            return str(name)
    return None


def _non_negative(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _job_problems(job: Body) -> list[errors.FieldError]:
    spec = _spec(job)
    if spec.get("clusterSelector"):
        return [
            errors.FieldError(
                "spec.clusterSelector",
                "a RayJob Berth queues brings its own cluster (spec.rayClusterSpec); to run on "
                "an existing RayCluster, queue that RayCluster and remove this field",
            )
        ]
    if not isinstance(spec.get("rayClusterSpec"), dict):
        return [errors.FieldError("spec.rayClusterSpec", "required; give the cluster to run on")]
    if spec.get("shutdownAfterJobFinishes") is not True:
        return [
            errors.FieldError(
                "spec.shutdownAfterJobFinishes",
                "must be true: the cluster of a queued RayJob must go when the job ends, or it "
                "keeps holding the queue's quota",
            )
        ]
    return []


def _problems(shape: Shape, job: Body) -> list[errors.FieldError]:
    if shape is RAYJOB:
        problems = _job_problems(job)
        if problems:
            return problems
    spec = cluster(shape, job)
    problems = []
    if spec.get("enableInTreeAutoscaling") is True:
        problems.append(
            errors.FieldError(
                shape.path("enableInTreeAutoscaling"),
                "the autoscaler would grow the cluster past what was admitted; set it to false",
            )
        )
    if not isinstance((spec.get("headGroupSpec") or {}).get("template"), dict):
        problems.append(
            errors.FieldError(shape.path("headGroupSpec.template"), "required; give a template")
        )
    groups = worker_groups(shape, job)
    if len(groups) > MAX_WORKER_GROUPS:
        problems.append(
            errors.FieldError(
                shape.path("workerGroupSpecs"),
                f"at most {MAX_WORKER_GROUPS} worker groups (a Workload holds 8 pod sets, one "
                f"is the head); {len(groups)} given",
            )
        )
    return problems + _group_problems(shape, job)


def _group_problems(shape: Shape, job: Body) -> list[errors.FieldError]:
    problems = []
    reserved = {HEAD, SUBMITTER} if _submits_with_job(shape, job) else {HEAD}
    seen: set[str] = set()
    for i, group in enumerate(worker_groups(shape, job)):
        path = shape.path(f"workerGroupSpecs[{i}]")
        name = str(group.get("groupName") or "").lower()
        if not name:
            problems.append(errors.FieldError(f"{path}.groupName", "required"))
        elif name in reserved:
            problems.append(
                errors.FieldError(f"{path}.groupName", f"{name!r} is the name of another role")
            )
        elif name in seen:
            problems.append(
                errors.FieldError(f"{path}.groupName", f"{name!r} names two worker groups")
            )
        seen.add(name)
        problems.extend(
            errors.FieldError(f"{path}.{field}", "must be a non-negative integer")
            for field in ("replicas", "minReplicas", "maxReplicas")
            if group.get(field) is not None and not _non_negative(group.get(field))
        )
        hosts = group.get("numOfHosts")
        if hosts is not None and not (_non_negative(hosts) and hosts > 0):
            problems.append(errors.FieldError(f"{path}.numOfHosts", "must be a positive integer"))
        if not isinstance(group.get("template"), dict):
            problems.append(errors.FieldError(f"{path}.template", "required; give a template"))
    return problems


def to_workload(
    shape: Shape, job: Body, *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """Build the Workload of a RayJob or RayCluster, or return the field errors that prevent it."""
    problems = _problems(shape, job)
    if problems:
        return None, problems
    return workload_body.build_workload(
        job,
        uid=uid,
        pod_sets=[
            {"name": name, "count": count, "template": template}
            for name, count, template in pod_sets(shape, job)
        ],
        honor_kueue=honor_kueue,
        role=lambda index: (None, _template_path(shape, job, index)),
        kind=shape.kind,
        group=GROUP,
        runtime_limit=workload_body.deadline(
            job.get("spec") or {}
        ),  # a RayJob's; a cluster has none
    )


def _template_path(shape: Shape, job: Body, index: int) -> str:
    # Pod set i is role i: the head, the worker groups in order, then the submitter.
    if index == 0:
        return shape.path("headGroupSpec.template")
    if index <= len(worker_groups(shape, job)):
        return shape.path(f"workerGroupSpecs[{index - 1}].template")
    return "spec.submitterPodTemplate"


_Fields = tuple[Body, Body, list[Body]]
"""A template's labels, node selector and tolerations."""


def _placed(original: Body, name: str, uid: str, runs: dict[str, PodSetRun]) -> _Fields:
    run = runs.get(name)
    labels, selector, tolerations = podsets.placed(
        original, pod_set=name, flavors=[] if run is None else list(run.placements)
    )
    labels[JOB_UID_LABEL] = uid
    return labels, selector, tolerations


def _recorded(original: Body) -> _Fields:
    spec = original.get("spec") or {}
    return (
        bodies.labels_of(original),
        dict(spec.get("nodeSelector") or {}),
        list(spec.get("tolerations") or []),
    )


def _templates_patch(shape: Shape, job: Body, wanted: dict[str, _Fields]) -> tuple[Body, bool]:
    """A merge patch giving each role's template the wanted (labels, selector, tolerations).

    The head and submitter templates are maps and patched field by field; the worker groups are
    a list, so every group goes in, as last read, when one changes.
    """
    spec = _spec(job)
    patch: Body = {}
    cluster_patch: Body = {}
    head = _head_template(shape, job)
    if HEAD in wanted:
        head_patch = podsets.template_patch(head, *wanted[HEAD])
        if head_patch:
            cluster_patch["headGroupSpec"] = {"template": head_patch}
    groups = worker_groups(shape, job)
    rewritten = []
    changed = False
    for group in groups:
        current = group.get("template") or {}
        fields = wanted.get(str(group.get("groupName") or "").lower())
        new_template = current if fields is None else podsets.with_fields(current, *fields)
        changed = changed or new_template != current
        rewritten.append({**group, "template": new_template})
    if changed:
        cluster_patch["workerGroupSpecs"] = rewritten
    if cluster_patch:
        if shape.cluster_field is None:
            patch.update(cluster_patch)
        else:
            patch[shape.cluster_field] = cluster_patch
    given = spec.get("submitterPodTemplate")
    if isinstance(given, dict) and SUBMITTER in wanted and _submits_with_job(shape, job):
        submitter_patch = podsets.template_patch(given, *wanted[SUBMITTER])
        if submitter_patch:
            patch["submitterPodTemplate"] = submitter_patch
    return patch, bool(patch)


def start_patch(
    shape: Shape, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
) -> Body:
    """Unsuspend the job, each role's template on its pod set's flavors."""
    uid = bodies.uid(job)
    recorded = {o.name: o.template for o in originals}
    by_name = {r.name: r for r in runs}
    wanted = {
        name: _placed(recorded.get(name) or current, name, uid, by_name)
        for name, _, current in pod_sets(shape, job)
    }
    templates, _ = _templates_patch(shape, job, wanted)
    return {"spec": {"suspend": False, **templates}}


def restore_patch(shape: Shape, job: Body, originals: list[PodSetOriginal]) -> Body | None:
    """Each role's recorded labels, node selector and tolerations back (None if equal)."""
    wanted = {o.name: _recorded(o.template) for o in originals}
    templates, changed = _templates_patch(shape, job, wanted)
    return {"spec": templates} if changed else None


def _status(job: Body) -> Body:
    status = job.get("status")
    return status if isinstance(status, dict) else {}


def _cluster_status(shape: Shape, job: Body) -> Body:
    status = _status(job)
    if shape is RAYJOB:
        found = status.get("rayClusterStatus")
        return found if isinstance(found, dict) else {}
    return status


def finished(shape: Shape, job: Body) -> tuple[bool, bool]:
    """A RayJob's deployment ``Complete`` or ``Failed`` (success: job ``SUCCEEDED``)."""
    if shape is not RAYJOB:
        return False, False  # a RayCluster runs until deleted, as in Kueue
    status = _status(job)
    if status.get("jobDeploymentStatus") in _FINISHED:
        return True, status.get("jobStatus") == "SUCCEEDED"
    return False, False


def pods_ready(shape: Shape, job: Body) -> bool:
    """The cluster's state is ``ready`` (KubeRay saw every pod run and be ready)."""
    return _cluster_status(shape, job).get("state") == "ready"


def active_pods(shape: Shape, job: Body) -> int:
    """Pods KubeRay runs for the job, by its status (a RayJob's cluster while deployed)."""
    status = _cluster_status(shape, job)
    workers = int(status.get("readyWorkerReplicas") or 0)
    if shape is RAYJOB:
        idle = _status(job).get("jobDeploymentStatus", "") in _IDLE
        return 0 if idle else 1 + workers
    if status.get("state") == "suspended":
        return 0  # KubeRay says so once every pod of a suspended cluster is gone
    head = 1 if status.get("state") or (status.get("head") or {}).get("podName") else 0
    return head + workers


@dataclasses.dataclass(frozen=True, slots=True)
class RayKind(Labelled):
    """The RayJob or RayCluster integration: head, worker groups and the submitter."""

    shape: Shape = RAYJOB

    @property
    def kind(self) -> str:
        """The job's kind."""
        return self.shape.kind

    @property
    def api_version(self) -> str:
        """``ray.io/v1``."""
        return API_VERSION

    @property
    def plural(self) -> str:
        """``rayjobs`` or ``rayclusters``."""
        return self.shape.plural

    @property
    def size_field(self) -> str:
        """The worker groups (each one's ``replicas`` and ``numOfHosts``)."""
        return self.shape.path("workerGroupSpecs")

    def count_field(self, job: Body, pod_set: str) -> str:
        """The worker group of that name (its replicas, min/max replicas and hosts), or the head."""
        return count_field(self.shape, job, pod_set)

    def pod_selector(self, job: Body) -> str:
        """The label Berth puts on every role's template at start: the job's uid."""
        return f"{JOB_UID_LABEL}={(job.get('metadata') or {}).get('uid')}"

    def child_as_made(self, job: Body, child: Body) -> Body | str:
        """A RayJob's cluster or submitter Job as KubeRay makes it; a RayCluster makes no jobs."""
        if self.shape is RAYJOB:
            return child_as_made(job, child)
        return protocol.makes_no_children(job)

    def pod_count(self, job: Body) -> int:
        """Pods over every role."""
        return pod_count(self.shape, job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first role's template that names a ``priorityClassName``."""
        return priority_class(self.shape, job)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The job's Workload, or the field errors that prevent it."""
        return to_workload(self.shape, job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Unsuspend, each role's template on its pod set's flavors (whole only)."""
        return start_patch(self.shape, job, originals, runs)

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every job
        """``spec.suspend`` (KubeRay deletes the cluster and the submitter Job)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded templates back."""
        return restore_patch(self.shape, job, originals)

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return bool(_spec(job).get("suspend"))

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A RayJob's deployment finished; a RayCluster never."""
        return finished(self.shape, job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - KubeRay reports it
        """The cluster's state is ``ready``."""
        return pods_ready(self.shape, job)

    def active_pods(self, job: Body) -> int:
        """Pods KubeRay runs for the job, by its status."""
        return active_pods(self.shape, job)
