"""The pure half of the KubeRay integrations (RayJob, RayCluster), after Kueue's rayjob/raycluster.

Pod sets: ``head``, each worker group lower-cased (replicas x numOfHosts), and a RayJob's
``submitter`` in K8sJobMode; what Kueue's webhooks refuse is refused with the field named; the
start patch places each role on its flavors and labels it with the job's uid, sending the worker
groups whole (a list); restore gives the templates back byte-equal; status from KubeRay's fields.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from berth.api import configuration, labels
from berth.jobs import ray, registry
from berth.jobs.framework import merge, podsets, protocol, workload_body
from berth.jobs.rules import job_sync, job_updates, managed

RAYJOB = registry.make(configuration.Framework.RAYJOB)
RAYCLUSTER = registry.make(configuration.Framework.RAYCLUSTER)
H100_TOLERATION = {"key": "berth.dev/flavor", "operator": "Equal", "value": "h100"}


def _restorable(integ: protocol.Integration) -> protocol.Restorable:
    """The kind's restore capability, found as the job controller finds it (by isinstance)."""
    assert isinstance(integ, protocol.Restorable)
    return integ


def template(gpus: int = 0, **pod: Any) -> dict[str, Any]:
    limits = {"cpu": "1", **({"nvidia.com/gpu": gpus} if gpus else {})}
    return {
        "spec": {
            "containers": [
                {"name": "ray", "image": "rayproject/ray:2.9", "resources": {"limits": limits}}
            ],
            **pod,
        }
    }


def group(name: str, replicas: int | None = 1, gpus: int = 1, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"groupName": name, "rayStartParams": {}, "template": template(gpus)}
    if replicas is not None:
        out["replicas"] = replicas
    return {**out, **extra}


def cluster_spec(*groups: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": template()},
        "workerGroupSpecs": list(groups),
        **extra,
    }


def rayjob(*groups: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "uid-rj",
            "labels": {"berth.dev/queue-name": "lq"},
        },
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "suspend": True,
            "rayClusterSpec": cluster_spec(*groups),
            **spec,
        },
    }


def raycluster(*groups: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "dev",
            "namespace": "ml",
            "uid": "uid-rc",
            "labels": {"berth.dev/queue-name": "lq"},
        },
        "spec": {"suspend": True, **cluster_spec(*groups), **spec},
    }


@dataclasses.dataclass(frozen=True)
class PodSetCase:
    id: str
    integ: protocol.Integration
    job: dict[str, Any]
    want: list[tuple[str, int]]
    want_errors: list[str] = dataclasses.field(default_factory=list)


POD_SET_CASES = [
    PodSetCase(
        "rayjob-head-workers-then-the-submitter-job",
        RAYJOB,
        rayjob(group("GPU-Workers", 4), group("cpu", 2, gpus=0)),
        [("head", 1), ("gpu-workers", 4), ("cpu", 2), ("submitter", 1)],
    ),
    PodSetCase(
        "multi-host-replicas-count-every-host",
        RAYJOB,
        rayjob(group("tpu", 2, numOfHosts=4)),
        [("head", 1), ("tpu", 8), ("submitter", 1)],
    ),
    PodSetCase(
        "replicas-default-to-one",
        RAYCLUSTER,
        raycluster(group("w", None)),
        [("head", 1), ("w", 1)],
    ),
    PodSetCase(
        "no-submitter-when-ray-submits-over-http",
        RAYJOB,
        rayjob(group("w", 2), submissionMode="HTTPMode"),
        [("head", 1), ("w", 2)],
    ),
    PodSetCase(
        "a-raycluster-has-no-submitter",
        RAYCLUSTER,
        raycluster(group("w", 3)),
        [("head", 1), ("w", 3)],
    ),
    PodSetCase(
        "a-rayjob-on-an-existing-cluster-is-refused",
        RAYJOB,
        rayjob(group("w"), clusterSelector={"ray.io/cluster": "shared"}),
        [],
        ["spec.clusterSelector"],
    ),
    PodSetCase(
        "a-rayjob-without-its-cluster-is-refused",
        RAYJOB,
        {**rayjob(), "spec": {"shutdownAfterJobFinishes": True}},
        [],
        ["spec.rayClusterSpec"],
    ),
    PodSetCase(
        "a-cluster-that-outlives-its-job-is-refused",
        RAYJOB,
        rayjob(group("w"), shutdownAfterJobFinishes=False),
        [],
        ["spec.shutdownAfterJobFinishes"],
    ),
    PodSetCase(
        "the-autoscaler-is-refused",
        RAYCLUSTER,
        raycluster(group("w"), enableInTreeAutoscaling=True),
        [],
        ["spec.enableInTreeAutoscaling"],
    ),
    PodSetCase(
        "eight-worker-groups-do-not-fit-a-workload",
        RAYCLUSTER,
        raycluster(*(group(f"g{i}") for i in range(8))),
        [],
        ["spec.workerGroupSpecs"],
    ),
    PodSetCase(
        "role-names-are-reserved-and-unique",
        RAYJOB,
        rayjob(group("Head"), group("submitter"), group("w"), group("W")),
        [],
        [
            "spec.rayClusterSpec.workerGroupSpecs[0].groupName",
            "spec.rayClusterSpec.workerGroupSpecs[1].groupName",
            "spec.rayClusterSpec.workerGroupSpecs[3].groupName",
        ],
    ),
    PodSetCase(
        "bad-counts-name-their-group",
        RAYCLUSTER,
        raycluster(group("w", -1), group("v", 1, numOfHosts=0)),
        [],
        ["spec.workerGroupSpecs[0].replicas", "spec.workerGroupSpecs[1].numOfHosts"],
    ),
]


@pytest.mark.parametrize("case", POD_SET_CASES, ids=lambda c: c.id)
def test_pod_sets_follow_kueues_ray_integrations(case: PodSetCase) -> None:
    obj, problems = case.integ.to_workload(case.job, uid="uid-1")
    assert [p.path for p in problems] == case.want_errors
    assert all(p.message for p in problems)
    assert ([] if obj is None else [(p.name, p.count) for p in obj.spec.pod_sets]) == case.want
    if obj is not None:
        assert obj.metadata.name.startswith(f"{case.integ.kind.lower()}-")


def test_the_default_submitter_is_kuberays_with_the_heads_image() -> None:
    obj, _ = RAYJOB.to_workload(rayjob(group("w")), uid="u")
    assert obj is not None
    submitter = obj.spec.pod_sets[-1].template.to_yaml_dict()
    container = submitter["spec"]["containers"][0]
    assert container["image"] == "rayproject/ray:2.9"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}


def test_a_template_error_is_named_in_the_jobs_own_terms() -> None:
    job = rayjob(group("w"))
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"] = "x"
    _, problems = RAYJOB.to_workload(job, uid="u")
    assert problems
    assert problems[0].path.startswith("spec.rayClusterSpec.workerGroupSpecs[0].template")


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(rayjob(group("w")), None, id="none-named"),
        pytest.param(
            rayjob(group("w", template=template(1, priorityClassName="workers"))),
            "workers",
            id="first-role-that-names-one",
        ),
    ],
)
def test_the_pod_priority_class_is_the_first_role_that_names_one(
    job: dict[str, Any], want: str | None
) -> None:
    assert RAYJOB.pod_priority_class(job) == want


def _runs() -> list[protocol.PodSetRun]:
    return [
        protocol.PodSetRun("head", 1, (podsets.FlavorPlacement({"pool": "cpu"}),)),
        protocol.PodSetRun(
            "gpu", 2, (podsets.FlavorPlacement({"pool": "h100"}, (H100_TOLERATION,)),)
        ),
        protocol.PodSetRun("submitter", 1, (podsets.FlavorPlacement({"pool": "cpu"}),)),
    ]


def _originals(job: dict[str, Any]) -> list[protocol.PodSetOriginal]:
    obj, problems = RAYJOB.to_workload(job, uid="uid-rj")
    assert obj is not None, problems
    return workload_body.originals(obj.to_yaml_dict()["spec"]["podSets"])


@pytest.mark.parametrize("given_submitter", [True, False], ids=["given", "default"])
def test_start_places_every_role_and_restore_gives_the_job_back(given_submitter: bool) -> None:
    extra = {"submitterPodTemplate": template()} if given_submitter else {}
    job = rayjob(group("gpu", 2), **extra)
    submitted = copy.deepcopy(job)
    originals = _originals(job)
    started = merge.merge_patch(job, RAYJOB.start_patch(job, originals, _runs()))

    assert started["spec"]["suspend"] is False
    cluster = started["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]["template"]
    worker = cluster["workerGroupSpecs"][0]["template"]
    assert head["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert "tolerations" not in head["spec"]
    assert worker["spec"]["nodeSelector"] == {"pool": "h100"}
    assert worker["spec"]["tolerations"] == [H100_TOLERATION]
    assert cluster["workerGroupSpecs"][0]["rayStartParams"] == {}  # the group's other fields kept
    for tpl in (head, worker):
        assert tpl["metadata"]["labels"][labels.JOB_UID_LABEL] == "uid-rj"
    # KubeRay's default submitter template is not in the RayJob: placed only when given (Kueue).
    assert ("submitterPodTemplate" in started["spec"]) is given_submitter
    if given_submitter:
        assert started["spec"]["submitterPodTemplate"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert RAYJOB.pod_selector(started) == f"{labels.JOB_UID_LABEL}=uid-rj"

    stopped = merge.merge_patch(started, RAYJOB.stop_patch(started))
    restore = _restorable(RAYJOB).restore_patch(stopped, originals)
    assert restore is not None
    restored = merge.merge_patch(stopped, restore)
    assert restored["spec"]["rayClusterSpec"] == submitted["spec"]["rayClusterSpec"]
    assert restored["spec"].get("submitterPodTemplate") == submitted["spec"].get(
        "submitterPodTemplate"
    )
    assert _restorable(RAYJOB).restore_patch(restored, originals) is None


def test_a_raycluster_keeps_its_templates_at_the_top_of_its_spec() -> None:
    job = raycluster(group("gpu", 2))
    obj, _ = RAYCLUSTER.to_workload(job, uid="uid-rc")
    assert obj is not None
    originals = workload_body.originals(obj.to_yaml_dict()["spec"]["podSets"])
    patch = RAYCLUSTER.start_patch(job, originals, _runs()[:2])
    assert set(patch["spec"]) == {"suspend", "headGroupSpec", "workerGroupSpecs"}
    started = merge.merge_patch(job, patch)
    stopped = merge.merge_patch(started, RAYCLUSTER.stop_patch(started))
    assert RAYCLUSTER.is_suspended(stopped)
    restore = _restorable(RAYCLUSTER).restore_patch(stopped, originals)
    assert restore is not None
    assert merge.merge_patch(stopped, restore)["spec"] == job["spec"]


@dataclasses.dataclass(frozen=True)
class StatusCase:
    id: str
    integ: protocol.Integration
    status: dict[str, Any]
    finished: tuple[bool, bool]
    ready: bool
    active: bool


STATUS_CASES = [
    StatusCase("rayjob-new", RAYJOB, {}, (False, False), False, False),
    StatusCase(
        "rayjob-initializing",
        RAYJOB,
        {"jobDeploymentStatus": "Initializing", "rayClusterStatus": {"state": ""}},
        (False, False),
        False,
        True,
    ),
    StatusCase(
        "rayjob-running-on-a-ready-cluster",
        RAYJOB,
        {
            "jobDeploymentStatus": "Running",
            "rayClusterStatus": {"state": "ready", "availableWorkerReplicas": 2},
        },
        (False, False),
        True,
        True,
    ),
    StatusCase(
        "rayjob-suspending-still-has-pods",
        RAYJOB,
        {"jobDeploymentStatus": "Suspending"},
        (False, False),
        False,
        True,
    ),
    StatusCase(
        "rayjob-suspended",
        RAYJOB,
        {"jobDeploymentStatus": "Suspended"},
        (False, False),
        False,
        False,
    ),
    StatusCase(
        "rayjob-complete-and-succeeded",
        RAYJOB,
        {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"},
        (True, True),
        False,
        False,
    ),
    StatusCase(
        "rayjob-failed",
        RAYJOB,
        {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED"},
        (True, False),
        False,
        False,
    ),
    StatusCase(
        "raycluster-ready-never-finishes",
        RAYCLUSTER,
        {"state": "ready"},
        (False, False),
        True,
        True,
    ),
    StatusCase(
        "raycluster-suspended", RAYCLUSTER, {"state": "suspended"}, (False, False), False, False
    ),
    StatusCase("raycluster-not-yet-seen", RAYCLUSTER, {}, (False, False), False, False),
    StatusCase(
        "raycluster-starting-has-its-head",
        RAYCLUSTER,
        {"head": {"podName": "dev-head-x"}},
        (False, False),
        False,
        True,
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES, ids=lambda c: c.id)
def test_status_is_read_as_kueue_reads_it(case: StatusCase) -> None:
    job = {**(rayjob() if case.integ is RAYJOB else raycluster()), "status": case.status}
    assert case.integ.finished(job) == case.finished
    assert case.integ.pods_ready(job, 3) is case.ready
    assert (case.integ.active_pods(job) > 0) is case.active


def _child(kind: str, owner_kind: str = "RayJob", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1" if kind == "RayCluster" else "batch/v1",
        "kind": kind,
        "metadata": {
            "name": "train-x2k9d",
            "namespace": "ml",
            "labels": {"berth.dev/queue-name": "lq", ray.ORIGIN_KIND_LABEL: "RayJob"},
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": owner_kind,
                    "name": "train",
                    "uid": "uid-rj",
                    "controller": True,
                }
            ],
            **meta,
        },
        "spec": {},
    }


ALL_ON = registry.for_configuration(
    configuration.Configuration.model_validate(
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "Configuration",
            "integrations": {"frameworks": ["ray.io/rayjob", "ray.io/raycluster"]},
        }
    )
)


@pytest.mark.parametrize("kind", ["RayCluster", "Job"])
def test_what_a_rayjob_makes_is_part_of_it_never_a_job_of_its_own(kind: str) -> None:
    child = _child(kind)
    found = job_sync.parent(child, ALL_ON)
    assert found is not None
    assert (found.kind, found.uid) == ("RayJob", "uid-rj")
    config = configuration.Configuration.model_validate(
        {"apiVersion": "berth.dev/v1beta1", "kind": "Configuration"}
    )
    decision = managed.decide(child, {}, config, ALL_ON)
    assert decision.why is managed.Why.PART_OF_PARENT
    assert not decision.managed


def test_a_rayjobs_children_follow_the_frameworks_enabled() -> None:
    only_batch = {"Job": registry.make(configuration.Framework.BATCH_JOB)}
    assert job_sync.parent(_child("Job"), only_batch) is None
    [child] = [c for c in registry.CHILD_KINDS if c.parent == "RayJob"]
    assert child.label == ray.ORIGIN_KIND_LABEL


def _running(replicas: int = 2, **gpu_group: Any) -> dict[str, Any]:
    job = rayjob(group("gpu", replicas, **gpu_group))
    job["spec"]["suspend"] = False
    return job


ADMITTED = job_updates.WorkloadState(
    exists_unfinished=True,
    holds_quota=True,
    admitted=True,
    admitted_counts={"head": 1, "gpu": 2, "submitter": 1},
)
QUEUED = job_updates.WorkloadState(exists_unfinished=True, holds_quota=False, admitted=False)


@pytest.mark.parametrize(
    ("old", "new", "state", "refused"),
    [
        pytest.param(
            rayjob(group("gpu", 2)), _running(), QUEUED, ["spec.suspend"], id="unsuspend-queued"
        ),
        pytest.param(
            _running(),
            _running(replicas=6),
            ADMITTED,
            ["spec.rayClusterSpec.workerGroupSpecs[0]"],
            id="more-workers-refused",
        ),
        pytest.param(
            _running(),
            _running(template=template(4)),
            ADMITTED,
            ["spec"],
            id="more-gpus-per-worker-refused",
        ),
        pytest.param(
            _running(),
            {**_running(), "metadata": {**_running()["metadata"], "annotations": {"note": "x"}}},
            ADMITTED,
            [],
            id="metadata-allowed",
        ),
    ],
)
def test_a_queued_or_running_rayjob_cannot_be_started_or_grown_by_hand(
    old: dict[str, Any], new: dict[str, Any], state: job_updates.WorkloadState, refused: list[str]
) -> None:
    problems = job_updates.refusals(old, new, state, RAYJOB)
    assert [p.path for p in problems] == refused
    assert all("RayJob ml/train" in p.message for p in problems)
