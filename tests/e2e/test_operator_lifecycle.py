"""The operator's workload lifecycle end to end: HoldAndDrain, spec.active, priority class values.

Each test has its own namespace, flavor and ClusterQueue, and shares the session's operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from berth.adapters.devcluster import launcher
from operator_env import (
    OperatorProcess,
    cluster_queue,
    flavor,
    gpu_job,
    local_queue,
    priority_class,
)

pytestmark = pytest.mark.e2e
A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
Wait = Callable[..., None]


def _get(plane: launcher.ControlPlane, *args: str) -> Any:
    return plane.kubectl().json("get", *args)


def _workload_of(plane: launcher.ControlPlane, ns: str, job: str) -> dict[str, Any]:
    for wl in _get(plane, "workloads", "-n", ns)["items"]:
        if any(r.get("name") == job for r in wl["metadata"].get("ownerReferences", [])):
            return wl  # type: ignore[no-any-return]
    return {}


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions", []):
        if c["type"] == kind:
            return c  # type: ignore[no-any-return]
    return {}


def _running(plane: launcher.ControlPlane, ns: str, job: str) -> int:
    items = _get(plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    return sum(
        1
        for p in items
        if not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") == "Running"
    )


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> int:
    return len(_get(plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"])


def _queue(plane: launcher.ControlPlane, ns: str, gpus: int, **kw: Any) -> str:
    cq = f"{ns}-cq"
    plane.kubectl().apply(
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(cq, ns, {f"{ns}-a100": gpus}, **kw),
            local_queue("lq", ns, cq),
        ]
    )
    return cq


def _merge(plane: launcher.ControlPlane, *target: str, patch: str) -> None:
    plane.kubectl().run("patch", *target, "--type=merge", "-p", patch)


def test_hold_and_drain_evicts_running_job_and_resuming_runs_it_again(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "drain")
    cq = _queue(gpu_cluster, ns, 4)
    gpu_cluster.kubectl().create([gpu_job("train", ns, "lq", 2, runs_for="300s")])
    wait_until(lambda: _running(gpu_cluster, ns, "train") == 2, timeout=30)
    _merge(gpu_cluster, "clusterqueue", cq, patch='{"spec":{"stopPolicy":"HoldAndDrain"}}')
    wait_until(lambda: _pods(gpu_cluster, ns, "train") == 0, timeout=30)
    wl = _workload_of(gpu_cluster, ns, "train")
    assert _condition(wl, "Evicted").get("reason") == "ClusterQueueStopped"
    wait_until(
        lambda: (
            _condition(_workload_of(gpu_cluster, ns, "train"), "QuotaReserved").get("status")
            == "False"
        ),
        timeout=15,
    )
    assert _get(gpu_cluster, "job", "train", "-n", ns)["spec"]["suspend"] is True
    _merge(gpu_cluster, "clusterqueue", cq, patch='{"spec":{"stopPolicy":"None"}}')
    wait_until(lambda: _running(gpu_cluster, ns, "train") == 2, timeout=30)
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def test_deactivating_a_workload_stops_its_job_and_reactivating_starts_it(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "active")
    _queue(gpu_cluster, ns, 4)
    gpu_cluster.kubectl().create([gpu_job("train", ns, "lq", 2, runs_for="300s")])
    wait_until(lambda: _running(gpu_cluster, ns, "train") == 2, timeout=30)
    name = _workload_of(gpu_cluster, ns, "train")["metadata"]["name"]
    _merge(gpu_cluster, "workload", name, "-n", ns, patch='{"spec":{"active":false}}')
    wait_until(lambda: _pods(gpu_cluster, ns, "train") == 0, timeout=30)
    wait_until(
        lambda: (
            _condition(_workload_of(gpu_cluster, ns, "train"), "QuotaReserved").get("status")
            == "False"
        ),
        timeout=15,
    )
    assert _condition(_workload_of(gpu_cluster, ns, "train"), "Evicted")["reason"] == "Deactivated"
    _merge(gpu_cluster, "workload", name, "-n", ns, patch='{"spec":{"active":true}}')
    wait_until(lambda: _running(gpu_cluster, ns, "train") == 2, timeout=30)
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def test_priority_class_value_change_rewrites_priority_and_preempts(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "wpc")
    gpu_cluster.kubectl().apply([priority_class(f"{ns}-a", 10), priority_class(f"{ns}-b", 20)])
    _queue(gpu_cluster, ns, 4, preemption={"withinClusterQueue": "LowerPriority"})
    gpu_cluster.kubectl().create(
        [gpu_job("first", ns, "lq", 4, runs_for="300s", priority=f"{ns}-b")]
    )
    wait_until(lambda: _running(gpu_cluster, ns, "first") == 4, timeout=30)
    gpu_cluster.kubectl().create(
        [gpu_job("second", ns, "lq", 4, runs_for="300s", priority=f"{ns}-a")]
    )
    wait_until(lambda: _workload_of(gpu_cluster, ns, "second") != {}, timeout=30)
    _merge(gpu_cluster, "workloadpriorityclass", f"{ns}-a", patch='{"value":100}')
    wait_until(
        lambda: _workload_of(gpu_cluster, ns, "second")["spec"].get("priority") == 100,
        timeout=15,
    )
    wait_until(lambda: _running(gpu_cluster, ns, "second") == 4, timeout=60)
    assert _condition(_workload_of(gpu_cluster, ns, "first"), "Preempted")["status"] == "True"
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")
