"""The pure half of the Kubeflow training-operator v1 integrations, after Kueue's kubeflowjob.

One code path serves PyTorchJob, TFJob, PaddleJob, XGBoostJob and JAXJob: pod sets per replica
type in Kueue's order (``OrderedReplicaTypes``), named lower-case, counting ``replicas``; the
priority class from the run policy first; start and restore patches that name only the templates
they change (the replica specs are a map); status from the training-operator's conditions.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from berth.api import configuration
from berth.api.labels import POD_SET_LABEL
from berth.jobs import kubeflow, registry
from berth.jobs.framework import merge, podsets, protocol, workload_body
from berth.jobs.rules import job_updates

PYTORCH = registry.make(configuration.Framework.PYTORCHJOB)
H100_TOLERATION = {"key": "berth.dev/flavor", "operator": "Equal", "value": "h100"}


def _restorable(integ: protocol.Integration) -> protocol.Restorable:
    """The kind's restore capability, found as the job controller finds it (by isinstance)."""
    assert isinstance(integ, protocol.Restorable)
    return integ


def replica(count: int | None, gpus: int = 1, **pod: Any) -> dict[str, Any]:
    spec = {
        "containers": [
            {"name": "pytorch", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
        ],
        **pod,
    }
    out: dict[str, Any] = {"restartPolicy": "OnFailure", "template": {"spec": spec}}
    if count is not None:
        out["replicas"] = count
    return out


def training_job(
    kind: kubeflow.Kind = kubeflow.PYTORCH, **replicas: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind.kind,
        "metadata": {"name": "train", "namespace": "ml", "labels": {"berth.dev/queue-name": "lq"}},
        "spec": {"runPolicy": {"suspend": True}, kind.replica_specs: replicas},
    }


@dataclasses.dataclass(frozen=True)
class PodSetCase:
    id: str
    kind: kubeflow.Kind
    job: dict[str, Any]
    want: list[tuple[str, int]]
    want_errors: list[str] = dataclasses.field(default_factory=list)


POD_SET_CASES = [
    PodSetCase(
        "pytorch-master-then-worker-whatever-the-map-order",
        kubeflow.PYTORCH,
        training_job(Worker=replica(3), Master=replica(1)),
        [("master", 1), ("worker", 3)],
    ),
    PodSetCase(
        "replicas-default-to-one",
        kubeflow.PYTORCH,
        training_job(Worker=replica(None)),
        [("worker", 1)],
    ),
    PodSetCase(
        "tfjob-chief-master-ps-worker-evaluator",
        kubeflow.TF,
        training_job(
            kubeflow.TF, Evaluator=replica(1), Worker=replica(4), PS=replica(2), Chief=replica(1)
        ),
        [("chief", 1), ("ps", 2), ("worker", 4), ("evaluator", 1)],
    ),
    PodSetCase(
        "jax-workers", kubeflow.JAX, training_job(kubeflow.JAX, Worker=replica(8)), [("worker", 8)]
    ),
    PodSetCase(
        "an-unknown-replica-type-is-named",
        kubeflow.PYTORCH,
        training_job(Master=replica(1), Launcher=replica(1)),
        [],
        ["spec.pytorchReplicaSpecs[Launcher]"],
    ),
    PodSetCase(
        "no-replicas-is-an-error",
        kubeflow.PYTORCH,
        training_job(),
        [],
        ["spec.pytorchReplicaSpecs"],
    ),
    PodSetCase(
        "a-bad-count-names-its-replica-type",
        kubeflow.PYTORCH,
        training_job(Master=replica(1), Worker={**replica(1), "replicas": "four"}),
        [],
        ["spec.pytorchReplicaSpecs[Worker].replicas"],
    ),
]


@pytest.mark.parametrize("case", POD_SET_CASES, ids=lambda c: c.id)
def test_pod_sets_follow_kueues_kubeflowjob(case: PodSetCase) -> None:
    integ = registry.make(case.kind.framework)
    obj, problems = integ.to_workload(case.job, uid="uid-1")
    assert [p.path for p in problems] == case.want_errors
    assert ([] if obj is None else [(p.name, p.count) for p in obj.spec.pod_sets]) == case.want
    if obj is not None:
        assert obj.metadata.name.startswith(f"{case.kind.kind.lower()}-train-")


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(
            training_job(Master=replica(1), Worker=replica(2, priorityClassName="workers")),
            "workers",
            id="first-template-that-names-one",
        ),
        pytest.param(
            {
                **training_job(Master=replica(1, priorityClassName="master")),
                "spec": {
                    "runPolicy": {"schedulingPolicy": {"priorityClass": "policy"}},
                    "pytorchReplicaSpecs": {"Master": replica(1, priorityClassName="master")},
                },
            },
            "policy",
            id="run-policy-first",
        ),
        pytest.param(training_job(Master=replica(1)), None, id="none"),
    ],
)
def test_priority_class_is_read_where_kueue_reads_it(job: dict[str, Any], want: str | None) -> None:
    assert PYTORCH.pod_priority_class(job) == want


def test_start_and_restore_touch_only_each_replicas_scheduling_fields() -> None:
    job = training_job(Master=replica(1, nodeSelector={"team": "a"}), Worker=replica(4))
    obj, _ = PYTORCH.to_workload(job, uid="uid-1")
    assert obj is not None
    originals = workload_body.originals(obj.to_yaml_dict()["spec"]["podSets"])
    runs = [
        protocol.PodSetRun("master", 1, (podsets.FlavorPlacement({"pool": "cpu"}),)),
        protocol.PodSetRun(
            "worker", 4, (podsets.FlavorPlacement({"gpu": "h100"}, (H100_TOLERATION,)),)
        ),
    ]
    started = merge.merge_patch(job, PYTORCH.start_patch(job, originals, runs))
    assert not PYTORCH.is_suspended(started)
    master = started["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    worker = started["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert master["spec"]["nodeSelector"] == {"team": "a", "pool": "cpu"}
    assert worker["spec"]["nodeSelector"] == {"gpu": "h100"}
    assert worker["spec"]["tolerations"] == [H100_TOLERATION]
    assert worker["metadata"]["labels"] == {POD_SET_LABEL: "worker"}
    assert started["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4

    stopped = merge.merge_patch(started, PYTORCH.stop_patch(started))
    assert PYTORCH.is_suspended(stopped)
    restored = merge.merge_patch(
        stopped, _restorable(PYTORCH).restore_patch(stopped, originals) or {}
    )
    for t in ("Master", "Worker"):
        got = restored["spec"]["pytorchReplicaSpecs"][t]["template"]
        want = job["spec"]["pytorchReplicaSpecs"][t]["template"]
        assert got["spec"] == want["spec"]
        assert not (got.get("metadata") or {}).get("labels")
    assert _restorable(PYTORCH).restore_patch(restored, originals) is None


@pytest.mark.parametrize(
    ("status", "want_finished", "want_ready", "want_active"),
    [
        ({}, (False, False), False, 0),
        (
            {
                "conditions": [{"type": "Running", "status": "True"}],
                "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 4}},
            },
            (False, False),
            True,
            5,
        ),
        ({"conditions": [{"type": "Succeeded", "status": "True"}]}, (True, True), False, 0),
        ({"conditions": [{"type": "Failed", "status": "True"}]}, (True, False), False, 0),
    ],
    ids=["new", "running", "succeeded", "failed"],
)
def test_training_job_status(
    status: dict[str, Any], want_finished: tuple[bool, bool], want_ready: bool, want_active: int
) -> None:
    job = {**training_job(Master=replica(1), Worker=replica(4)), "status": status}
    assert PYTORCH.finished(job) == want_finished
    assert PYTORCH.pods_ready(job, 5) == want_ready
    assert PYTORCH.active_pods(job) == want_active


def test_its_pods_are_selected_by_the_training_operators_labels() -> None:
    assert PYTORCH.pod_selector(training_job()) == (
        "training.kubeflow.org/job-name=train,"
        "training.kubeflow.org/operator-name=pytorchjob-controller"
    )


RUNNING = {
    **training_job(Master=replica(1), Worker=replica(2)),
    "spec": {
        **training_job(Master=replica(1), Worker=replica(2))["spec"],
        "runPolicy": {"suspend": False},
    },
}
ADMITTED = job_updates.WorkloadState(
    exists_unfinished=True,
    holds_quota=True,
    admitted=True,
    admitted_counts={"master": 1, "worker": 2},
)


def _with_worker(job: dict[str, Any], **pod: Any) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["pytorchReplicaSpecs"]["Worker"] = replica(2, gpus=pod.pop("gpus", 1), **pod)
    return out


@pytest.mark.parametrize(
    ("new", "refused"),
    [
        pytest.param(_with_worker(RUNNING, gpus=4), ["spec"], id="more-gpus-per-pod-refused"),
        pytest.param(
            _with_worker(RUNNING, nodeSelector={"gpu": "h100"}),
            ["spec"],
            id="another-flavors-nodes-refused",
        ),
        pytest.param(
            {**RUNNING, "metadata": {**RUNNING["metadata"], "annotations": {"note": "x"}}},
            [],
            id="metadata-allowed",
        ),
    ],
)
def test_the_pods_of_a_running_training_job_cannot_change(
    new: dict[str, Any], refused: list[str]
) -> None:
    # The training-operator makes pods from the templates for as long as the job runs (a pod
    # deleted is made again): a template edited past admission runs pods outside its quota.
    problems = job_updates.refusals(RUNNING, new, ADMITTED, PYTORCH)
    assert [p.path for p in problems] == refused
