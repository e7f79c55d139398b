"""The operator's workload lifecycle end to end: HoldAndDrain, spec.active, priority class values.

Each test has its own namespace, flavor and ClusterQueue, and shares the session's operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    get,
    gpu_job,
    local_queue,
    priority_class,
    running_pods,
    transitions,
    workload_of,
)

pytestmark = pytest.mark.e2e
A100 = kwok.A100_LABELS
Wait = Callable[..., None]


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> int:
    return len(get(plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"])


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
    berth_operator: OperatorProcess,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "drain")
    cq = _queue(gpu_cluster, ns, 4)
    gpu_cluster.kubectl().create([gpu_job("train", ns, "lq", 2, runs_for="300s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 2, timeout=30)
    _merge(gpu_cluster, "clusterqueue", cq, patch='{"spec":{"stopPolicy":"HoldAndDrain"}}')
    wait_until(lambda: _pods(gpu_cluster, ns, "train") == 0, timeout=30)
    wl = workload_of(gpu_cluster, ns, "train")
    assert condition(wl, "Evicted").get("reason") == "ClusterQueueStopped"
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "train"), "QuotaReserved").get("status")
            == "False"
        ),
        timeout=15,
    )
    assert get(gpu_cluster, "job", "train", "-n", ns)["spec"]["suspend"] is True
    released = workload_of(gpu_cluster, ns, "train")
    # As Kueue: Evicted stays True until the next admission; Requeued waits for the restart.
    assert condition(released, "Evicted")["status"] == "True"
    assert (
        condition(released, "Requeued")["status"],
        condition(released, "Requeued")["reason"],
    ) == (
        "False",
        "ClusterQueueStopped",
    )
    _merge(gpu_cluster, "clusterqueue", cq, patch='{"spec":{"stopPolicy":"None"}}')
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 2, timeout=30)
    wait_until(
        lambda: (
            ("Requeued", "ClusterQueueRestarted") in transitions(berth_operator.history_url, ns)
        ),
        timeout=15,
    )
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def test_deactivating_a_workload_stops_its_job_and_reactivating_starts_it(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "active")
    _queue(gpu_cluster, ns, 4)
    gpu_cluster.kubectl().create([gpu_job("train", ns, "lq", 2, runs_for="300s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 2, timeout=30)
    name = workload_of(gpu_cluster, ns, "train")["metadata"]["name"]
    _merge(gpu_cluster, "workload", name, "-n", ns, patch='{"spec":{"active":false}}')
    wait_until(lambda: _pods(gpu_cluster, ns, "train") == 0, timeout=30)
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "train"), "QuotaReserved").get("status")
            == "False"
        ),
        timeout=15,
    )
    assert condition(workload_of(gpu_cluster, ns, "train"), "Evicted")["reason"] == "Deactivated"
    _merge(gpu_cluster, "workload", name, "-n", ns, patch='{"spec":{"active":true}}')
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 2, timeout=30)
    wait_until(
        lambda: (
            [
                step
                for step in transitions(berth_operator.history_url, ns)
                if step[0] in {"Admitted", "Evicted", "Requeued", "Deactivated"}
            ]
            == [
                ("Admitted", "Admitted"),
                ("Deactivated", "Deactivated"),
                ("Evicted", "Deactivated"),
                ("Requeued", "Reactivated"),
                ("Admitted", "Admitted"),
            ]
        ),
        timeout=15,
    )
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
    wait_until(lambda: running_pods(gpu_cluster, ns, "first") == 4, timeout=30)
    gpu_cluster.kubectl().create(
        [gpu_job("second", ns, "lq", 4, runs_for="300s", priority=f"{ns}-a")]
    )
    wait_until(lambda: workload_of(gpu_cluster, ns, "second") != {}, timeout=30)
    _merge(gpu_cluster, "workloadpriorityclass", f"{ns}-a", patch='{"value":100}')
    wait_until(
        lambda: workload_of(gpu_cluster, ns, "second")["spec"].get("priority") == 100,
        timeout=15,
    )
    wait_until(lambda: running_pods(gpu_cluster, ns, "second") == 4, timeout=60)
    assert condition(workload_of(gpu_cluster, ns, "first"), "Preempted")["status"] == "True"
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def test_relabelling_a_pending_jobs_priority_class_reorders_the_queue(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    # As the scenario priority-class-job-label-change: the Workload takes the class the Job's
    # label names now, through the Workload webhook, and is admitted first.
    ns = new_namespace(gpu_cluster, "relabel")
    gpu_cluster.kubectl().apply(
        [
            priority_class(f"{ns}-low", 10),
            priority_class(f"{ns}-high", 100),
            priority_class(f"{ns}-urgent", 1000),
        ]
    )
    _queue(gpu_cluster, ns, 4)
    gpu_cluster.kubectl().create([gpu_job("blocker", ns, "lq", 4, runs_for="20s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "blocker") == 4, timeout=30)
    gpu_cluster.kubectl().create(
        [
            gpu_job("sweep-low", ns, "lq", 4, runs_for="300s", priority=f"{ns}-low"),
            gpu_job("sweep-high", ns, "lq", 4, runs_for="300s", priority=f"{ns}-high"),
        ]
    )
    wait_until(lambda: workload_of(gpu_cluster, ns, "sweep-low") != {}, timeout=30)
    gpu_cluster.kubectl().run(
        "label",
        "job",
        "sweep-low",
        "-n",
        ns,
        f"berth.dev/priority-class={ns}-urgent",
        "--overwrite",
    )
    wait_until(
        lambda: workload_of(gpu_cluster, ns, "sweep-low")["spec"].get("priority") == 1000,
        timeout=15,
    )
    ref = workload_of(gpu_cluster, ns, "sweep-low")["spec"]["priorityClassRef"]
    assert ref["name"] == f"{ns}-urgent"
    wait_until(lambda: running_pods(gpu_cluster, ns, "sweep-low") == 4, timeout=60)
    assert running_pods(gpu_cluster, ns, "sweep-high") == 0
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")
