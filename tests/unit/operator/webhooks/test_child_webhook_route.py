"""The job webhooks' route decides a held-back child again on its parent as stored now.

KubeRay writes the cluster's name in the RayJob's status just before it makes the cluster, so
the operator's watch may not have that status yet when the cluster's creation reaches the
webhook. The route (``operator.webhooks.routes.app``) then reads the parent fresh and decides again:
KubeRay's own cluster runs, while a cluster under another name stays suspended either way.
Served by aiohttp's test server, with a parent reader standing in for the API.
"""

from __future__ import annotations

from typing import Any

from aiohttp import test_utils, web

import builders
from berth.api import configuration
from berth.jobs import trainjob
from berth.jobs.framework import workload_body
from berth.jobs.rules import job_sync
from berth.operator import world as world_mod
from berth.operator.webhooks import routes

CONFIG = configuration.Configuration(
    integrations=configuration.Integrations(
        frameworks=[configuration.Framework.RAYJOB, configuration.Framework.RAYCLUSTER]
    )
)
UID = "rj-uid"


def pod_template(gpus: int) -> dict[str, Any]:
    limits = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
    return {"spec": {"containers": [{"name": "ray", "resources": {"limits": limits}}]}}


def rayjob(cluster_name: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": UID,
            "resourceVersion": "5",
            "labels": {"berth.dev/queue-name": "lq"},
        },
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "headGroupSpec": {"template": pod_template(0)},
                "workerGroupSpecs": [
                    {"groupName": "gpu", "replicas": 2, "template": pod_template(1)}
                ],
            },
        },
        "status": {"rayClusterName": cluster_name} if cluster_name else {},
    }


def admitted_workload(world: world_mod.World) -> dict[str, Any]:
    job = rayjob(None)
    integ = world.integration(job)
    new, problems = workload_body.new_workload(integ, job, world.classes(), uid=UID)
    assert new is not None, problems
    body = new.body(job, integ)
    body["metadata"]["resourceVersion"] = "6"
    body["status"] = builders.admitted_status(
        "cq", {"head": 1, "gpu": 2, "submitter": 1}, {"nvidia.com/gpu": "a100"}
    )
    return body


def review(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """An AdmissionReview creating ``obj``."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "r1", "kind": {"kind": kind}, "operation": "CREATE", "object": obj},
    }


async def post(app: web.Application, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The route's answer to one review."""
    async with test_utils.TestClient(test_utils.TestServer(app)) as client:
        response = await client.post(path, json=body)
        answer: dict[str, Any] = (await response.json())["response"]
        return answer


def cluster_create(name: str) -> dict[str, Any]:
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {"berth.dev/queue-name": "lq", "ray.io/originated-from-crd": "RayJob"},
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayJob",
                    "name": "train",
                    "uid": UID,
                    "controller": True,
                }
            ],
        },
        "spec": rayjob(None)["spec"]["rayClusterSpec"],
    }
    return review("RayCluster", cluster)


async def serve(
    world: world_mod.World, body: dict[str, Any], stored: dict[str, Any] | None
) -> tuple[dict[str, Any], list[tuple[job_sync.Parent, str]]]:
    """The mutating answer, and which parents the route read from the API."""
    reads: list[tuple[job_sync.Parent, str]] = []

    async def read_parent(ref: job_sync.Parent, namespace: str) -> dict[str, Any] | None:
        reads.append((ref, namespace))
        return stored

    return await post(routes.app(world, read_parent), "/mutate-job", body), reads


def world_with_stale_rayjob() -> world_mod.World:
    world = world_mod.World(CONFIG, lambda: 0.0)
    world.apply("RayJob", rayjob(None))  # as watched before KubeRay named its cluster
    world.apply("Workload", admitted_workload(world))
    return world


async def test_kuberays_cluster_runs_once_the_parent_is_read_fresh() -> None:
    world = world_with_stale_rayjob()
    answer, reads = await serve(world, cluster_create("train-x7k2p"), rayjob("train-x7k2p"))
    assert answer["allowed"]
    assert "patch" not in answer
    assert [(r.kind, r.name, r.uid, ns) for r, ns in reads] == [("RayJob", "train", UID, "ml")]


async def test_a_cluster_under_another_name_stays_suspended() -> None:
    world = world_with_stale_rayjob()
    answer, reads = await serve(world, cluster_create("train-mine"), rayjob("train-x7k2p"))
    assert answer["allowed"]
    assert "patch" in answer
    assert "train-mine is not it" in answer["warnings"][0]
    assert len(reads) == 1


async def test_a_parent_gone_from_the_api_leaves_the_cluster_suspended() -> None:
    world = world_with_stale_rayjob()
    answer, reads = await serve(world, cluster_create("train-x7k2p"), None)
    assert "patch" in answer
    assert "status.rayClusterName" in answer["warnings"][0]
    assert len(reads) == 1


async def test_a_parent_seen_up_to_date_needs_no_read() -> None:
    world = world_mod.World(CONFIG, lambda: 0.0)
    world.apply("RayJob", rayjob("train-x7k2p"))
    world.apply("Workload", admitted_workload(world))
    answer, reads = await serve(world, cluster_create("train-x7k2p"), None)
    assert answer["allowed"]
    assert "patch" not in answer
    assert reads == []


TRAINER_CONFIG = configuration.Configuration(
    integrations=configuration.Integrations(
        frameworks=[configuration.Framework.JOBSET, configuration.Framework.TRAINJOB]
    )
)
RUNTIME = {
    "apiVersion": trainjob.API_VERSION,
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch", "resourceVersion": "2"},
    "spec": {
        "mlPolicy": {"numNodes": 1},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {trainjob.ANCESTOR_LABEL: "trainer"}},
                            "spec": {"template": pod_template(1)},
                        },
                    }
                ]
            }
        },
    },
}


def trainjob_create(runtime: str) -> dict[str, Any]:
    job = {
        "apiVersion": trainjob.API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ml", "labels": {"berth.dev/queue-name": "lq"}},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 2}},
    }
    return review("TrainJob", job)


async def validate_trainjob(
    world: world_mod.World, body: dict[str, Any], stored: dict[str, Any] | None
) -> tuple[dict[str, Any], int]:
    """The validating answer, and how many runtimes the route read from the API."""
    reads = []

    async def read_runtime(job: dict[str, Any]) -> bool:
        reads.append(job["spec"]["runtimeRef"]["name"])
        if stored is None:
            return False
        world.apply(stored["kind"], stored)
        return True

    return await post(routes.app(world, None, read_runtime), "/validate-job", body), len(reads)


async def test_a_trainjob_whose_runtime_the_watch_lacks_is_decided_on_a_fresh_read() -> None:
    world = world_mod.World(TRAINER_CONFIG, lambda: 0.0)
    answer, reads = await validate_trainjob(world, trainjob_create("torch"), RUNTIME)
    assert answer["allowed"]
    assert reads == 1
    assert (
        world.integrations["TrainJob"].pod_count(trainjob_create("torch")["request"]["object"]) == 2
    )


async def test_a_trainjob_naming_no_runtime_is_refused_naming_the_field() -> None:
    world = world_mod.World(TRAINER_CONFIG, lambda: 0.0)
    answer, reads = await validate_trainjob(world, trainjob_create("nowhere"), None)
    assert not answer["allowed"]
    assert (
        "spec.runtimeRef: ClusterTrainingRuntime nowhere does not exist"
        in answer["status"]["message"]
    )
    assert reads == 1
    # Known runtimes need no read.
    world.apply("ClusterTrainingRuntime", RUNTIME)
    answer, reads = await validate_trainjob(world, trainjob_create("torch"), None)
    assert answer["allowed"]
    assert reads == 0
