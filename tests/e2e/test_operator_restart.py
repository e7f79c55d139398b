"""The operator killed with SIGKILL in the middle of a run, then started again (issue 6).

Kubernetes is the operator's only memory, so a new process must rebuild its quota accounting from
the Workloads' statuses and carry on: every Job completes, none runs twice at once, the quota is
never exceeded, and the ClusterQueue's usage ends at zero. A background thread samples the
namespace's pods throughout, since an overshoot may last only a moment.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

import pytest

from berth.devtools.devcluster import errors, kwok, launcher
from operator_env import (
    OperatorProcess,
    cluster_queue,
    flavor,
    get,
    gpu_job,
    local_queue,
    usage_is_zero,
)

pytestmark = pytest.mark.e2e
A100 = kwok.A100_LABELS
QUOTA = 6
JOBS = 100


class _PodSampler(threading.Thread):
    """Polls a namespace's pods; keeps the largest totals seen (pods that still hold a GPU)."""

    def __init__(self, plane: launcher.ControlPlane, namespace: str) -> None:
        super().__init__(daemon=True)
        self.plane = plane
        self.namespace = namespace
        self.halt = threading.Event()
        self.max_total = 0
        self.max_per_job: collections.Counter[str] = collections.Counter()
        self.parallelism: dict[str, int] = {}
        self.samples = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                self._sample()
                time.sleep(0.2)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            self.failure = e

    def _sample(self) -> None:
        try:
            pods = self.plane.kubectl().json("get", "pods", "-n", self.namespace)["items"]
        except errors.CommandError:
            return  # a failed read is no sample; the next one follows shortly
        per_job: collections.Counter[str] = collections.Counter()
        for pod in pods:
            # A pod holds its GPU from scheduling until it is gone, terminating or not.
            if pod["status"].get("phase") in {"Succeeded", "Failed"}:
                continue
            if not pod["spec"].get("nodeName"):
                continue
            per_job[pod["metadata"]["labels"].get("batch.kubernetes.io/job-name", "")] += 1
        self.max_total = max(self.max_total, sum(per_job.values()))
        for job, n in per_job.items():
            self.max_per_job[job] = max(self.max_per_job[job], n)
        self.samples += 1


def _completed(plane: launcher.ControlPlane, ns: str) -> int:
    done = 0
    for job in get(plane, "jobs", "-n", ns)["items"]:
        conds = (job.get("status") or {}).get("conditions") or []
        done += any(c["type"] == "Complete" and c["status"] == "True" for c in conds)
    return done


def _admitted(plane: launcher.ControlPlane, ns: str) -> int:
    admitted = 0
    for wl in get(plane, "workloads", "-n", ns)["items"]:
        conds = (wl.get("status") or {}).get("conditions") or []
        admitted += any(c["type"] == "Admitted" and c["status"] == "True" for c in conds)
    return admitted


def test_sigkill_mid_run_then_restart_completes_every_job_once_within_quota(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
) -> None:
    ns = new_namespace(gpu_cluster, "restart")
    cq = f"{ns}-cq"
    gpu_cluster.kubectl().apply(
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(cq, ns, {f"{ns}-a100": QUOTA}),
            local_queue("lq", ns, cq),
        ]
    )
    sampler = _PodSampler(gpu_cluster, ns)
    batch = []
    for i in range(JOBS):
        pods = 1 + i % 2
        job = gpu_job(f"job-{i:03d}", ns, "lq", pods, runs_for="2s")
        job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
        sampler.parallelism[f"job-{i:03d}"] = pods
        batch.append(job)
    sampler.start()
    try:
        gpu_cluster.kubectl().create(batch)
        # Kill it while Jobs are admitted and running, with most of the run still ahead.
        wait_until(lambda: _admitted(gpu_cluster, ns) >= 3, timeout=60)
        berth_operator.kill()
        killed_at_completed = _completed(gpu_cluster, ns)
        assert killed_at_completed < JOBS // 2, "the kill must land in the middle of the run"
        time.sleep(2)
        berth_operator.start()
        wait_until(lambda: _completed(gpu_cluster, ns) == JOBS, timeout=240, interval=1)
        wait_until(lambda: usage_is_zero(gpu_cluster, cq), timeout=30)
    finally:
        sampler.halt.set()
        sampler.join(timeout=10)
    assert sampler.failure is None, sampler.failure
    assert sampler.samples > 50
    assert sampler.max_total <= QUOTA, f"{sampler.max_total} GPUs held on a quota of {QUOTA}"
    twice = {
        job: n for job, n in sampler.max_per_job.items() if n > sampler.parallelism.get(job, 0)
    }
    assert twice == {}, f"Jobs with pods of two starts at once: {twice}"
    for job in get(gpu_cluster, "jobs", "-n", ns)["items"]:
        succeeded = (job.get("status") or {}).get("succeeded")
        assert succeeded == job["spec"]["completions"], job["metadata"]["name"]
    gpu_cluster.kubectl().run("delete", "namespace", ns, "--wait=false")
