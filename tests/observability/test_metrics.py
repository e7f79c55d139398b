import asyncio
import collections
import json
import pathlib
import re
import urllib.request
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from prometheus_client import parser

from berth.adapters import metrics
from berth.api import duration, quantity
from berth.entry import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reference" / "metrics.md"
DASHBOARD = ROOT / "config" / "grafana" / "berth.json"
SAMPLES = ("config/samples/queues.yaml", "config/samples/jobs.yaml")
_ROW = re.compile(r"^\| `(berth_[a-z_]+)` \| (\w+) \| ([^|]*) \|")


def _documented() -> dict[str, tuple[str, tuple[str, ...]]]:
    rows = {}
    for line in DOC.read_text().splitlines():
        m = _ROW.match(line)
        if m:
            labels = tuple(re.findall(r"`([a-z_]+)`", m.group(3)))
            rows[m.group(1)] = (m.group(2), labels)
    return rows


def _exported() -> dict[str, tuple[str, tuple[str, ...]]]:
    m = metrics.Metrics()
    out = {}
    for attr in vars(m).values():
        if attr is m.registry:
            continue
        for family in attr.collect():
            name = family.name + ("_total" if family.type == "counter" else "")
            out[name] = (family.type, tuple(attr._labelnames))
    return out


def test_every_metric_is_documented_with_its_type_and_labels() -> None:
    assert _exported() == _documented()


def test_every_series_is_in_the_registry() -> None:
    exported = {name.removesuffix("_total") for name in _exported()}
    assert set(metrics.Metrics().names()) == exported


def _families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    out: dict[str, list[tuple[str, dict[str, str], float]]] = collections.defaultdict(list)
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            out[family.name].append((sample.name, sample.labels, sample.value))
    return out


def _sum(
    fams: dict[str, list[tuple[str, dict[str, str], float]]],
    family: str,
    sample: str,
    keys: tuple[str, ...],
) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = collections.defaultdict(float)
    for name, labels, value in fams.get(family, []):
        if name == sample and value:
            out[tuple(labels[k] for k in keys)] += value
    return dict(out)


def _creation_times() -> dict[str, float]:
    jobs = yaml.safe_load_all((ROOT / SAMPLES[1]).read_text())
    return {
        f"{j['metadata']['namespace']}/{j['metadata']['name']}": duration.parse(
            j["metadata"]["annotations"]["sim.berth.dev/at"]
        )
        for j in jobs
        if j
    }


def _expected(lines: list[dict[str, Any]]) -> dict[str, dict[tuple[str, ...], float]]:
    """The counters, computed from the events alone."""
    created = _creation_times()
    lines = [line for line in lines if line["event"] != "Summary"]
    admitted_in: dict[str, str] = {}
    requeued: dict[str, float] = {}
    want: dict[str, dict[tuple[str, ...], float]] = collections.defaultdict(
        lambda: collections.defaultdict(float)
    )
    later_cq: dict[str, str] = {}
    for line in reversed(lines):
        if line["event"] == "Admitted":
            later_cq[line["workload"]] = line["clusterQueue"]
    for line in lines:
        event, wl = line["event"], str(line["workload"])
        if event == "Admitted":
            cq = str(line["clusterQueue"])
            admitted_in[wl] = cq
            want["admitted"][(cq,)] += 1
            # Kueue's QueuedWaitTime: since the latest requeue, else since creation.
            since = requeued.get(wl, created[str(line["job"])])
            want["wait_sum"][(cq,)] += float(line["t"]) - since
        elif event == "Requeued":
            requeued[wl] = float(line["t"])
        elif event == "Finished":
            want["finished"][(admitted_in[wl],)] += 1
        elif event == "Evicted":
            want["evicted"][(admitted_in[wl], str(line["reason"]))] += 1
        elif event == "Preempted":
            want["preempted"][(later_cq[str(line["by"])], str(line["reason"]))] += 1
    return {k: dict(v) for k, v in want.items()}


def _run(tmp_path: pathlib.Path, args: list[str]) -> tuple[list[dict[str, Any]], str]:
    out = tmp_path / "metrics.txt"
    result = CliRunner().invoke(cli.main, ["simulate", *SAMPLES, *args, "--metrics-out", str(out)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()], out.read_text()


def _nonzero(
    table: dict[str, dict[tuple[str, ...], float]],
) -> dict[str, dict[tuple[str, ...], float]]:
    kept = {k: {key: n for key, n in v.items() if n} for k, v in table.items()}
    return {k: v for k, v in kept.items() if v}


RUNS = [
    pytest.param([], id="whole run: everything finished"),
    pytest.param(["--until", "100s"], id="at 100s: one pending, seven running"),
]


@pytest.mark.parametrize("args", RUNS)
def test_simulated_counters_match_the_events(tmp_path: pathlib.Path, args: list[str]) -> None:
    lines, text = _run(tmp_path, args)
    fams = _families(text)
    want = _expected(lines)
    got = {
        "admitted": _sum(
            fams, "berth_admitted_workloads", "berth_admitted_workloads_total", ("cluster_queue",)
        ),
        "finished": _sum(
            fams, "berth_finished_workloads", "berth_finished_workloads_total", ("cluster_queue",)
        ),
        "evicted": _sum(
            fams,
            "berth_evicted_workloads",
            "berth_evicted_workloads_total",
            ("cluster_queue", "reason"),
        ),
        "preempted": _sum(
            fams,
            "berth_preempted_workloads",
            "berth_preempted_workloads_total",
            ("preempting_cluster_queue", "reason"),
        ),
        "wait_sum": _sum(
            fams,
            "berth_admission_wait_time_seconds",
            "berth_admission_wait_time_seconds_sum",
            ("cluster_queue",),
        ),
    }
    assert _nonzero(got) == _nonzero(want)
    counts = _sum(
        fams,
        "berth_admission_wait_time_seconds",
        "berth_admission_wait_time_seconds_count",
        ("cluster_queue",),
    )
    assert counts == want["admitted"]
    lq = _sum(
        fams,
        "berth_local_queue_admitted_workloads",
        "berth_local_queue_admitted_workloads_total",
        ("namespace", "name"),
    )
    assert sum(lq.values()) == sum(want["admitted"].values())
    cycles = _sum(fams, "berth_admission_attempts", "berth_admission_attempts_total", ("result",))
    assert 0 < cycles[("success",)] <= sum(want["admitted"].values())


@pytest.mark.parametrize("args", RUNS)
def test_simulated_gauges_match_the_summary(tmp_path: pathlib.Path, args: list[str]) -> None:
    lines, text = _run(tmp_path, args)
    summary = lines[-1]
    fams = _families(text)
    pending = _sum(fams, "berth_pending_workloads", "berth_pending_workloads", ("cluster_queue",))
    active = _sum(
        fams,
        "berth_admitted_active_workloads",
        "berth_admitted_active_workloads",
        ("cluster_queue",),
    )
    usage = {
        (labels["cluster_queue"], labels["flavor"], labels["resource"]): value
        for name, labels, value in fams["berth_cluster_queue_resource_usage"]
    }
    share = {
        labels["cluster_queue"]: value
        for _, labels, value in fams["berth_cluster_queue_weighted_share"]
    }
    for cq, body in summary["clusterQueues"].items():
        assert pending.get((cq,), 0) == body["pendingWorkloads"]
        assert active.get((cq,), 0) == body["admittedWorkloads"]
        assert share[cq] == body["weightedShare"]
        for flavor, amounts in body["usage"].items():
            for res, amount in amounts.items():
                canonical = quantity.parse(res, amount)
                want = canonical / 1000 if res == "cpu" else canonical
                assert usage[(cq, flavor, res)] == want


async def test_metrics_are_served_over_http_on_loopback() -> None:
    m = metrics.Metrics()
    m.report_cycle(admitted=1, seconds=0.002)
    server = await metrics.serve(m, host="127.0.0.1", port=0)
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        # A blocking client in a thread, as Prometheus is another process.
        text = await asyncio.to_thread(_fetch, url)
    finally:
        await server.close()
    fams = _families(text)
    assert _sum(
        fams, "berth_admission_attempts", "berth_admission_attempts_total", ("result",)
    ) == {("success",): 1.0}


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - a loopback http URL
        return str(resp.read().decode())


def test_dashboard_queries_only_documented_metrics() -> None:
    board = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel.get("targets", [])]
    assert exprs
    documented = set(_documented())
    used = set()
    for expr in exprs:
        for name in re.findall(r"\bberth_[a-z_]+", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            used.add(base)
            assert base in documented, f"{name} in {expr!r} is not a documented metric"
    assert {
        "berth_cluster_queue_resource_usage",
        "berth_pending_workloads",
        "berth_admission_wait_time_seconds",
        "berth_preempted_workloads_total",
    } <= used


@pytest.mark.parametrize(
    ("scenario", "held_by", "attempts"),
    [
        pytest.param("protection-reclaim-waits-for-window.yaml", "protection", 1, id="protection"),
        pytest.param("budget-spaces-out-reclaims.yaml", "budget", 1, id="budget"),
    ],
)
def test_a_held_preemption_is_counted_by_what_held_it(
    tmp_path: pathlib.Path, scenario: str, held_by: str, attempts: int
) -> None:
    out = tmp_path / "metrics.txt"
    path = ROOT / "tests" / "scenarios" / scenario
    result = CliRunner().invoke(cli.main, ["simulate", str(path), "--metrics-out", str(out)])
    assert result.exit_code == 0, result.output
    held = _sum(
        _families(out.read_text()),
        "berth_preemptions_held",
        "berth_preemptions_held_total",
        ("cluster_queue", "held_by"),
    )
    assert held == {("team-a", held_by): attempts}


def test_the_admission_fair_sharing_score_of_each_local_queue_is_exported(
    tmp_path: pathlib.Path,
) -> None:
    # At the end team-a ran four 2-GPU hours, team-b two: team-a's decayed usage is higher.
    out = tmp_path / "metrics.txt"
    path = ROOT / "tests" / "scenarios" / "admission-fair-sharing-alternates-local-queues.yaml"
    result = CliRunner().invoke(cli.main, ["simulate", str(path), "--metrics-out", str(out)])
    assert result.exit_code == 0, result.output
    scores = {
        labels["namespace"]: value
        for _, labels, value in _families(out.read_text())[
            "berth_local_queue_admission_fair_sharing_usage"
        ]
    }
    assert set(scores) == {"team-a", "team-b"}
    assert scores["team-a"] > scores["team-b"] > 0
