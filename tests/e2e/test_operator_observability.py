"""What the operator reports about a run of Jobs: Events, a Prometheus scrape, history, report.

One run on the real control plane — two low-priority Jobs admitted, a third waiting for quota,
a high-priority Job preempting the first two, everything finishing — and then every channel is
checked against figures computed here, independently, from what the API server shows: the
Kubernetes Events the operator posted on the Workloads, and every version of the Workloads as a
`kubectl get -w` watch delivered them (creation, QuotaReserved and Requeued transition times).
The channels: the `/metrics` exposition parsed as Prometheus would, the history rows of every
transition, and `berth report --format json`.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import parser

from berth.adapters import history
from berth.adapters.history import store
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    get,
    gpu_job,
    history_run,
    local_queue,
    priority_class,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
BERTH = str(Path(sys.executable).with_name("berth"))
JOBS = ("low-a", "low-b", "low-c", "high")
TOLERANCE = 2.0
"""Seconds between an Event's timestamp and the condition written with it (both whole
seconds, taken a moment apart)."""


class WorkloadWatch:
    """``kubectl get workloads -w -o json`` in a namespace: every version, in order."""

    def __init__(self, plane: launcher.ControlPlane, ns: str, out: Path) -> None:
        self.out = out
        self.sink = out.open("wb")
        kubectl = plane.kubectl()
        self.process = subprocess.Popen(  # noqa: S603 - argv built here
            [
                str(kubectl.binary),
                f"--kubeconfig={kubectl.kubeconfig}",
                "get",
                "workloads",
                "-n",
                ns,
                "-w",
                "-o",
                "json",
            ],
            stdout=self.sink,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> list[dict[str, Any]]:
        """Stop watching; every version seen (the initial list first)."""
        self.process.terminate()
        self.process.wait(timeout=10)
        self.sink.close()
        text, decoder, at = self.out.read_text(), json.JSONDecoder(), 0
        versions: list[dict[str, Any]] = []
        while at < len(text):
            if text[at].isspace():
                at += 1
                continue
            obj, at = decoder.raw_decode(text, at)
            versions.extend(obj["items"] if obj.get("kind") == "List" else [obj])
        return versions


def waits_from_versions(versions: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per Workload, each admission's wait as Kueue's QueuedWaitTime defines it.

    From the Workload's creation, or from its latest Requeued=True transition, to its
    QuotaReserved=True transition.
    """
    since: dict[str, float] = {}
    admitted: dict[str, bool] = {}
    waits: dict[str, list[float]] = collections.defaultdict(list)
    for wl in versions:
        name = wl["metadata"]["name"]
        since.setdefault(name, _stamp(wl["metadata"]["creationTimestamp"]))
        requeued = condition(wl, "Requeued")
        if requeued.get("status") == "True":
            since[name] = _stamp(requeued["lastTransitionTime"])
        now_admitted = condition(wl, "Admitted").get("status") == "True"
        if now_admitted and not admitted.get(name, False):
            reserved = _stamp(condition(wl, "QuotaReserved")["lastTransitionTime"])
            waits[name].append(reserved - since[name])
        admitted[name] = now_admitted
    return waits


def _job(name: str, ns: str, pods: int, runs_for: str, priority: str) -> dict[str, Any]:
    job = gpu_job(name, ns, "lq", pods, runs_for=runs_for, priority=priority)
    # kwok keeps a deleted pod for its grace period; a preempted Job should stop at once.
    job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    return job


def _stamp(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def _events(plane: launcher.ControlPlane, ns: str) -> dict[str, list[tuple[str, float, str]]]:
    """The operator's Events per Workload: (reason, time, message), oldest first."""
    out: dict[str, list[tuple[str, float, str]]] = collections.defaultdict(list)
    for e in get(plane, "events", "-n", ns)["items"]:
        if e["involvedObject"].get("kind") != "Workload":
            continue
        when = e.get("lastTimestamp") or e.get("eventTime")
        out[e["involvedObject"]["name"]].append((e["reason"], _stamp(when), e["message"]))
    return {k: sorted(v, key=lambda x: x[1]) for k, v in out.items()}


def _scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - a loopback http URL
        text = resp.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = collections.defaultdict(list)
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            samples[s.name].append((dict(s.labels), float(s.value)))
    return samples


def _value(
    samples: dict[str, list[tuple[dict[str, str], float]]], series: str, **labels: str
) -> float:
    return sum(
        v for got, v in samples.get(series, []) if all(got.get(k) == w for k, w in labels.items())
    )


def _history(url: str, ns: str) -> tuple[store.RunData, list[history.Record]]:
    data = history_run(url)
    return data, [r for r in data.events if r.namespace == ns]


def _all_finished(plane: launcher.ControlPlane, ns: str) -> bool:
    return all(
        condition(workload_of(plane, ns, job), "Finished").get("status") == "True" for job in JOBS
    )


def _finished_events(plane: launcher.ControlPlane, ns: str) -> int:
    return sum(r == "Finished" for evs in _events(plane, ns).values() for r, _t, _m in evs)


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of the four Jobs, as the API server shows it once all finished."""

    ns: str
    cq: str
    rf: str
    name_of: dict[str, str]
    """Job -> its Workload's name."""
    created: dict[str, float]
    """Workload -> creation time."""
    events: dict[str, list[tuple[str, float, str]]]
    waits: dict[str, list[float]]
    """Workload -> each admission's wait, from the watched versions."""

    def key(self, job: str) -> str:
        return f"{self.ns}/{self.name_of[job]}"

    @property
    def admissions(self) -> int:
        return sum(len(w) for w in self.waits.values())

    @property
    def all_waits(self) -> list[float]:
        return sorted(w for each in self.waits.values() for w in each)


def _play(
    plane: launcher.ControlPlane, new_namespace: Callable[..., str], wait_until: Wait, out: Path
) -> Run:
    """Two low-priority Jobs fill the queue, a third waits, a high one preempts the first two."""
    ns = new_namespace(plane, "obs")
    cq, rf = f"{ns}-cq", f"{ns}-a100"
    watch = WorkloadWatch(plane, ns, out)
    kubectl = plane.kubectl()
    kubectl.apply(
        [
            flavor(rf, kwok.A100_LABELS),
            cluster_queue(cq, ns, {rf: 4}, preemption={"withinClusterQueue": "LowerPriority"}),
            local_queue("lq", ns, cq),
            priority_class(f"{ns}-low", 10),
            priority_class(f"{ns}-high", 1000),
        ]
    )
    kubectl.apply(
        [_job("low-a", ns, 2, "8s", f"{ns}-low"), _job("low-b", ns, 2, "8s", f"{ns}-low")]
    )
    wait_until(
        lambda: all(
            condition(workload_of(plane, ns, j), "Admitted").get("status") == "True"
            for j in ("low-a", "low-b")
        ),
        timeout=30,
    )
    kubectl.apply([_job("low-c", ns, 2, "2s", f"{ns}-low")])
    wait_until(
        lambda: (
            condition(workload_of(plane, ns, "low-c"), "QuotaReserved").get("reason")
            == "WaitingForQuota"
        ),
        timeout=30,
    )
    kubectl.apply([_job("high", ns, 4, "3s", f"{ns}-high")])
    wait_until(lambda: _all_finished(plane, ns), timeout=120)
    versions = watch.stop()
    wait_until(lambda: _finished_events(plane, ns) == len(JOBS), timeout=30)
    wls = {job: workload_of(plane, ns, job) for job in JOBS}
    return Run(
        ns=ns,
        cq=cq,
        rf=rf,
        name_of={job: wl["metadata"]["name"] for job, wl in wls.items()},
        created={
            wl["metadata"]["name"]: _stamp(wl["metadata"]["creationTimestamp"])
            for wl in wls.values()
        },
        events=_events(plane, ns),
        waits=waits_from_versions(versions),
    )


def _check_events(run: Run) -> None:
    reasons = {wl: collections.Counter(r for r, _t, _m in evs) for wl, evs in run.events.items()}
    for job in ("low-a", "low-b"):
        got = reasons[run.name_of[job]]
        assert (got["Preempted"], got["QuotaReserved"]) == (1, 2), run.events[run.name_of[job]]
    for job in ("low-c", "high"):
        got = reasons[run.name_of[job]]
        assert (got["Preempted"], got["QuotaReserved"]) == (0, 1), run.events[run.name_of[job]]
    for wl in run.name_of.values():
        assert reasons[wl]["Admitted"] == reasons[wl]["QuotaReserved"] == len(run.waits[wl])
        assert reasons[wl]["Finished"] == 1
    messages = [m for evs in run.events.values() for r, _t, m in evs if r == "Preempted"]
    assert all(run.name_of["high"] in m for m in messages), messages
    assert run.admissions == 6


def _check_metrics(run: Run, url: str, wait_until: Wait) -> None:
    samples = _scrape(url)
    cq, n = run.cq, run.admissions
    assert _value(samples, "berth_admitted_workloads_total", cluster_queue=cq) == n
    assert _value(samples, "berth_admission_wait_time_seconds_count", cluster_queue=cq) == n
    assert _value(samples, "berth_admission_wait_time_seconds_sum", cluster_queue=cq) == (
        pytest.approx(sum(run.all_waits))
    )
    assert _value(samples, "berth_finished_workloads_total", cluster_queue=cq) == len(JOBS)
    evicted = _value(samples, "berth_evicted_workloads_total", cluster_queue=cq, reason="Preempted")
    assert evicted == 2
    preempted = _value(
        samples,
        "berth_preempted_workloads_total",
        preempting_cluster_queue=cq,
        reason="InClusterQueue",
    )
    assert preempted == 2
    lq_admitted = _value(
        samples, "berth_local_queue_admitted_workloads_total", name="lq", namespace=run.ns
    )
    assert lq_admitted == n
    assert _value(samples, "berth_admission_attempts_total", result="success") >= 1

    def gauges_settled() -> bool:
        now = _scrape(url)
        return (
            _value(
                now,
                "berth_cluster_queue_nominal_quota",
                cluster_queue=cq,
                flavor=run.rf,
                resource=kwok.GPU_RESOURCE,
            )
            == 4
            and _value(now, "berth_pending_workloads", cluster_queue=cq) == 0
            and _value(now, "berth_admitted_active_workloads", cluster_queue=cq) == 0
            and _value(now, "berth_cluster_queue_status", cluster_queue=cq, status="active") == 1
        )

    wait_until(gauges_settled, timeout=15)


def _check_history(run: Run, url: str, wait_until: Wait) -> store.RunData:
    wait_until(
        lambda: sum(r.kind == "Finished" for r in _history(url, run.ns)[1]) == len(JOBS),
        timeout=30,
    )
    data, rows = _history(url, run.ns)
    start = data.run.started_at.timestamp()
    by_wl: dict[str, list[history.Record]] = collections.defaultdict(list)
    for r in sorted(rows, key=lambda r: r.t):
        by_wl[r.workload].append(r)
    for job in ("low-a", "low-b"):
        kinds = [r.kind.value for r in by_wl[run.key(job)]]
        # Preempted and Evicted are one transition (the same instant); their order is free.
        assert sorted(kinds[2:4]) == ["Evicted", "Preempted"], kinds
        assert kinds[:2] + kinds[4:] == ["Queued", "Admitted", "Requeued", "Admitted", "Finished"]
        preempted = next(r for r in by_wl[run.key(job)] if r.kind == "Preempted")
        assert (preempted.by, preempted.reason) == (run.key("high"), "InClusterQueue")
        assert next(r for r in by_wl[run.key(job)] if r.kind == "Evicted").reason == "Preempted"
        assert next(r for r in by_wl[run.key(job)] if r.kind == "Requeued").reason == "Preempted"
    for job in ("low-c", "high"):
        assert [r.kind.value for r in by_wl[run.key(job)]] == ["Queued", "Admitted", "Finished"]
    for job, wl in run.name_of.items():
        high = job == "high"
        admitted = [r for r in by_wl[run.key(job)] if r.kind == "Admitted"]
        reserved = [t for reason, t, _m in run.events[wl] if reason == "QuotaReserved"]
        assert [r.wait_seconds for r in admitted] == pytest.approx(run.waits[wl])
        for row, t in zip(admitted, reserved, strict=True):
            assert abs(start + row.t - t) <= TOLERANCE
            assert (row.cluster_queue, row.local_queue) == (run.cq, "lq")
            assert row.flavors == {"main": {kwok.GPU_RESOURCE: run.rf}}
            assert row.resources == {run.rf: {kwok.GPU_RESOURCE: 4 if high else 2}}
            assert row.priority == (1000 if high else 10)
            assert row.priority_class == f"{run.ns}-{'high' if high else 'low'}"
        assert start + by_wl[run.key(job)][0].t == pytest.approx(run.created[wl])
    quotas = {(q.flavor, q.resource, q.nominal) for q in data.quotas if q.cluster_queue == run.cq}
    assert quotas == {(run.rf, kwok.GPU_RESOURCE, 4)}
    return data


def _check_report(run: Run, url: str) -> None:
    done = subprocess.run(  # noqa: S603 - the project's own entry point
        [BERTH, "report", "--db", url, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = {(q["kind"], q["name"]): q for q in json.loads(done.stdout)}
    waits = run.all_waits
    for kind, name in (("ClusterQueue", run.cq), ("LocalQueue", f"{run.ns}/lq")):
        fig = report[(kind, name)]
        assert (fig["admitted"], fig["finished"], fig["preempted"]) == (run.admissions, 4, 2)
        assert fig["preemptionsPer100Admissions"] == pytest.approx(100 * 2 / run.admissions)
        assert fig["waitMax"] == pytest.approx(waits[-1])
        # Nearest rank, as the report defines its percentiles.
        assert fig["waitP50"] == pytest.approx(waits[(len(waits) + 1) // 2 - 1])


def test_a_run_of_jobs_is_evented_scraped_recorded_and_reported(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    run = _play(gpu_cluster, new_namespace, wait_until, tmp_path / "workloads.json")
    _check_events(run)
    _check_metrics(run, berth_operator.metrics_url(), wait_until)
    _check_history(run, berth_operator.history_url, wait_until)
    _check_report(run, berth_operator.history_url)
