"""The operator end to end: real apiserver, controller-manager, scheduler and kwok GPU nodes.

Each test gets its own namespace, flavors and ClusterQueues (names carry the namespace), so the
tests share one operator and one cluster without seeing each other's quota.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from berth.devtools.devcluster import errors, kwok, launcher
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
    workload_of,
)

pytestmark = pytest.mark.e2e
A100 = kwok.A100_LABELS
Wait = Callable[..., None]


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    items = get(plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _job_complete(plane: launcher.ControlPlane, ns: str, job: str) -> bool:
    conds = get(plane, "job", job, "-n", ns).get("status", {}).get("conditions", [])
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conds)


def _reserved_gpus(plane: launcher.ControlPlane, cq: str) -> int:
    status = get(plane, "clusterqueue", cq).get("status", {})
    total = 0
    for f in status.get("flavorsReservation", []):
        for r in f["resources"]:
            total += int(r["total"])
    return total


def _setup(plane: launcher.ControlPlane, objs: list[dict[str, Any]]) -> None:
    plane.kubectl().apply(objs)


def test_queued_job_is_suspended_admitted_started_on_flavor_and_releases_quota(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "one")
    _setup(
        gpu_cluster,
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}),
            local_queue("lq", ns, f"{ns}-cq"),
        ],
    )
    created = gpu_cluster.kubectl().run(
        "create",
        "-o",
        "jsonpath={.spec.suspend}",
        "-f",
        "-",
        stdin=_yaml(gpu_job("train", ns, "lq", 4, runs_for="4s")),
    )
    assert created == "true", "the mutating webhook suspends a queued Job at creation"
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "train"), "Admitted").get("status") == "True"
        ),
        timeout=30,
    )
    # The job controller starts the Job once it sees the admission: a moment after it.
    wait_until(
        lambda: not get(gpu_cluster, "job", "train", "-n", ns)["spec"]["suspend"], timeout=30
    )
    job = get(gpu_cluster, "job", "train", "-n", ns)
    assert job["spec"]["template"]["spec"]["nodeSelector"] == A100
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 4, timeout=30)
    nodes = {p["spec"]["nodeName"] for p in _pods(gpu_cluster, ns, "train")}
    assert all(n.startswith("a100-") for n in nodes)
    wait_until(lambda: _job_complete(gpu_cluster, ns, "train"), timeout=60)
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "train"), "Finished").get("status") == "True"
        ),
        timeout=30,
    )
    wait_until(
        lambda: (
            get(gpu_cluster, "clusterqueue", f"{ns}-cq").get("status", {}).get("reservingWorkloads")
            == 0
            and _reserved_gpus(gpu_cluster, f"{ns}-cq") == 0
        ),
        timeout=30,
    )


def test_gang_of_eight_creates_no_pod_until_eight_fit(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "gang")
    _setup(
        gpu_cluster,
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}),
            local_queue("lq", ns, f"{ns}-cq"),
        ],
    )
    gpu_cluster.kubectl().create([gpu_job("small", ns, "lq", 2, runs_for="10s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "small") == 2, timeout=30)
    gpu_cluster.kubectl().create([gpu_job("gang", ns, "lq", 8, runs_for="30s")])
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "gang"), "QuotaReserved").get("reason")
            == "WaitingForQuota"
        ),
        timeout=30,
    )
    # While 6 GPUs are free the gang makes no pod at all. Pods are read before the small Job's
    # state, so a gang pod seen there must mean the small Job had completed by the second read.
    while True:
        gang_pods = _pods(gpu_cluster, ns, "gang")
        if _job_complete(gpu_cluster, ns, "small"):
            break
        assert gang_pods == []
        time.sleep(0.5)
    wait_until(lambda: running_pods(gpu_cluster, ns, "gang") == 8, timeout=60)
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def test_unsuspending_a_queued_job_is_denied(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "deny")
    _setup(
        gpu_cluster,
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 2}),
            local_queue("lq", ns, f"{ns}-cq"),
        ],
    )
    gpu_cluster.kubectl().create([gpu_job("big", ns, "lq", 4, runs_for="5s")])
    wait_until(lambda: workload_of(gpu_cluster, ns, "big") != {}, timeout=30)
    with pytest.raises(errors.CommandError) as denied:
        gpu_cluster.kubectl().run(
            "patch", "job", "big", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
        )
    assert "setting spec.suspend to false by hand is not allowed" in str(denied.value)
    assert _pods(gpu_cluster, ns, "big") == []


def test_priority_preemption_suspends_victim_and_starts_preemptor(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "prio")
    _setup(
        gpu_cluster,
        [
            flavor(f"{ns}-a100", A100),
            priority_class(f"{ns}-low", 10),
            priority_class(f"{ns}-high", 100),
            cluster_queue(
                f"{ns}-cq",
                ns,
                {f"{ns}-a100": 4},
                preemption={"withinClusterQueue": "LowerPriority"},
            ),
            local_queue("lq", ns, f"{ns}-cq"),
        ],
    )
    gpu_cluster.kubectl().create(
        [gpu_job("low", ns, "lq", 4, runs_for="300s", priority=f"{ns}-low")]
    )
    wait_until(lambda: running_pods(gpu_cluster, ns, "low") == 4, timeout=30)
    gpu_cluster.kubectl().create(
        [gpu_job("high", ns, "lq", 4, runs_for="300s", priority=f"{ns}-high")]
    )
    wait_until(lambda: running_pods(gpu_cluster, ns, "high") == 4, timeout=60)
    low = workload_of(gpu_cluster, ns, "low")
    assert condition(low, "Preempted").get("reason") == "InClusterQueue"
    assert get(gpu_cluster, "job", "low", "-n", ns)["spec"]["suspend"] is True
    assert _pods(gpu_cluster, ns, "low") == []
    assert condition(low, "QuotaReserved").get("status") == "False"
    table = gpu_cluster.kubectl().run("get", "workloads,clusterqueues,localqueues", "-n", ns)
    for column in (
        "QUEUE",
        "RESERVED IN",
        "ADMITTED",
        "COHORT",
        "PENDING WORKLOADS",
        "CLUSTERQUEUE",
    ):
        assert column in table
    wait_until(
        lambda: (
            get(gpu_cluster, "clusterqueue", f"{ns}-cq")["status"].get("pendingWorkloads") == 1
            and get(gpu_cluster, "clusterqueue", f"{ns}-cq")["status"].get("admittedWorkloads") == 1
        ),
        timeout=15,
    )
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def test_cohort_borrowing_then_reclaim_by_preemption(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "cohort")
    gpu_cluster.kubectl().run("label", "namespace", ns, "team=both")
    rf = f"{ns}-a100"
    _setup(
        gpu_cluster,
        [
            flavor(rf, A100),
            cluster_queue(f"{ns}-a", ns, {rf: 4}, cohort=f"{ns}-co"),
            cluster_queue(
                f"{ns}-b", ns, {rf: 4}, cohort=f"{ns}-co", preemption={"reclaimWithinCohort": "Any"}
            ),
            local_queue("qa", ns, f"{ns}-a"),
            local_queue("qb", ns, f"{ns}-b"),
        ],
    )
    gpu_cluster.kubectl().create([gpu_job("borrower", ns, "qa", 8, runs_for="300s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "borrower") == 8, timeout=30)
    wait_until(lambda: _reserved_gpus(gpu_cluster, f"{ns}-a") == 8, timeout=15)
    # Read after the status shows the reservation: pods can run before the status writer's pass.
    usage = get(gpu_cluster, "clusterqueue", f"{ns}-a")
    borrowed = [
        r["borrowed"] for f in usage["status"]["flavorsReservation"] for r in f["resources"]
    ]
    assert borrowed == ["4"], "team a runs 8 GPUs on a quota of 4 by borrowing team b's idle 4"
    gpu_cluster.kubectl().create([gpu_job("owner", ns, "qb", 4, runs_for="300s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "owner") == 4, timeout=60)
    assert (
        condition(workload_of(gpu_cluster, ns, "borrower"), "Preempted").get("reason")
        == "InCohortReclamation"
    )
    assert _pods(gpu_cluster, ns, "borrower") == []
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")


def _estimated(
    job: dict[str, Any], *, expected: str | None = None, deadline: int | None = None
) -> dict[str, Any]:
    if expected is not None:
        job["metadata"]["annotations"] = {"berth.dev/expected-runtime": expected}
    if deadline is not None:
        job["spec"]["activeDeadlineSeconds"] = deadline
    return job


def test_backfill_keeps_the_blocked_gangs_reservation_and_fills_the_gap(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "backfill")
    rf = f"{ns}-a100"
    queue = cluster_queue(f"{ns}-cq", ns, {rf: 8})
    queue["spec"]["queueingStrategy"] = "Backfill"
    queue["spec"]["backfill"] = {"reservationDepth": 1, "defaultRuntime": "1h"}
    _setup(gpu_cluster, [flavor(rf, A100), queue, local_queue("lq", ns, f"{ns}-cq")])
    kubectl = gpu_cluster.kubectl()
    kubectl.create([_estimated(gpu_job("run", ns, "lq", 4, runs_for="40s"), expected="40s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "run") == 4, timeout=30)
    # The gang needs all 8 GPUs: it holds a reservation at the end of "run" (about 40 s on).
    kubectl.create([_estimated(gpu_job("big", ns, "lq", 8, runs_for="5s"), expected="10s")])
    wait_until(
        lambda: (
            "estimated start 20"
            in condition(workload_of(gpu_cluster, ns, "big"), "QuotaReserved").get("message", "")
        ),
        timeout=30,
    )
    # 4 GPUs are free: a Job bounded to 10 minutes would still run then; one of 5 s would not.
    # Creation times have whole seconds and equal ones are ordered by uid: a Job created in the
    # gang's second may be ahead of it. A second later it is behind it.
    time.sleep(1.1)
    kubectl.create([_estimated(gpu_job("long", ns, "lq", 4, runs_for="5s"), deadline=600)])
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "long"), "QuotaReserved").get("reason")
            == "WaitingForReservation"
        ),
        timeout=30,
    )
    long_wl = workload_of(gpu_cluster, ns, "long")
    assert long_wl["metadata"]["annotations"]["berth.dev/runtime-limit"] == "10m"
    assert "would delay the reservation of" in condition(long_wl, "QuotaReserved")["message"]
    kubectl.create([_estimated(gpu_job("short", ns, "lq", 4, runs_for="3s"), expected="5s")])
    wait_until(lambda: _job_complete(gpu_cluster, ns, "short"), timeout=30)
    assert not _job_complete(gpu_cluster, ns, "run"), "the short Job filled the gap before it"
    # When "run" ends, the gang starts first, then the long Job.
    wait_until(lambda: _job_complete(gpu_cluster, ns, "big"), timeout=90)
    wait_until(lambda: _job_complete(gpu_cluster, ns, "long"), timeout=60)
    started = {
        name: condition(workload_of(gpu_cluster, ns, name), "Admitted")["lastTransitionTime"]
        for name in ("big", "long")
    }
    assert started["big"] <= started["long"]
    kubectl.run("delete", "namespace", ns, "--wait=false")


def _yaml(obj: dict[str, Any]) -> str:
    import yaml  # noqa: PLC0415 - only this helper needs it

    return yaml.safe_dump(obj)


assert kwok.GPU_RESOURCE == "nvidia.com/gpu"
