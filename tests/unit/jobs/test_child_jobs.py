"""Which children of an integrated parent may run (``jobs.rules.child_jobs``), one row per rule.

A child runs on its parent's admission, so only the children the parent's controller makes may
run: under a name the controller gives, and no larger than the controller makes them (pods at
once, requests per pod, the admitted flavor's node selector). Rows cover the JobSet's child
Jobs and the RayJob's RayCluster and submitter Job, as their controllers make them and as a user
could forge them, and parents that make no jobs at all.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import builders
from berth.api import configuration
from berth.jobs import registry
from berth.jobs.framework import protocol
from berth.jobs.rules import child_jobs

JOB = registry.make(configuration.Framework.BATCH_JOB)
RAYCLUSTER = registry.make(configuration.Framework.RAYCLUSTER)
A100 = {"gpu": "a100"}


def jobset(*, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    return (
        builders.JobSetBuilder("train", "team")
        .queue("lq")
        .replicated_job(
            "workers",
            replicas=2,
            parallelism=4,
            requests={"nvidia.com/gpu": "1", "cpu": "2"},
            node_selector=node_selector,
        )
        .replicated_job("driver", requests={"cpu": "1"})
        .set("metadata.uid", "js-uid")
        .obj()
    )


def job_child(
    name: str = "train-workers-0",
    *,
    parallelism: int = 4,
    requests: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    b = (
        builders.JobBuilder(name, "team")
        .parallelism(parallelism)
        .requests(requests or {"nvidia.com/gpu": "1", "cpu": "2"})
    )
    if node_selector is not None:
        b.node_selector(node_selector)
    return b.obj()


def pod_template(gpus: int = 0) -> dict[str, Any]:
    limits = {"cpu": "1", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {
        "spec": {
            "containers": [{"name": "ray", "image": "ray:2.9", "resources": {"limits": limits}}]
        }
    }


def cluster_spec(replicas: int = 2, gpus: int = 1) -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": pod_template()},
        "workerGroupSpecs": [
            {"groupName": "gpu", "replicas": replicas, "template": pod_template(gpus)}
        ],
    }


def rayjob(cluster_name: str = "train-x7k2p", **spec: Any) -> dict[str, Any]:
    status = {"rayClusterName": cluster_name} if cluster_name else {}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "train", "namespace": "ml", "uid": "rj-uid"},
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": cluster_spec(),
            **spec,
        },
        "status": status,
    }


def ray_cluster(name: str = "train-x7k2p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {**cluster_spec(), **spec},
    }


def with_sidecar(cluster: dict[str, Any], cpu: str = "500m") -> dict[str, Any]:
    out = copy.deepcopy(cluster)
    containers = out["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    containers.append(
        {"name": "ray-job-submitter", "resources": {"requests": {"cpu": cpu, "memory": "200Mi"}}}
    )
    return out


def submitter_job(name: str = "train", cpu: str = "500m") -> dict[str, Any]:
    return builders.JobBuilder(name, "ml").requests({"cpu": cpu, "memory": "200Mi"}).obj()


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    parent: dict[str, Any]
    child: dict[str, Any]
    kind: protocol.Integration
    want: str | None
    """A part of the refusal, or None: the child may run."""


ROWS = [
    Row("jobset-child-as-made", jobset(), job_child(), JOB, None),
    Row("jobset-last-index", jobset(), job_child("train-workers-1"), JOB, None),
    Row("jobset-smaller-child", jobset(), job_child(parallelism=2), JOB, None),
    Row(
        "jobset-other-role",
        jobset(),
        job_child("train-driver-0", parallelism=1, requests={"cpu": "1"}),
        JOB,
        None,
    ),
    Row(
        "jobset-index-past-replicas",
        jobset(),
        job_child("train-workers-2"),
        JOB,
        "makes the Jobs train-workers-0 to train-workers-1, train-driver-0; train-workers-2 is",
    ),
    Row("jobset-made-up-name", jobset(), job_child("train-extra-0"), JOB, "none of them"),
    Row("jobset-not-an-index", jobset(), job_child("train-workers-x"), JOB, "none of them"),
    Row(
        "jobset-more-pods",
        jobset(),
        job_child(parallelism=64),
        JOB,
        "pod set main: 64 pods at once, more than the 4 made",
    ),
    Row(
        "jobset-more-gpus-per-pod",
        jobset(),
        job_child(requests={"nvidia.com/gpu": "8", "cpu": "2"}),
        JOB,
        "requests nvidia.com/gpu 8 per pod, more than the 1 made",
    ),
    Row(
        "jobset-a-resource-the-role-lacks",
        jobset(),
        job_child("train-driver-0", parallelism=1, requests={"cpu": "1", "nvidia.com/gpu": "1"}),
        JOB,
        "requests nvidia.com/gpu 1 per pod, more than the 0 made",
    ),
    Row(
        "jobset-child-keeps-the-flavor",
        jobset(node_selector=A100),
        job_child(node_selector={**A100, "zone": "a"}),
        JOB,
        None,
    ),
    Row(
        "jobset-child-drops-the-flavor",
        jobset(node_selector=A100),
        job_child(),
        JOB,
        "spec.template.spec.nodeSelector must keep gpu: a100",
    ),
    Row(
        "jobset-child-on-another-flavor",
        jobset(node_selector=A100),
        job_child(node_selector={"gpu": "h100"}),
        JOB,
        "nodeSelector must keep gpu: a100",
    ),
    Row(
        "jobset-makes-no-rayclusters",
        jobset(),
        ray_cluster("train-workers-0"),
        RAYCLUSTER,
        "makes Jobs only",
    ),
    Row("rayjob-cluster-as-made", rayjob(), ray_cluster(), RAYCLUSTER, None),
    Row(
        "rayjob-cluster-under-another-name",
        rayjob(),
        ray_cluster("train-extra"),
        RAYCLUSTER,
        "named in its status.rayClusterName (train-x7k2p); train-extra is not it",
    ),
    Row(
        "rayjob-cluster-before-kuberay-named-one",
        rayjob(cluster_name=""),
        ray_cluster(),
        RAYCLUSTER,
        "has named no RayCluster yet (status.rayClusterName)",
    ),
    Row(
        "rayjob-cluster-with-more-workers",
        rayjob(),
        ray_cluster(workerGroupSpecs=cluster_spec(replicas=16)["workerGroupSpecs"]),
        RAYCLUSTER,
        "pod set gpu: 16 pods at once, more than the 2 made",
    ),
    Row(
        "rayjob-cluster-with-bigger-workers",
        rayjob(),
        ray_cluster(workerGroupSpecs=cluster_spec(gpus=8)["workerGroupSpecs"]),
        RAYCLUSTER,
        "pod set gpu: requests nvidia.com/gpu 8 per pod, more than the 1 made",
    ),
    Row(
        "rayjob-cluster-with-a-group-of-its-own",
        rayjob(),
        ray_cluster(
            workerGroupSpecs=[
                *cluster_spec()["workerGroupSpecs"],
                {"groupName": "more", "replicas": 1, "template": pod_template(1)},
            ]
        ),
        RAYCLUSTER,
        "pod set more: its controller makes no such pod set",
    ),
    Row(
        "sidecar-mode-head-runs-kuberays-submitter",
        rayjob(submissionMode="SidecarMode"),
        with_sidecar(ray_cluster()),
        RAYCLUSTER,
        None,
    ),
    Row(
        "sidecar-larger-than-kuberays",
        rayjob(submissionMode="SidecarMode"),
        with_sidecar(ray_cluster(), cpu="8"),
        RAYCLUSTER,
        "pod set head: requests cpu 9 per pod, more than the 1500m made",
    ),
    Row(
        "a-head-sidecar-without-sidecar-mode",
        rayjob(),
        with_sidecar(ray_cluster()),
        RAYCLUSTER,
        "pod set head: requests cpu 1500m per pod",
    ),
    Row("rayjob-default-submitter", rayjob(), submitter_job(), JOB, None),
    Row(
        "rayjob-submitter-under-another-name",
        rayjob(),
        submitter_job("train-2"),
        JOB,
        "submits with one Job, named train",
    ),
    Row(
        "rayjob-larger-submitter",
        rayjob(),
        submitter_job(cpu="16"),
        JOB,
        "pod set main: requests cpu 16 per pod, more than the 500m made",
    ),
    Row(
        "rayjob-given-submitter-template",
        rayjob(submitterPodTemplate=pod_template(gpus=1)),
        builders.JobBuilder("train", "ml").requests({"cpu": "1", "nvidia.com/gpu": "1"}).obj(),
        JOB,
        None,
    ),
    Row(
        "http-mode-has-no-submitter-job",
        rayjob(submissionMode="HTTPMode"),
        submitter_job(),
        JOB,
        "KubeRay makes no Job for RayJob ml/train",
    ),
    Row(
        "a-raycluster-makes-no-jobs",
        {**ray_cluster("dev"), "metadata": {"name": "dev", "namespace": "ml"}},
        submitter_job("dev"),
        JOB,
        "a RayCluster's controller makes no jobs",
    ),
    Row(
        "a-pytorchjob-makes-no-jobs",
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "t"}},
        submitter_job("t"),
        JOB,
        "a PyTorchJob's controller makes no jobs",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_which_children_may_run(row: Row) -> None:
    parent_kind = next(i for i in registry.EVERY_KIND if i.kind == row.parent["kind"])
    got = child_jobs.refusal(row.parent, row.child, row.kind, parent_kind)
    if row.want is None:
        assert got is None
    else:
        assert got is not None
        assert row.want in got
