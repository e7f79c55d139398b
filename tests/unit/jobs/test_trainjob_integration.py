"""The pure half of the Kubeflow Trainer v2 TrainJob integration, after Kueue's trainjob.

Pod sets are read off the JobSet the Trainer makes from the runtime a TrainJob names. The rows
follow the Trainer's own rules and tests at v2.3.0 (``pkg/runtime/core/trainingruntime.go`` and
its ``trainingruntime_test.go``; ``pkg/runtime/framework/plugins/{plainml,torch,mpi}`` and their
tests): ``numNodes`` from the runtime's ``mlPolicy`` then the TrainJob's trainer, one replica for
the trainer and initializer steps, ``resourcesPerNode`` merged into the ``node`` container, the
MPI launcher counted as a node, other managers' runtime patches applied, Berth's own not. Start
writes Berth's runtime patch and unsuspends; restore removes only that patch.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pydantic
import pytest

from berth.api import configuration
from berth.api.labels import POD_SET_LABEL
from berth.jobs import jobset, registry, trainjob
from berth.jobs.framework import merge, podsets, protocol, workload_body
from berth.jobs.rules import child_jobs, job_updates

ANCESTOR = trainjob.ANCESTOR_LABEL
H100_TOLERATION = {"key": "berth.dev/flavor", "operator": "Equal", "value": "h100"}
SPOT_TOLERATION = {"key": "spot", "operator": "Exists"}


def container(name: str, **resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "image": "x", **({"resources": resources} if resources else {})}


def rjob(
    name: str,
    *containers: dict[str, Any],
    ancestor: str | None = None,
    replicas: int | None = None,
    parallelism: int | None = None,
) -> dict[str, Any]:
    job_spec: dict[str, Any] = {"template": {"spec": {"containers": list(containers)}}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    out: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if ancestor is not None:
        out["template"]["metadata"] = {"labels": {ANCESTOR: ancestor}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def runtime(
    *rjobs: dict[str, Any],
    name: str = "torch-distributed",
    ml_policy: dict[str, Any] | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": list(rjobs)}}}
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    return {
        "apiVersion": trainjob.API_VERSION,
        "kind": trainjob.NAMESPACED_RUNTIME if namespace else trainjob.CLUSTER_RUNTIME,
        "metadata": meta,
        "spec": spec,
    }


def catalog(*runtimes: dict[str, Any]) -> dict[trainjob.RuntimeKey, dict[str, Any]]:
    out = {}
    for rt in runtimes:
        key = trainjob.key_of(rt)
        assert key is not None
        out[key] = rt
    return out


def train_job(
    runtime_name: str = "torch-distributed",
    *,
    kind: str | None = None,
    trainer: dict[str, Any] | None = None,
    patches: list[dict[str, Any]] | None = None,
    suspend: bool = True,
) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": runtime_name}
    if kind is not None:
        ref["kind"] = kind
    spec: dict[str, Any] = {"runtimeRef": ref, "suspend": suspend}
    if trainer is not None:
        spec["trainer"] = trainer
    if patches is not None:
        spec["runtimePatches"] = patches
    return {
        "apiVersion": trainjob.API_VERSION,
        "kind": trainjob.KIND,
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "tj-uid",
            "labels": {"berth.dev/queue-name": "lq"},
        },
        "spec": spec,
    }


def patch(manager: str, **by_job: dict[str, Any]) -> dict[str, Any]:
    """A runtime patch giving each named replicated job's pods this pod spec."""
    return {
        "manager": manager,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": name, "template": {"spec": {"template": {"spec": pod}}}}
                        for name, pod in by_job.items()
                    ]
                }
            }
        },
    }


GPU4 = {"limits": {"nvidia.com/gpu": 4}}
TORCH = runtime(
    rjob("node", container("node", requests={"cpu": "2"}), ancestor="trainer"),
    ml_policy={"numNodes": 1, "torch": {}},
)
WITH_INITIALIZERS = runtime(
    rjob(
        "dataset-initializer",
        container("dataset-initializer"),
        ancestor="dataset-initializer",
        replicas=3,
    ),
    rjob("model-initializer", container("model-initializer"), ancestor="model-initializer"),
    rjob("node", container("node"), ancestor="trainer", replicas=5),
    name="torch-with-initializers",
    ml_policy={"numNodes": 2, "torch": {}},
)
MPI_LAUNCHER_AS_NODE = runtime(
    rjob("node", container("node")),
    rjob("launcher", container("node"), ancestor="trainer"),
    name="deepspeed-distributed",
    ml_policy={"numNodes": 1, "mpi": {"runLauncherAsNode": True}},
)
MPI = runtime(
    rjob("launcher", container("launcher"), ancestor="trainer"),
    rjob("node", container("node")),
    name="mpi-distributed",
    ml_policy={"numNodes": 1, "mpi": {}},
)
PLAIN = runtime(
    rjob("node", container("node"), ancestor="trainer", parallelism=3),
    rjob("sidecar", container("sidecar"), replicas=2, parallelism=2),
    name="plain",
)
TEAM_RUNTIME = runtime(
    rjob("node", container("node"), ancestor="trainer"),
    name="team-torch",
    namespace="ml",
    ml_policy={"numNodes": 2, "torch": {}},
)
EVERY = catalog(TORCH, WITH_INITIALIZERS, MPI_LAUNCHER_AS_NODE, MPI, PLAIN, TEAM_RUNTIME)


@dataclasses.dataclass(frozen=True)
class PodSetCase:
    id: str
    job: dict[str, Any]
    want: list[tuple[str, int, dict[str, int]]]
    """Each pod set's name, count and requests per pod."""


POD_SET_CASES = [
    PodSetCase(
        "the-runtime-ml-policy-gives-the-number-of-nodes",
        train_job(),
        [("node", 1, {"cpu": 2000})],
    ),
    PodSetCase(
        "the-trainjob-numnodes-and-resources-per-node-win",
        train_job(trainer={"numNodes": 4, "resourcesPerNode": GPU4}),
        [("node", 4, {"cpu": 2000, "nvidia.com/gpu": 4})],
    ),
    PodSetCase(
        "trainer-and-initializer-steps-run-one-replica",
        train_job("torch-with-initializers"),
        [("dataset-initializer", 1, {}), ("model-initializer", 1, {}), ("node", 2, {})],
    ),
    PodSetCase(
        "mpi-launcher-as-node-takes-one-of-the-nodes",
        train_job("deepspeed-distributed", trainer={"numNodes": 3, "resourcesPerNode": GPU4}),
        [("node", 2, {"nvidia.com/gpu": 4}), ("launcher", 1, {"nvidia.com/gpu": 4})],
    ),
    PodSetCase(
        "mpi-numnodes-go-to-the-node-job",
        train_job("mpi-distributed", trainer={"numNodes": 3}),
        [("launcher", 1, {}), ("node", 3, {})],
    ),
    PodSetCase(
        "no-ml-policy-parallelism-then-numnodes-other-jobs-keep-their-replicas",
        train_job("plain", trainer={"numNodes": 5, "resourcesPerNode": GPU4}),
        # resourcesPerNode reaches the node container only under an mlPolicy (as the Trainer).
        [("node", 5, {}), ("sidecar", 4, {})],
    ),
    PodSetCase(
        "a-trainingruntime-is-read-in-the-trainjobs-namespace",
        train_job("team-torch", kind="TrainingRuntime"),
        [("node", 2, {})],
    ),
]


@pytest.mark.parametrize("case", POD_SET_CASES, ids=lambda c: c.id)
def test_pod_sets_are_read_off_the_jobset_the_trainer_makes(case: PodSetCase) -> None:
    wl, problems = trainjob.TrainJobJob(runtimes=EVERY).to_workload(case.job, uid="tj-uid")
    assert problems == []
    assert wl is not None
    got = [(ps.name, ps.count, ps.template.spec.pod_requests()) for ps in wl.spec.pod_sets]
    assert got == case.want
    assert wl.spec.queue_name == "lq"
    assert wl.metadata.name.startswith("trainjob-train-")


@dataclasses.dataclass(frozen=True)
class ErrorCase:
    id: str
    job: dict[str, Any]
    want: str
    """The field the error names."""


ERROR_CASES = [
    ErrorCase("runtime-not-there", train_job("missing"), "spec.runtimeRef"),
    ErrorCase(
        "a-cluster-runtime-is-not-a-namespaced-one",
        train_job("torch-distributed", kind="TrainingRuntime"),
        "spec.runtimeRef",
    ),
    ErrorCase("not-a-runtime-kind", train_job(kind="JobSet"), "spec.runtimeRef"),
    ErrorCase(
        "no-runtime-name",
        {**train_job(), "spec": {"runtimeRef": {}}},
        "spec.runtimeRef.name",
    ),
    ErrorCase(
        "a-patch-names-no-replicated-job-of-the-runtime",
        train_job(patches=[patch("example.com/tuner", workers={"nodeSelector": {"a": "b"}})]),
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name",
    ),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c.id)
def test_a_trainjob_that_makes_no_workload_names_the_field(case: ErrorCase) -> None:
    wl, problems = trainjob.TrainJobJob(runtimes=EVERY).to_workload(case.job, uid="u")
    assert wl is None
    assert [p.path for p in problems] == [case.want]


def test_other_managers_patches_shape_the_pod_sets_and_berths_own_does_not() -> None:
    job = train_job(
        patches=[
            patch("example.com/placer", node={"nodeSelector": {"zone": "a"}}),
            patch("example.com/spot", node={"tolerations": [SPOT_TOLERATION]}),
            patch(trainjob.PATCH_MANAGER, node={"nodeSelector": {"gpu": "h100"}}),
        ]
    )
    wl, problems = trainjob.TrainJobJob(runtimes=EVERY).to_workload(job, uid="u")
    assert problems == []
    assert wl is not None
    spec = wl.spec.pod_sets[0].template.spec
    assert spec.node_selector == {"zone": "a"}
    assert [t.to_yaml_dict() for t in spec.tolerations] == [SPOT_TOLERATION]


def placement() -> dict[str, list[podsets.FlavorPlacement]]:
    return {"node": [podsets.FlavorPlacement({"gpu": "h100"}, (H100_TOLERATION,))]}


def test_start_writes_berths_runtime_patch_beside_the_others_and_unsuspends() -> None:
    other = patch("example.com/spot", node={"tolerations": [SPOT_TOLERATION]})
    job = train_job(trainer={"numNodes": 2, "resourcesPerNode": GPU4}, patches=[other])
    integ = trainjob.TrainJobJob(runtimes=EVERY)
    wl, _ = integ.to_workload(job, uid="tj-uid")
    assert wl is not None
    originals = workload_body.originals([ps.to_yaml_dict() for ps in wl.spec.pod_sets])
    runs = [protocol.PodSetRun("node", 2, tuple(placement()["node"]))]
    start = integ.start_patch(job, originals, runs)
    assert start["spec"]["suspend"] is False
    patches = start["spec"]["runtimePatches"]
    assert patches[0] == other
    own = patches[1]
    assert own["manager"] == trainjob.PATCH_MANAGER
    [entry] = own["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = entry["template"]["spec"]["template"]
    assert entry["name"] == "node"
    assert pod["metadata"]["labels"][POD_SET_LABEL] == "node"
    assert pod["spec"]["nodeSelector"] == {"gpu": "h100"}
    # A strategic merge replaces the tolerations list: the other manager's stays in it.
    assert pod["spec"]["tolerations"] == [SPOT_TOLERATION, H100_TOLERATION]

    running = merge.merge_patch(job, start)
    assert not integ.is_suspended(running)
    # The JobSet as it runs carries the flavor; the Workload's pod sets still do not.
    made = integ.child_as_made(running, {"kind": "JobSet", "metadata": {"name": "train"}})
    assert isinstance(made, dict)
    made_pod = made["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert made_pod["nodeSelector"] == {"gpu": "h100"}
    assert integ.to_workload(running, uid="tj-uid")[0] == wl

    stopped = merge.merge_patch(running, integ.stop_patch(running))
    restore = integ.restore_patch(stopped, originals)
    assert restore == {"spec": {"runtimePatches": [other]}}
    assert merge.merge_patch(stopped, restore)["spec"] == job["spec"]
    assert integ.restore_patch(job, originals) is None


def test_restore_drops_the_field_when_berths_patch_was_the_only_one() -> None:
    job = train_job(patches=[patch(trainjob.PATCH_MANAGER, node={"nodeSelector": {"a": "b"}})])
    assert trainjob.restore_patch(job) == {"spec": {"runtimePatches": None}}


@pytest.mark.parametrize(
    ("status", "want_finished", "want_ready", "active"),
    [
        ({}, (False, False), False, 0),
        (
            {"jobsStatus": [{"name": "node", "ready": 1, "active": 1}]},
            (False, False),
            True,
            1,
        ),
        (
            {"conditions": [{"type": "Complete", "status": "True"}]},
            (True, True),
            False,
            0,
        ),
        ({"conditions": [{"type": "Failed", "status": "True"}]}, (True, False), False, 0),
        ({"conditions": [{"type": "Complete", "status": "False"}]}, (False, False), False, 0),
    ],
)
def test_trainjob_status(
    status: dict[str, Any], want_finished: tuple[bool, bool], want_ready: bool, active: int
) -> None:
    integ = trainjob.TrainJobJob(runtimes=EVERY)
    job = {**train_job(), "status": status}
    assert integ.finished(job) == want_finished
    assert integ.pods_ready(job, 1) is want_ready
    assert integ.active_pods(job) == active


def jobset_child(job: dict[str, Any], **changes: Any) -> dict[str, Any]:
    made = trainjob.TrainJobJob(runtimes=EVERY).child_as_made(
        job, {"kind": "JobSet", "metadata": {"name": "train"}}
    )
    assert isinstance(made, dict)
    out = copy.deepcopy(made)
    out["metadata"] = {
        "name": changes.pop("name", "train"),
        "namespace": "ml",
        "ownerReferences": [
            {
                "apiVersion": trainjob.API_VERSION,
                "kind": "TrainJob",
                "name": "train",
                "uid": "tj-uid",
                "controller": True,
            }
        ],
    }
    rj = out["spec"]["replicatedJobs"][0]
    for key, value in changes.items():
        if key == "replicas":
            rj["replicas"] = value
        elif key == "gpus":
            rj["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
                "limits": {"nvidia.com/gpu": value}
            }
        elif key == "node_selector":
            rj["template"]["spec"]["template"]["spec"]["nodeSelector"] = value
    return out


@pytest.mark.parametrize(
    ("changes", "refused"),
    [
        ({}, None),
        ({"name": "train-2"}, "metadata.name"),
        ({"replicas": 2}, "pods at once"),
        ({"gpus": 8}, "requests nvidia.com/gpu"),
        ({"node_selector": {}}, "nodeSelector must keep gpu: h100"),
    ],
)
def test_only_the_jobset_the_trainer_makes_may_run(
    changes: dict[str, Any], refused: str | None
) -> None:
    integ = trainjob.TrainJobJob(runtimes=EVERY)
    job = train_job(trainer={"numNodes": 2, "resourcesPerNode": GPU4})
    wl, _ = integ.to_workload(job, uid="tj-uid")
    assert wl is not None
    originals = workload_body.originals([ps.to_yaml_dict() for ps in wl.spec.pod_sets])
    running = merge.merge_patch(
        job,
        integ.start_patch(
            job, originals, [protocol.PodSetRun("node", 2, tuple(placement()["node"]))]
        ),
    )
    child = jobset_child(running, **changes)
    why = child_jobs.refusal(running, child, jobset.JobSetJob(), integ)
    if refused is None:
        assert why is None
    else:
        assert why is not None
        assert refused in why


def test_the_trainjob_integration_needs_the_jobset_one() -> None:
    with pytest.raises(pydantic.ValidationError, match=r"add jobset\.x-k8s\.io/jobset"):
        configuration.Integrations(frameworks=[configuration.Framework.TRAINJOB])
    both = configuration.Integrations(
        frameworks=[configuration.Framework.JOBSET, configuration.Framework.TRAINJOB]
    )
    config = configuration.Configuration(integrations=both)
    runtimes = catalog(TORCH)
    enabled = registry.for_configuration(config, runtimes)
    integ = enabled[trainjob.KIND]
    assert integ.pod_count(train_job(trainer={"numNodes": 3})) == 3
    runtimes.clear()  # the operator's watch forgets a deleted runtime: the integration sees it
    assert integ.pod_count(train_job(trainer={"numNodes": 3})) == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"numNodes": 6}, "spec.trainer.numNodes"),
        ({"resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}, "spec"),
    ],
)
def test_a_running_trainjob_may_not_grow_past_its_admission(
    change: dict[str, Any], field: str
) -> None:
    integ = trainjob.TrainJobJob(runtimes=EVERY)
    old = train_job(trainer={"numNodes": 2, "resourcesPerNode": GPU4}, suspend=False)
    new = copy.deepcopy(old)
    new["spec"]["trainer"].update(change)
    admitted = job_updates.WorkloadState(
        exists_unfinished=True, holds_quota=True, admitted=True, admitted_counts={"node": 2}
    )
    assert [p.path for p in job_updates.refusals(old, new, admitted, integ)] == [field]
    # Queued and holding nothing, it may be resized (it is queued again at its new size).
    old["spec"]["suspend"] = new["spec"]["suspend"] = True
    pending = job_updates.WorkloadState(exists_unfinished=True)
    assert job_updates.refusals(old, new, pending, integ) == []


def _malformed_runtime(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": trainjob.API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed"},
        "spec": spec,
    }


NODE_STEP = rjob("node", container("node"), ancestor="trainer")
MALFORMED_RUNTIMES = [
    None,
    {"template": "x"},
    {"template": {"spec": {"replicatedJobs": ["x"]}}},
    {"template": {"spec": {"replicatedJobs": [{"template": None}]}}},
    {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": None}}]}}},
    {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": "x"}}]}}},
    {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": "x"}]}}},
    {"template": {"spec": {"replicatedJobs": [{**NODE_STEP, "replicas": -1}]}}},
    {"mlPolicy": {"numNodes": "two"}, "template": {"spec": {"replicatedJobs": [NODE_STEP]}}},
    {"mlPolicy": "torch", "template": {"spec": {"replicatedJobs": [NODE_STEP]}}},
]
MALFORMED_SPECS = [
    {"trainer": 5},
    {"trainer": {"numNodes": "x"}},
    {"trainer": {"numNodes": 0}},
    {"trainer": {"resourcesPerNode": [1]}},
    {"runtimePatches": [{"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": "x"}}}}]},
    {"runtimePatches": [{"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [5]}}}}]},
    {"runtimeRef": "torch-distributed"},
]


@pytest.mark.parametrize("spec", MALFORMED_RUNTIMES)
def test_a_malformed_runtime_is_a_field_error_on_the_trainjob(spec: Any) -> None:
    # An admin's bad runtime YAML (the simulator reads it unchecked by any CRD schema).
    integ = trainjob.TrainJobJob(runtimes=catalog(_malformed_runtime(spec)))
    job = train_job(trainer={"numNodes": 2})
    wl, problems = integ.to_workload(job, uid="u")
    assert wl is None
    assert problems
    assert {p.path for p in problems} == {"spec.runtimeRef"}
    assert all("ClusterTrainingRuntime torch-distributed: spec" in p.message for p in problems)
    assert integ.pod_count(job) == 0
    assert integ.pods_ready(job, 1) is False
    assert integ.pod_priority_class(job) is None


@pytest.mark.parametrize("change", MALFORMED_SPECS)
def test_a_malformed_trainjob_is_a_field_error(change: dict[str, Any]) -> None:
    job = train_job()
    job["spec"].update(change)
    wl, problems = trainjob.TrainJobJob(runtimes=EVERY).to_workload(job, uid="u")
    assert wl is None
    assert problems
    assert all(p.path.startswith("spec.") for p in problems)
