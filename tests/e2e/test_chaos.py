"""Chaos: 200 gang Jobs through operator kills and API server and etcd restarts.

The operator is SIGKILLed three times, kube-apiserver restarted twice and etcd killed once, at
seeded random moments; an invariant sampler reads the cluster throughout.

Two teams' ClusterQueues share a cohort (5 + 5 GPUs of quota on 16 GPUs of nodes, so quota, not
capacity, is what holds the line); gangs of 1 to 8 pods need to borrow; an urgent priority
class preempts. The sampler (every 0.3 s, as an admin, skipping samples while the API is down)
checks the invariants Berth exists for:

1. a pod of a queued Job exists only while its Workload reserves quota (seen twice in a row, so
   that two lists read a moment apart cannot make one up);
2. GPUs held by pods never exceed the cohort's quota (10);
3. never two Workloads for one Job;
4. no Job runs more pods than its admission counts (no gang partly outside its admission).

At the end every Job completed, both ClusterQueues' usage is zero, and no invariant was broken.
The seed is printed; ``BERTH_CHAOS_SEED`` replays a run.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from berth.devtools.devcluster import errors, kwok, launcher
from operator_env import (
    ROOT,
    OperatorProcess,
    cluster_queue,
    flavor,
    get,
    gpu_job,
    local_queue,
    priority_class,
    usage_is_zero,
)

pytestmark = pytest.mark.e2e
JOBS = 200
QUOTA = 5
"""Nominal GPUs per team; the cohort holds 2 x QUOTA."""
GANGS = (1, 1, 2, 2, 3, 4, 6, 8)
FAULTS = ("operator", "operator", "operator", "kube-apiserver", "kube-apiserver", "etcd")


@dataclasses.dataclass(slots=True)
class Violation:
    at: float
    what: str


class Sampler(threading.Thread):
    """Reads Workloads then pods of both namespaces; records every broken invariant."""

    def __init__(self, plane: launcher.ControlPlane, namespaces: list[str]) -> None:
        super().__init__(daemon=True)
        self.plane = plane
        self.namespaces = namespaces
        self.halt = threading.Event()
        self.started = time.monotonic()
        self.samples = 0
        self.skipped = 0
        self.max_gpus = 0
        self.violations: list[Violation] = []
        self.failure: BaseException | None = None
        self._suspects: set[str] = set()

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                self._sample()
                time.sleep(0.3)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            self.failure = e

    def _list(self, kind: str) -> list[dict[str, Any]]:
        """Both namespaces' objects of a kind from one list: one snapshot, at one revision.

        (A list per namespace is two moments: a gang finishing in one namespace and another
        starting in the other between the two reads would add up to more than the quota.)
        """
        items = self.plane.kubectl().json("get", kind, "--all-namespaces")["items"]
        return [i for i in items if i["metadata"].get("namespace") in self.namespaces]

    def _reserved(self, workloads: list[dict[str, Any]], now: float) -> dict[str, int]:
        """Pods each Job's admission counts, by Job uid; records Jobs with two Workloads."""
        reserved: dict[str, int] = {}
        per_job: collections.Counter[str] = collections.Counter()
        for wl in workloads:
            if wl["metadata"].get("deletionTimestamp"):
                continue
            owner = next(
                (r["uid"] for r in wl["metadata"].get("ownerReferences", []) if r["kind"] == "Job"),
                None,
            )
            if owner is None:
                continue
            per_job[owner] += 1
            admission = (wl.get("status") or {}).get("admission")
            if admission:
                reserved[owner] = sum(
                    int(a.get("count") or 0) for a in admission.get("podSetAssignments") or []
                )
        self.violations += [
            Violation(now, f"{n} Workloads for Job {uid}") for uid, n in per_job.items() if n > 1
        ]
        return reserved

    def _sample(self) -> None:
        try:
            workloads = self._list("workloads")
            pods = self._list("pods")
        except errors.CommandError:
            self.skipped += 1  # the API server is restarting: no sample
            return
        now = time.monotonic() - self.started
        reserved = self._reserved(workloads, now)
        gpus = 0
        holders: collections.Counter[str] = collections.Counter()
        running: collections.Counter[str] = collections.Counter()
        suspects: set[str] = set()
        for pod in pods:
            if pod["status"].get("phase") in {"Succeeded", "Failed"}:
                continue
            job_uid = pod["metadata"].get("labels", {}).get("batch.kubernetes.io/controller-uid")
            if job_uid is None:
                continue
            if pod["spec"].get("nodeName"):
                gpus += 1
                holders[_holder(pod, job_uid in reserved)] += 1
            running[job_uid] += 1
            if job_uid not in reserved:
                suspects.add(pod["metadata"]["name"])
        # Seen in two samples in a row: a pod of a Job whose Workload reserved no quota.
        self.violations += [
            Violation(now, f"pod {name} runs without its Workload's quota")
            for name in sorted(suspects & self._suspects)
        ]
        self._suspects = suspects
        self.violations += [
            Violation(now, f"Job {uid} runs {n} pods, admitted for {reserved[uid]}")
            for uid, n in running.items()
            if uid in reserved and n > reserved[uid]
        ]
        if gpus > 2 * QUOTA:
            held = ", ".join(f"{h}: {n}" for h, n in sorted(holders.items()))
            self.violations.append(
                Violation(now, f"{gpus} GPUs held on a quota of {2 * QUOTA} ({held})")
            )
        self.max_gpus = max(self.max_gpus, gpus)
        self.samples += 1


def _holder(pod: dict[str, Any], reserved: bool) -> str:
    """Who holds a bound pod's GPU, as a violation names it: Job, pod phase, and state."""
    meta = pod["metadata"]
    job = meta.get("labels", {}).get("job-name", "?")
    state = "terminating" if meta.get("deletionTimestamp") else pod["status"].get("phase")
    return f"{meta['namespace']}/{job} {state}{'' if reserved else ' unreserved'}"


def _completed(plane: launcher.ControlPlane, namespaces: list[str]) -> int:
    done = 0
    for ns in namespaces:
        try:
            jobs = get(plane, "jobs", "-n", ns)["items"]
        except errors.CommandError:
            return -1
        for job in jobs:
            conds = (job.get("status") or {}).get("conditions") or []
            done += any(c["type"] == "Complete" and c["status"] == "True" for c in conds)
    return done


def _jobs(rng: random.Random, namespaces: list[str]) -> list[dict[str, Any]]:
    out = []
    for i in range(JOBS):
        ns = namespaces[i % 2]
        urgent = rng.random() < 0.15
        job = gpu_job(
            f"job-{i:03d}",
            ns,
            "lq",
            rng.choice(GANGS),
            runs_for=f"{rng.choice((1, 1, 2))}s",
            priority="urgent" if urgent else "normal",
        )
        job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
        out.append(job)
    return out


def test_chaos_keeps_every_invariant_and_finishes_every_job(
    control_plane_factory: Callable[..., launcher.ControlPlane],
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
    tmp_path: Path,
) -> None:
    seed = int(os.environ.get("BERTH_CHAOS_SEED") or random.SystemRandom().randrange(10**6))
    rng = random.Random(seed)  # noqa: S311 - a test's schedule, printed so a run can be replayed
    print(f"\nchaos seed {seed} (BERTH_CHAOS_SEED={seed} replays it)")  # noqa: T201 - the figures
    plane = control_plane_factory("chaos", scheduling=True, node_pools=(kwok.A100_POOL,))
    admin = plane.kubectl()
    admin.run("apply", "-f", str(ROOT / "crds"))
    admin.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    operator = OperatorProcess(plane, tmp_path / "operator.log")
    operator.start()
    namespaces = [new_namespace(plane, "chaos-a"), new_namespace(plane, "chaos-b")]
    preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    queues: list[dict[str, Any]] = [
        flavor("chaos-a100", dict(kwok.A100_LABELS)),
        priority_class("normal", 10),
        priority_class("urgent", 100),
    ]
    for team, ns in zip("ab", namespaces, strict=True):
        queues += [
            cluster_queue(
                f"chaos-{team}", ns, {"chaos-a100": QUOTA}, cohort="chaos", preemption=preemption
            ),
            local_queue("lq", ns, f"chaos-{team}"),
        ]
    admin.apply(queues)
    sampler = Sampler(plane, namespaces)
    faults = list(FAULTS)
    rng.shuffle(faults)
    moments = sorted(rng.uniform(5, 75) for _ in faults)
    injected: list[tuple[float, str]] = []
    started = time.monotonic()
    sampler.start()
    try:
        admin.create(_jobs(rng, namespaces))
        for moment, fault in zip(moments, faults, strict=True):
            time.sleep(max(0.0, moment - (time.monotonic() - started)))
            injected.append((round(time.monotonic() - started, 1), fault))
            if fault == "operator":
                operator.kill()
                time.sleep(rng.uniform(0.5, 3))
                operator.start(timeout=120)
            else:
                plane.restart(fault, kill=fault == "etcd")
        wait_until(lambda: _completed(plane, namespaces) == JOBS, timeout=600, interval=2)
        wait_until(
            lambda: usage_is_zero(plane, "chaos-a") and usage_is_zero(plane, "chaos-b"),
            timeout=60,
        )
    finally:
        sampler.halt.set()
        sampler.join(timeout=10)
        operator.stop()
    took = time.monotonic() - started
    print(  # noqa: T201 - the run's figures, for docs/reliability.md
        f"chaos: {JOBS} Jobs completed in {took:.0f} s; faults at {injected}; "
        f"{sampler.samples} samples ({sampler.skipped} skipped while the API was down); "
        f"max GPUs held {sampler.max_gpus} of {2 * QUOTA}; violations {len(sampler.violations)}"
    )
    assert sampler.failure is None, sampler.failure
    assert len(injected) == len(FAULTS)
    assert sampler.samples > 100
    assert sampler.violations == [], sampler.violations[:20]
    assert "Traceback" not in operator.log.read_text(errors="replace")
