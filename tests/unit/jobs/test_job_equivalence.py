"""A running job stays in the shape its admission started, pod set by pod set, whatever the path.

Three layers answer one rule (docs/reliability.md rows 1, 1b, 1d):

- ``jobs.rules.job_sync.divergences`` (the job controller, past the webhooks): a job Berth started
  is equivalent to its admission for every kind; more pods in a role, a new role, a template
  asking for more or for other nodes, or a job that no longer makes a Workload is a divergence,
  held (a batch Job's count) or stopped and queued again (everything else);
- ``jobs.rules.job_updates.refusals`` (the Job webhook): counts compared per pod set, so replicas
  moved from one role to another are refused; an update that breaks a create-time rule is
  refused, so the template lock cannot be switched off by an invalid update;
- ``operator.webhooks.job_admission.validate_scale`` (the ``/scale`` webhook): an HPA's or
  ``kubectl scale``'s change is the job's own update at that size.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import builders
from berth.api import configuration
from berth.api.labels import QUEUE_LABEL
from berth.jobs import kubeflow, ray, registry
from berth.jobs.framework import merge, podsets, protocol, workload_body
from berth.jobs.rules import job_sync, job_updates
from berth.operator import world as world_mod
from berth.operator.webhooks import configurations, job_admission

Body = dict[str, Any]
GPU = "nvidia.com/gpu"
FLAVOR = podsets.FlavorPlacement(
    {"gpu": "h100"}, ({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},)
)
"""The flavor every pod set is admitted on: a node label to select, a taint to tolerate."""


def template(gpus: int, container: str = "main", **spec: Any) -> Body:
    return {
        "metadata": {"labels": {"app": "train"}},
        "spec": {
            "containers": [
                {"name": container, "image": "x", "resources": {"limits": {GPU: str(gpus)}}}
            ],
            **spec,
        },
    }


def batch_job() -> Body:
    return builders.JobBuilder("train", "ml").queue("lq").parallelism(2).obj()


def pytorch_job() -> Body:
    def replica(count: int) -> Body:
        return {"replicas": count, "template": template(1, "pytorch")}

    return {
        "apiVersion": kubeflow.API_VERSION,
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "labels": {QUEUE_LABEL: "lq"}},
        "spec": {
            "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)},
            "runPolicy": {"suspend": True},
        },
    }


def tf_job(ps: int = 6, workers: int = 1) -> Body:
    return {
        "apiVersion": kubeflow.API_VERSION,
        "kind": "TFJob",
        "metadata": {"name": "train", "namespace": "ml", "labels": {QUEUE_LABEL: "lq"}},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": ps, "template": template(0, "tensorflow")},
                "Worker": {"replicas": workers, "template": template(1, "tensorflow")},
            },
            "runPolicy": {"suspend": True},
        },
    }


def ray_cluster(*groups: Body) -> Body:
    return {
        "apiVersion": ray.API_VERSION,
        "kind": "RayCluster",
        "metadata": {"name": "train", "namespace": "ml", "labels": {QUEUE_LABEL: "lq"}},
        "spec": {
            "suspend": True,
            "headGroupSpec": {"template": template(0, "ray")},
            "workerGroupSpecs": list(groups)
            or [{"groupName": "gpu", "replicas": 2, "template": template(1, "ray")}],
        },
    }


def job_set() -> Body:
    return (
        builders.JobSetBuilder("train", "ml")
        .queue("lq")
        .suspend(True)
        .replicated_job("workers", replicas=2, parallelism=2, requests={GPU: "1"})
        .obj()
    )


INTEGRATIONS: dict[str, protocol.Integration] = {
    "Job": registry.make(configuration.Framework.BATCH_JOB),
    "PyTorchJob": registry.make(configuration.Framework.PYTORCHJOB),
    "TFJob": registry.make(configuration.Framework.TFJOB),
    "RayCluster": registry.make(configuration.Framework.RAYCLUSTER),
    "JobSet": registry.make(configuration.Framework.JOBSET),
}
JOBS: dict[str, Callable[[], Body]] = {
    "Job": batch_job,
    "PyTorchJob": pytorch_job,
    "TFJob": tf_job,
    "RayCluster": ray_cluster,
    "JobSet": job_set,
}


@dataclasses.dataclass(frozen=True, slots=True)
class Started:
    """A job as Berth started it, with what its Workload recorded and how it was admitted."""

    job: Body
    originals: list[protocol.PodSetOriginal]
    runs: list[protocol.PodSetRun]


def started(kind: str, job: Body | None = None) -> Started:
    """The job of ``kind`` queued, admitted whole on ``FLAVOR`` and started by its integration."""
    integ = INTEGRATIONS[kind]
    job = copy.deepcopy(job if job is not None else JOBS[kind]())
    job["metadata"]["uid"] = "uid-1"
    obj, problems = integ.to_workload(job, uid="uid-1")
    assert obj is not None, problems
    body = obj.to_yaml_dict()
    originals = workload_body.originals(body["spec"]["podSets"])
    runs = [protocol.PodSetRun(o.name, o.count, (FLAVOR,)) for o in originals]
    running = merge.merge_patch(job, integ.start_patch(job, originals, runs))
    return Started(running, originals, runs)


def divergences(kind: str, s: Started, job: Body | None = None) -> list[job_sync.Divergence]:
    return job_sync.divergences(
        s.job if job is None else job, s.originals, s.runs, INTEGRATIONS[kind]
    )


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_a_job_as_berth_started_it_is_equivalent_to_its_admission(kind: str) -> None:
    s = started(kind)
    assert not INTEGRATIONS[kind].is_suspended(s.job)
    assert divergences(kind, s) == []


def _set(job: Body, path: list[str | int], value: Any) -> Body:
    out = copy.deepcopy(job)
    at: Any = out
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return out


def _drop_master(job: Body) -> Body:
    """A role removed (fewer pods): nothing runs outside the admission."""
    out = copy.deepcopy(job)
    del out["spec"]["pytorchReplicaSpecs"]["Master"]
    return out


WORKER = ["spec", "pytorchReplicaSpecs", "Worker"]
RAY_GROUP: list[str | int] = ["spec", "workerGroupSpecs", 0]


@dataclasses.dataclass(frozen=True, slots=True)
class DivergenceCase:
    id: str
    kind: str
    change: Callable[[Body], Body]
    remedies: list[job_sync.Remedy]
    pod_sets: list[str]


HOLD, STOP = job_sync.Remedy.HOLD, job_sync.Remedy.STOP
DIVERGENCE_CASES = [
    DivergenceCase(
        "a Job's parallelism raised: held",
        "Job",
        lambda j: _set(j, ["spec", "parallelism"], 6),
        [HOLD],
        ["main"],
    ),
    DivergenceCase(
        "a Job's parallelism lowered: nothing to do",
        "Job",
        lambda j: _set(j, ["spec", "parallelism"], 1),
        [],
        [],
    ),
    DivergenceCase(
        "a PyTorchJob's workers raised (an HPA through /scale): stopped",
        "PyTorchJob",
        lambda j: _set(j, [*WORKER, "replicas"], 12),
        [STOP],
        ["worker"],
    ),
    DivergenceCase(
        "a TFJob's replicas moved from PS to Worker: stopped, for the role that grew",
        "TFJob",
        lambda j: _set(
            _set(j, ["spec", "tfReplicaSpecs", "PS", "replicas"], 0),
            ["spec", "tfReplicaSpecs", "Worker", "replicas"],
            7,
        ),
        [STOP],
        ["worker"],
    ),
    DivergenceCase(
        "more GPUs per worker: stopped",
        "PyTorchJob",
        lambda j: _set(
            j, [*WORKER, "template", "spec", "containers", 0, "resources"], {"limits": {GPU: "8"}}
        ),
        [STOP],
        ["worker"],
    ),
    DivergenceCase(
        "another flavor's nodes: stopped",
        "PyTorchJob",
        lambda j: _set(j, [*WORKER, "template", "spec", "nodeSelector"], {"gpu": "a100"}),
        [STOP],
        ["worker"],
    ),
    DivergenceCase(
        "the flavor's toleration dropped for another taint's: stopped",
        "PyTorchJob",
        lambda j: _set(j, [*WORKER, "template", "spec", "tolerations"], [{"operator": "Exists"}]),
        [STOP],
        ["worker"],
    ),
    DivergenceCase(
        "a higher pod priority: stopped",
        "PyTorchJob",
        lambda j: _set(j, [*WORKER, "template", "spec", "priorityClassName"], "urgent"),
        [STOP],
        ["worker"],
    ),
    DivergenceCase(
        "a role removed (fewer pods): nothing to do",
        "PyTorchJob",
        _drop_master,
        [],
        [],
    ),
    DivergenceCase(
        "a RayCluster's worker group raised by minReplicas: stopped",
        "RayCluster",
        lambda j: _set(j, [*RAY_GROUP, "minReplicas"], 8),
        [STOP],
        ["gpu"],
    ),
    DivergenceCase(
        "a RayCluster's worker group renamed: stopped (a new role)",
        "RayCluster",
        lambda j: _set(j, [*RAY_GROUP, "groupName"], "big"),
        [STOP],
        ["big"],
    ),
    DivergenceCase(
        "a RayCluster that no longer makes a Workload (the in-tree autoscaler): stopped",
        "RayCluster",
        lambda j: _set(j, ["spec", "enableInTreeAutoscaling"], True),
        [STOP],
        [""],
    ),
    DivergenceCase(
        "metadata only: nothing to do",
        "RayCluster",
        lambda j: _set(j, ["metadata", "annotations"], {"note": "x"}),
        [],
        [],
    ),
]


@pytest.mark.parametrize("case", DIVERGENCE_CASES, ids=lambda c: c.id)
def test_a_running_job_that_left_its_admitted_shape_is_held_or_stopped(
    case: DivergenceCase,
) -> None:
    s = started(case.kind)
    found = divergences(case.kind, s, case.change(s.job))
    assert [d.remedy for d in found] == case.remedies, found
    assert [d.pod_set for d in found] == case.pod_sets
    assert all(d.message for d in found)


def test_a_started_topology_placed_job_is_equivalent_too() -> None:
    """A topology-aware flavor labels the pods with the job's uid: labels are not compared."""
    placed = podsets.FlavorPlacement({"gpu": "h100"}, (), (("berth.dev/tas", "uid-1"),))
    s = started("PyTorchJob")
    runs = [dataclasses.replace(r, placements=(placed,)) for r in s.runs]
    integ = INTEGRATIONS["PyTorchJob"]
    job = copy.deepcopy(pytorch_job())
    job["metadata"]["uid"] = "uid-1"
    running = merge.merge_patch(job, integ.start_patch(job, s.originals, runs))
    assert job_sync.divergences(running, s.originals, runs, integ) == []


# The Job webhook: counts per pod set, fail closed ----------------------------------------------


def _state(counts: dict[str, int]) -> job_updates.WorkloadState:
    return job_updates.WorkloadState(
        exists_unfinished=True, holds_quota=True, admitted=True, admitted_counts=counts
    )


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateCase:
    id: str
    kind: str
    change: Callable[[Body], Body]
    refused: list[str]
    says: str = ""


UPDATE_CASES = [
    UpdateCase(
        "a TFJob's replicas moved from PS to Worker",
        "TFJob",
        lambda j: _set(
            _set(j, ["spec", "tfReplicaSpecs", "PS", "replicas"], 0),
            ["spec", "tfReplicaSpecs", "Worker", "replicas"],
            7,
        ),
        ["spec.tfReplicaSpecs[Worker].replicas"],
        "pod set worker is admitted for 1 pod(s)",
    ),
    UpdateCase(
        "a TFJob's PS lowered",
        "TFJob",
        lambda j: _set(j, ["spec", "tfReplicaSpecs", "PS", "replicas"], 2),
        [],
    ),
    UpdateCase(
        "a RayCluster's groups shuffled",
        "RayCluster",
        lambda j: _set(
            _set(j, [*RAY_GROUP, "replicas"], 0), ["spec", "workerGroupSpecs", 1, "replicas"], 7
        ),
        ["spec.workerGroupSpecs[1]"],
        "pod set gpu is admitted for 1 pod(s)",
    ),
    UpdateCase(
        "a RayCluster's worker group raised by minReplicas",
        "RayCluster",
        lambda j: _set(j, ["spec", "workerGroupSpecs", 1, "minReplicas"], 8),
        ["spec.workerGroupSpecs[1]"],
        "raising it to 8",
    ),
    UpdateCase(
        "a running RayCluster switched to the in-tree autoscaler with bigger workers",
        "RayCluster",
        lambda j: _set(
            _set(j, ["spec", "enableInTreeAutoscaling"], True),
            ["spec", "workerGroupSpecs", 1, "template"],
            template(8, "ray"),
        ),
        ["spec.enableInTreeAutoscaling"],
        "would not have accepted",
    ),
    UpdateCase(
        "a running RayCluster's worker group renamed head",
        "RayCluster",
        lambda j: _set(j, ["spec", "workerGroupSpecs", 1, "groupName"], "head"),
        ["spec.workerGroupSpecs[1].groupName"],
        "the name of another role",
    ),
    UpdateCase(
        "a running RayCluster given a new worker group",
        "RayCluster",
        lambda j: _set(
            j,
            ["spec", "workerGroupSpecs"],
            [
                *j["spec"]["workerGroupSpecs"],
                {"groupName": "extra", "replicas": 1, "template": template(1, "ray")},
            ],
        ),
        ["spec.workerGroupSpecs[2]", "spec"],
        "pod set extra is new",
    ),
]


def _two_groups() -> Body:
    return ray_cluster(
        {"groupName": "cpu", "replicas": 6, "template": template(0, "ray")},
        {"groupName": "gpu", "replicas": 1, "template": template(1, "ray")},
    )


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: c.id)
def test_a_running_jobs_update_is_checked_pod_set_by_pod_set_and_fails_closed(
    case: UpdateCase,
) -> None:
    s = started(case.kind, _two_groups() if case.kind == "RayCluster" else None)
    admitted = _state({r.name: r.count for r in s.runs})
    problems = job_updates.refusals(s.job, case.change(s.job), admitted, INTEGRATIONS[case.kind])
    assert [p.path for p in problems] == case.refused, problems
    assert case.says in " ".join(p.message for p in problems)


def test_a_queued_job_may_not_be_made_one_berth_would_refuse_to_create() -> None:
    """Fail closed while queued too: its Workload would follow a job it cannot read."""
    integ = INTEGRATIONS["RayCluster"]
    queued = ray_cluster()
    queued["metadata"]["uid"] = "uid-1"
    autoscaled = _set(queued, ["spec", "enableInTreeAutoscaling"], True)
    pending = job_updates.WorkloadState(exists_unfinished=True)
    assert [p.path for p in job_updates.refusals(queued, autoscaled, pending, integ)] == [
        "spec.enableInTreeAutoscaling"
    ]
    # One stored invalid past the webhook may still be suspended, labelled or deleted.
    assert (
        job_updates.refusals(
            autoscaled, _set(autoscaled, ["metadata", "annotations"], {"a": "b"}), pending, integ
        )
        == []
    )


# KubeRay's sizing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "pods"),
    [
        ({}, 1),
        ({"replicas": 3}, 3),
        ({"replicas": 1, "minReplicas": 8}, 8),
        ({"replicas": 9, "maxReplicas": 4}, 4),
        ({"replicas": 1, "minReplicas": 8, "maxReplicas": 4}, 8),
        ({"replicas": 2, "numOfHosts": 4}, 8),
        ({"replicas": 2, "suspend": True}, 0),
    ],
)
def test_a_worker_group_counts_the_pods_kuberay_runs_for_it(group: Body, pods: int) -> None:
    # KubeRay's GetWorkerGroupDesiredReplicas (ray-operator/controllers/ray/utils/util.go).
    assert ray.group_count(group) == pods


# The /scale webhook ----------------------------------------------------------------------------

SCALE_CONFIG = configuration.Configuration(
    integrations=configuration.Integrations(
        frameworks=[configuration.Framework.PYTORCHJOB, configuration.Framework.TFJOB]
    )
)


def _scale_review(replicas: int, resource: str = "pytorchjobs") -> Body:
    return {
        "uid": "r1",
        "operation": "UPDATE",
        "subResource": "scale",
        "resource": {"group": "kubeflow.org", "version": "v1", "resource": resource},
        "namespace": "ml",
        "name": "train",
        "object": {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": replicas}},
    }


def _world_with_admitted_pytorchjob() -> tuple[world_mod.World, Body]:
    world = world_mod.World(SCALE_CONFIG, lambda: 0.0)
    s = started("PyTorchJob")
    job = {**s.job, "metadata": {**s.job["metadata"], "resourceVersion": "3"}}
    integ = world.integrations["PyTorchJob"]
    new, problems = workload_body.new_workload(integ, pytorch_job(), world.classes(), uid="uid-1")
    assert new is not None, problems
    body = new.body(job, integ)
    body["metadata"]["resourceVersion"] = "4"
    body["status"] = builders.admitted_status("cq", {"master": 1, "worker": 2}, {GPU: "h100"})
    world.apply("PyTorchJob", job)
    world.apply("Workload", body)
    return world, job


@pytest.mark.parametrize(("replicas", "allowed"), [(12, False), (2, True), (1, True)])
def test_scaling_an_admitted_pytorchjob_is_its_own_update_at_that_size(
    replicas: int, allowed: bool
) -> None:
    world, job = _world_with_admitted_pytorchjob()
    answer = job_admission.validate_scale(world, _scale_review(replicas), job)
    assert answer["allowed"] is allowed, answer
    if not allowed:
        message = answer["status"]["message"]
        assert "spec.pytorchReplicaSpecs[Worker].replicas" in message
        assert "admitted for 2 pod(s)" in message


def test_the_scale_webhook_is_registered_for_the_kinds_with_a_scale_subresource() -> None:
    world = world_mod.World(SCALE_CONFIG, lambda: 0.0)
    validating = configurations.build(
        configurations.Url("https://h:1", ""), world.config, world.integrations
    )[1]
    [hook] = [h for h in validating["webhooks"] if h["name"] == "vjob-scale.berth.dev"]
    assert [r["resources"] for r in hook["rules"]] == [["pytorchjobs/scale"]]  # TFJob has none
    assert "objectSelector" not in hook  # a Scale has no labels to select on
    assert hook["rules"][0]["operations"] == ["UPDATE"]
