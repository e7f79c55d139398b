"""Berth on a real kubelet: queued Jobs whose pods really run, are really stopped, really get ready.

Each test acts as an ordinary namespace user (a ServiceAccount token with a namespace Role) and
submits Jobs of ``berth.dev/busybox:1`` pods to a queue whose only capacity is the real node's 8
GPUs; the operator runs on the host (``real_operator``). What kwok fakes elsewhere is real here:
kube-scheduler binds against the kubelet's capacity, containerd starts and kills the containers,
exit codes are the shell's, readiness is the kubelet's probe, and a pod being stopped still holds
its GPUs until its container has exited.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import adversary
from berth.devtools.devcluster import images, kwok, launcher
from operator_env import (
    QUEUE_LABEL,
    cluster_queue,
    condition,
    flavor,
    get,
    local_queue,
    priority_class,
    workload_of,
)

pytestmark = pytest.mark.realnode

STAY_UP = 'trap "exit 0" TERM; sleep 3600 & wait'
"""A pod that runs until told to stop and then exits at once (PID 1 ignores an untrapped TERM)."""


def real_job(
    name: str,
    namespace: str,
    pods: int,
    script: str,
    *,
    gpus: int = 2,
    priority: str | None = None,
    readiness: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A queued Job of ``pods`` parallel pods of ``gpus`` GPUs each, running ``script`` in sh."""
    labels = {QUEUE_LABEL: "lq"}
    if priority is not None:
        labels["berth.dev/priority-class"] = priority
    container: dict[str, Any] = {
        "name": "train",
        "image": images.WORKLOAD_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script],
        "resources": {"limits": {kwok.GPU_RESOURCE: str(gpus)}},
    }
    if readiness is not None:
        container["readinessProbe"] = readiness
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 5,
                    "containers": [container],
                }
            },
        },
    }


def _time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value)


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get(
        plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}"
    )["items"]
    return items


def _started_at(pod: dict[str, Any]) -> dt.datetime | None:
    for status in (pod.get("status") or {}).get("containerStatuses", []):
        state = status.get("state", {})
        started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
        if started:
            return _time(started)
    return None


def _exit_codes(pod: dict[str, Any]) -> list[int]:
    return [
        s["state"]["terminated"]["exitCode"]
        for s in (pod.get("status") or {}).get("containerStatuses", [])
        if "terminated" in s.get("state", {})
    ]


def _queue(plane: launcher.ControlPlane, ns: str, **cq: Any) -> None:
    plane.kubectl().apply(
        [
            flavor(f"{ns}-a100", kwok.A100_LABELS),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}, **cq),
            local_queue("lq", ns, f"{ns}-cq"),
        ]
    )


@pytest.fixture
def user(
    real_cluster: launcher.ControlPlane,
    tmp_path: Path,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
) -> adversary.NamespaceUser:
    """A team member of a fresh namespace."""
    ns = new_namespace(real_cluster, "real")
    return adversary.namespace_user(real_cluster, ns, tmp_path)


@pytest.mark.usefixtures("real_operator")
def test_a_gang_waits_suspended_then_its_real_pods_start_together_and_exit_zero(
    real_cluster: launcher.ControlPlane,
    user: adversary.NamespaceUser,
    wait_until: Callable[..., None],
) -> None:
    ns = user.namespace
    # The job arrives before its queue exists: it must wait, suspended, with no pod started.
    user.apply(real_job("gang", ns, 4, "sleep 2; echo finished"))
    job = user.kubectl.json("get", "job", "gang", "-n", ns)
    assert job["spec"]["suspend"] is True, "the webhook suspends a queued Job at creation"
    wait_until(lambda: bool(workload_of(real_cluster, ns, "gang")), timeout=30)
    assert _pods(real_cluster, ns, "gang") == []
    _queue(real_cluster, ns)
    wait_until(
        lambda: (
            condition(workload_of(real_cluster, ns, "gang"), "Finished").get("status") == "True"
        ),
        timeout=120,
    )
    workload = workload_of(real_cluster, ns, "gang")
    admitted = _time(condition(workload, "Admitted")["lastTransitionTime"])
    pods = _pods(real_cluster, ns, "gang")
    assert len(pods) == 4
    assert all(p["spec"]["nodeName"] == "real-0" for p in pods)
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert [_exit_codes(p) for p in pods] == [[0]] * 4
    assert all(
        "finished" in user.kubectl.run("logs", p["metadata"]["name"], "-n", ns) for p in pods
    )
    starts = [s for s in map(_started_at, pods) if s is not None]
    assert len(starts) == 4
    # kube-scheduler binds all four at once; the containers start within a few seconds.
    assert max(starts) - min(starts) < dt.timedelta(seconds=10), starts
    print(  # noqa: T201 - the figure docs/install.md quotes
        f"\nadmission to all 4 real pods running: {(max(starts) - admitted).total_seconds():.1f}s"
    )


@pytest.mark.usefixtures("real_operator")
def test_a_preempted_jobs_real_pods_stop_before_the_preemptors_start(
    real_cluster: launcher.ControlPlane,
    user: adversary.NamespaceUser,
    wait_until: Callable[..., None],
) -> None:
    ns = user.namespace
    real_cluster.kubectl().apply(
        [priority_class(f"{ns}-low", 10), priority_class(f"{ns}-high", 1000)]
    )
    _queue(real_cluster, ns, preemption={"withinClusterQueue": "LowerPriority"})
    user.apply(real_job("low", ns, 4, STAY_UP, priority=f"{ns}-low"))
    wait_until(
        lambda: (
            sum(p["status"].get("phase") == "Running" for p in _pods(real_cluster, ns, "low")) == 4
        ),
        timeout=90,
    )
    user.apply(real_job("high", ns, 4, STAY_UP, priority=f"{ns}-high"))
    overlap: list[tuple[int, int]] = []

    def high_running() -> bool:
        low = [p for p in _pods(real_cluster, ns, "low") if p["status"].get("phase") == "Running"]
        high = [p for p in _pods(real_cluster, ns, "high") if _started_at(p) is not None]
        if low and high:
            overlap.append((len(low), len(high)))
        return len(high) == 4

    wait_until(high_running, timeout=120, interval=0.2)
    assert overlap == [], "a preemptor's container started while a victim's still ran"
    low = workload_of(real_cluster, ns, "low")
    assert condition(low, "Preempted").get("status") == "True"
    assert condition(low, "QuotaReserved").get("status") == "False"
    assert user.kubectl.json("get", "job", "low", "-n", ns)["spec"]["suspend"] is True
    user.kubectl.run("delete", "job", "high", "low", "-n", ns, "--cascade=foreground")


@pytest.mark.usefixtures("real_operator")
def test_pods_ready_counts_the_kubelets_readiness_and_evicts_a_job_that_never_gets_ready(
    real_cluster: launcher.ControlPlane,
    user: adversary.NamespaceUser,
    wait_until: Callable[..., None],
) -> None:
    ns = user.namespace
    _queue(real_cluster, ns)
    # A file in the container's own /tmp, not the host's.
    ready_after = {"exec": {"command": ["test", "-f", "/ready"]}, "periodSeconds": 1}
    user.apply(real_job("slow", ns, 2, f"sleep 4; touch /ready; {STAY_UP}", readiness=ready_after))
    user.apply(real_job("never", ns, 2, STAY_UP, readiness=ready_after))
    wait_until(
        lambda: (
            condition(workload_of(real_cluster, ns, "slow"), "PodsReady").get("status") == "True"
        ),
        timeout=60,
    )
    slow = workload_of(real_cluster, ns, "slow")
    became_ready = _time(condition(slow, "PodsReady")["lastTransitionTime"])
    admitted = _time(condition(slow, "Admitted")["lastTransitionTime"])
    # Ready only once the probe passed, after the 4 s the script sleeps.
    assert became_ready - admitted >= dt.timedelta(seconds=4)
    wait_until(
        lambda: (
            condition(workload_of(real_cluster, ns, "never"), "Evicted").get("reason")
            == "PodsReadyTimeout"
        ),
        timeout=60,
    )
    never = workload_of(real_cluster, ns, "never")
    assert condition(never, "PodsReady").get("status") == "False"
    wait_until(lambda: _pods(real_cluster, ns, "never") == [], timeout=60)
    assert condition(workload_of(real_cluster, ns, "slow"), "Evicted").get("status") != "True"
    user.kubectl.run("delete", "job", "slow", "-n", ns)
