"""Pods-ready timeouts end to end: evict, requeue after backoff, deactivate past the limit.

The test needs a short ``waitForPodsReady`` timeout, so it stops the session's operator, runs one
with its own Configuration file, and starts the session's operator again afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    gpu_job,
    local_queue,
    transitions,
    workload_of,
)

pytestmark = pytest.mark.e2e
A100 = kwok.A100_LABELS
CONFIGURATION = {
    "apiVersion": "berth.dev/v1beta1",
    "kind": "Configuration",
    "waitForPodsReady": {
        "timeout": "4s",
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffLimitCount": 1,
            "backoffBaseSeconds": 2,
            "backoffMaxSeconds": 10,
        },
    },
}


@pytest.fixture
def short_timeout_operator(
    gpu_cluster: launcher.ControlPlane, berth_operator: OperatorProcess, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """An operator with a 4 s pods-ready timeout in place of the session's, for one test."""
    config = tmp_path / "configuration.yaml"
    config.write_text(yaml.safe_dump(CONFIGURATION))
    berth_operator.stop()
    op = OperatorProcess(gpu_cluster, tmp_path / "operator.log", config=config)
    try:
        op.start()
        yield op
    finally:
        op.stop()
        berth_operator.start()


def test_pods_never_ready_evicted_requeued_with_backoff_then_deactivated(
    gpu_cluster: launcher.ControlPlane,
    short_timeout_operator: OperatorProcess,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
) -> None:
    ns = new_namespace(gpu_cluster, "ready")
    gpu_cluster.kubectl().apply(
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 4}),
            local_queue("lq", ns, f"{ns}-cq"),
        ]
    )
    job = gpu_job("stuck", ns, "lq", 2, runs_for="300s")
    # kwok keeps the pods Pending far longer than the timeout: they never become ready.
    job["spec"]["template"]["metadata"]["annotations"] = kwok.pod_timing("300s", "300s")
    job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    gpu_cluster.kubectl().create([job])
    wait_until(
        lambda: (
            (workload_of(gpu_cluster, ns, "stuck").get("status") or {})
            .get("requeueState", {})
            .get("count")
            == 1
        ),
        timeout=30,
    )
    first = workload_of(gpu_cluster, ns, "stuck")
    assert condition(first, "Evicted")["reason"] == "PodsReadyTimeout"
    assert condition(first, "Evicted")["status"] == "True", "Evicted stays True until readmitted"
    # Requeued after the 2 s backoff, admitted again, timed out again: past the limit of one.
    wait_until(
        lambda: workload_of(gpu_cluster, ns, "stuck")["spec"].get("active") is False,
        timeout=60,
    )
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "stuck"), "QuotaReserved").get("status")
            == "False"
        ),
        timeout=30,
    )
    final = workload_of(gpu_cluster, ns, "stuck")
    assert condition(final, "Evicted")["reason"] == "Deactivated"
    assert final["status"]["requeueState"]["count"] == 1
    assert gpu_cluster.kubectl().json("get", "job", "stuck", "-n", ns)["spec"]["suspend"] is True
    # Kueue's Requeued condition: False (PodsReadyTimeout) at release, True (BackoffFinished)
    # once the backoff is over, then the second admission; the history keeps each step.
    wait_until(
        lambda: ("Evicted", "Deactivated") in transitions(short_timeout_operator.history_url, ns),
        timeout=15,
    )
    steps = [
        step
        for step in transitions(short_timeout_operator.history_url, ns)
        if step[0] in {"Admitted", "Evicted", "Requeued", "Deactivated"}
    ]
    assert steps == [
        ("Admitted", "Admitted"),
        ("Evicted", "PodsReadyTimeout"),
        ("Requeued", "BackoffFinished"),
        ("Admitted", "Admitted"),
        ("Deactivated", "Deactivated"),
        ("Evicted", "Deactivated"),
    ], steps
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")
