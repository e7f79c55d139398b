"""What the default scheduler does with GPU Jobs on fake GPU nodes, with no Berth in the way.

A Job that fits runs and completes. A Job that does not fit starts as many pods as there are free
GPUs and leaves the rest pending while the started ones hold their GPUs: the partial start that
Berth's gang admission exists to prevent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from berth.devtools.devcluster import kwok

GPU_POOLS = (
    # The same pools as the gpu_cluster fixture's, restated so the test says what it expects.
    kwok.NodePool(name="a100", nodes=2),
    kwok.NodePool(name="h100", nodes=2),
)
if TYPE_CHECKING:
    from collections.abc import Callable

    from berth.devtools.devcluster import kubectl, launcher

pytestmark = pytest.mark.e2e


def gpu_job(
    name: str,
    namespace: str,
    pods: int,
    *,
    runs_for: str,
    pool: str | None = None,
    tolerations: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Return a Job of ``pods`` parallel pods of one GPU each, which kwok runs for ``runs_for``."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "train",
                "image": "registry.invalid/train:never-pulled",
                "resources": {"limits": {kwok.GPU_RESOURCE: "1"}},
            }
        ],
    }
    if pool is not None:
        spec["nodeSelector"] = {kwok.POOL_LABEL: pool}
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": kwok.pod_timing(runs_for)},
                "spec": spec,
            },
        },
    }


def pods_by_phase(client: kubectl.Kubectl, namespace: str, job: str) -> dict[str, list[Any]]:
    listing = client.json("get", "pods", "-n", namespace, "-l", f"job-name={job}")
    phases: dict[str, list[Any]] = {}
    for pod in listing["items"]:
        phases.setdefault(pod["status"].get("phase", "Unknown"), []).append(pod)
    return phases


def test_a_gpu_job_that_fits_runs_on_the_tolerated_pool_and_completes(
    gpu_cluster: launcher.ControlPlane,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
) -> None:
    client = gpu_cluster.kubectl()
    namespace = new_namespace(gpu_cluster, "fits")
    toleration = {"key": "berth.dev/flavor", "operator": "Equal", "value": "h100"}
    client.apply(
        [
            gpu_job(
                "fits",
                namespace,
                4,
                runs_for="2s",
                pool="h100",
                tolerations=[{**toleration, "effect": "NoSchedule"}],
            )
        ]
    )
    client.run(
        "wait",
        "--for=condition=Complete",
        "job/fits",
        "-n",
        namespace,
        "--timeout=120s",
        timeout=150,
    )
    succeeded = pods_by_phase(client, namespace, "fits").get("Succeeded", [])
    assert len(succeeded) == 4
    assert {pod["spec"]["nodeName"].rsplit("-", 1)[0] for pod in succeeded} == {"h100"}


def test_a_job_larger_than_the_free_gpus_starts_partially_and_holds_them(
    control_plane_factory: Callable[..., launcher.ControlPlane],
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
) -> None:
    cluster = control_plane_factory(
        "six-gpus",
        scheduling=True,
        node_pools=(kwok.NodePool(name="small", nodes=3, gpus_per_node=2),),
    )
    client = cluster.kubectl()
    namespace = new_namespace(cluster, "partial")
    client.apply([gpu_job("eight", namespace, 8, runs_for="1h")])

    def six_running_two_pending() -> bool:
        phases = pods_by_phase(client, namespace, "eight")
        return len(phases.get("Running", [])) == 6 and len(phases.get("Pending", [])) == 2

    wait_until(six_running_two_pending, timeout=90)
    phases = pods_by_phase(client, namespace, "eight")
    for pod in phases["Pending"]:
        scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["status"] == "False"
        assert scheduled["reason"] == "Unschedulable"
        assert f"Insufficient {kwok.GPU_RESOURCE}" in scheduled["message"]
    # Nothing frees a GPU: the six started pods keep theirs and the Job never completes.
    job = client.json("get", "job", "eight", "-n", namespace)
    assert job["status"].get("active") == 8
    assert not job["status"].get("succeeded")


def test_every_fake_node_renews_its_lease_so_it_stays_ready(
    gpu_cluster: launcher.ControlPlane,
) -> None:
    client = gpu_cluster.kubectl()
    nodes = {n["metadata"]["name"] for n in client.json("get", "nodes")["items"]}
    leases = client.json("get", "leases", "-n", "kube-node-lease")["items"]
    renewed = {lease["metadata"]["name"] for lease in leases if lease["spec"].get("renewTime")}
    assert nodes == {f"{pool.name}-{i}" for pool in GPU_POOLS for i in range(pool.nodes)}
    assert renewed >= nodes
