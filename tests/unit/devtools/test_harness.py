"""The harness's pure parts: the generator config, its arrivals, the summary's arithmetic."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest

from berth.devtools.harness import api as api_mod
from berth.devtools.harness import command, generator, kueue, runner, summary
from operator_env import ROOT

CONFIGS = ROOT / "config" / "bench"


@pytest.mark.parametrize(
    ("name", "want_queues", "want_workloads"),
    [
        pytest.param("baseline", 30, 15_000, id="baseline-is-5x6-queues-and-15000-workloads"),
        pytest.param("large-scale", 1000, 50_000, id="large-scale-is-1000-queues-and-50000"),
        pytest.param("smoke", 2, 36, id="smoke-is-2-queues-and-36-workloads"),
    ],
)
def test_shipped_configs_have_kueues_shapes(
    name: str, want_queues: int, want_workloads: int
) -> None:
    config = generator.load(CONFIGS / f"{name}.yaml")
    assert len(generator.queues(config)) == want_queues
    assert generator.workload_count(config) == want_workloads


def test_arrivals_start_one_interval_in_and_end_at_the_slowest_set() -> None:
    config = generator.load(CONFIGS / "baseline.yaml")
    arrivals = generator.arrivals(config)
    assert arrivals[0].at == pytest.approx(0.1)
    assert arrivals[-1].at == pytest.approx(60.0)
    first = arrivals[0]
    assert first.queue.name == "cq-0-0-cohort-0"
    assert first.name == "small-0-0-0"


def test_baseline_capacity_bound_is_its_busiest_cohorts_work_over_quota() -> None:
    # 6 queues x (350 x 1 x 0.2 + 100 x 5 x 0.5 + 50 x 20 x 1) = 7,920 CPU-s on 120 CPUs.
    config = generator.load(CONFIGS / "baseline.yaml")
    assert summary.capacity_bound(config) == pytest.approx(66.0)


def test_invalid_config_names_every_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("cohorts:\n- className: c\n  count: -1\n  queuesSets: []\n")
    with pytest.raises(ValueError, match=r"cohorts\.0\.count") as err:
        generator.load(path)
    assert "queuesSets" in str(err.value)


def test_request_counter_deltas_are_grouped_by_verb_and_resource() -> None:
    before = summary.counter(
        'apiserver_request_total{code="201",resource="workloads",subresource="",verb="POST"} 5\n',
        "apiserver_request_total",
    )
    after = summary.counter(
        "# HELP apiserver_request_total x\n"
        'apiserver_request_total{code="201",resource="workloads",subresource="",verb="POST"} 9\n'
        'apiserver_request_total{code="200",resource="workloads",subresource="status",verb="PATCH"}'
        " 3\n"
        'apiserver_request_total_other{verb="GET"} 7\n',
        "apiserver_request_total",
    )
    assert summary.requests_between(before, after) == {
        "POST workloads": 4,
        "PATCH workloads/status": 3,
    }


def test_summary_usage_and_waits_follow_the_recorded_intervals() -> None:
    config = generator.load(CONFIGS / "smoke.yaml")
    records = [runner.Record(a) for a in generator.arrivals(config)]
    for r in records:
        r.created = r.arrival.at
        r.admitted = r.arrival.at + 1.0
        r.admissions = 1
        r.finished = r.admitted + r.arrival.template.runtime_ms / 1000
        r.intervals = [(r.admitted, r.finished)]
    s = summary.summarize(config, records, wall=10.0)
    assert s["finished"] == 36
    assert s["workloadClasses"]["small"]["averageTimeToAdmissionSeconds"] == pytest.approx(1.0)
    # 2 queues x (12 x 0.2 + 4 x 2.5 + 2 x 20) CPU-s = 104.8 over 40 CPUs x 10 s.
    assert s["clusterQueueClasses"]["cq"]["usagePercent"] == pytest.approx(26.2)


def test_summary_arrivals_show_when_creates_fell_behind_their_schedule() -> None:
    config = generator.load(CONFIGS / "smoke.yaml")
    records = [runner.Record(a) for a in generator.arrivals(config)]
    last = max(records, key=lambda r: r.arrival.at)
    for r in records:
        r.created = r.arrival.at
        r.create_latency = 0.25
    last.created = last.arrival.at + 3.0  # waited for a create slot
    s = summary.summarize(config, records, wall=20.0)
    arrivals = s["arrivals"]
    assert arrivals["scheduledEndSeconds"] == pytest.approx(last.arrival.at)
    assert arrivals["endSeconds"] == pytest.approx(last.arrival.at + 3.25)
    assert arrivals["lagSecondsMax"] == pytest.approx(3.0)
    assert arrivals["lagSecondsP95"] == pytest.approx(0.0)


class _Run:
    """The runner's clock only: t0 stays 0 until arrivals start."""

    def __init__(self) -> None:
        self.t0 = 0.0

    def now(self) -> float:
        return time.monotonic() - self.t0


class _Api:
    """Answers the profile's GET with ``answer``, after ``hold`` seconds."""

    def __init__(self, answer: bytes | Exception, hold: float = 0.0) -> None:
        self.answer = answer
        self.hold = hold
        self.paths: list[str] = []

    async def raw(self, path: str, *, seconds: float | None = None) -> bytes:
        assert seconds is not None  # a profile's answer must not wait forever
        self.paths.append(path)
        await asyncio.sleep(self.hold)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def _profile(
    api: _Api, want: command.ApiserverProfile, *, arrivals_after: float, run_for: float
) -> dict[str, object]:
    run = _Run()
    task = asyncio.create_task(command.fetch_apiserver_profile(api, run, want))  # type: ignore[arg-type]
    await asyncio.sleep(arrivals_after)
    run.t0 = time.monotonic()
    await asyncio.sleep(run_for)
    return await command.apiserver_profile_entry(task, want)


async def test_apiserver_profile_starts_its_delay_after_arrivals_and_writes_the_bytes(
    tmp_path: Path,
) -> None:
    want = command.ApiserverProfile(tmp_path / "apiserver.pprof", seconds=7, delay=0.2)
    api = _Api(b"pprof bytes")
    entry = await _profile(api, want, arrivals_after=0.3, run_for=0.5)
    assert api.paths == ["/debug/pprof/profile?seconds=7"]
    assert want.path.read_bytes() == b"pprof bytes"
    # Counted from the start of arrivals, not from when the task began waiting (0.5 s then).
    assert entry == {
        "path": str(want.path),
        "seconds": 7,
        "startedAtSeconds": pytest.approx(0.2, abs=0.1),
    }


async def test_apiserver_profile_still_running_when_the_run_ends_is_cancelled_and_reported(
    tmp_path: Path,
) -> None:
    want = command.ApiserverProfile(tmp_path / "apiserver.pprof", seconds=30, delay=0.0)
    entry = await _profile(_Api(b"late", hold=30.0), want, arrivals_after=0.0, run_for=0.1)
    assert entry == {
        "error": "the run ended before the profile (30 s from 0 s into arrivals) was complete"
    }
    assert not want.path.exists()


async def test_apiserver_profile_refused_is_a_one_line_error_entry(tmp_path: Path) -> None:
    want = command.ApiserverProfile(tmp_path / "apiserver.pprof", seconds=30, delay=0.0)
    refused = api_mod.ApiError(404, "404 page not found\n")
    entry = await _profile(_Api(refused), want, arrivals_after=0.0, run_for=0.1)
    assert entry == {"error": "GET /debug/pprof/profile: 404: 404 page not found"}
    assert not want.path.exists()


def _webhook_metrics(name: str, buckets: dict[str, int], seconds: float) -> str:
    metric = "apiserver_admission_webhook_admission_duration_seconds"
    labels = f'name="{name}",operation="CREATE",rejected="false",type="admit"'
    lines = [f'{metric}_bucket{{{labels},le="{le}"}} {n}' for le, n in buckets.items()]
    lines.append(f"{metric}_sum{{{labels}}} {seconds}")
    lines.append(f"{metric}_count{{{labels}}} {buckets['+Inf']}")
    return "\n".join(lines) + "\n"


def test_webhook_latency_is_the_difference_between_two_scrapes() -> None:
    before = _webhook_metrics("mutate", {"0.005": 5, "0.025": 10, "0.1": 10, "+Inf": 10}, 0.1)
    # 100 more calls: 60 under 5 ms, 36 more under 25 ms, 4 more under 100 ms; 2.0 s in all.
    after = _webhook_metrics("mutate", {"0.005": 65, "0.025": 106, "0.1": 110, "+Inf": 110}, 2.1)
    got = summary.webhook_latency(before, after)
    assert got == {"mutate": {"calls": 100, "meanMs": 20.0, "p95AtMostMs": 25.0}}
    assert summary.webhook_latency(after, after) == {}


def test_summary_gives_kueues_wait_from_first_event_to_last_admission() -> None:
    config = generator.load(CONFIGS / "smoke.yaml")
    records = [runner.Record(a) for a in generator.arrivals(config)]
    for r in records:
        r.created, r.seen = r.arrival.at, r.arrival.at + 0.5
        r.admitted = r.arrival.at + 1.0
        r.intervals = [(r.admitted, r.admitted + 0.1)]  # evicted, then admitted again
        r.running_since = r.admitted + 2.0
    s = summary.summarize(config, records, wall=20.0)
    small = s["workloadClasses"]["small"]
    assert small["averageTimeToAdmissionSeconds"] == pytest.approx(1.0)
    assert small["averageSeenToLastAdmissionSeconds"] == pytest.approx(2.5)


class _SlowCreates:
    """Answers each create after ``hold`` seconds; keeps when each was sent."""

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.sent: list[tuple[float, str, str]] = []

    async def request(self, method: str, path: str, body: object = None) -> dict[str, object]:
        assert method == "POST"
        assert isinstance(body, dict)
        self.sent.append((time.monotonic(), path, body["metadata"]["name"]))
        await asyncio.sleep(self.hold)
        return {}


async def _sent_at(pacing: runner.Pacing, hold: float) -> dict[str, list[float]]:
    """Seconds after the start at which each small and medium create of one queue went out."""
    config = generator.load(CONFIGS / "smoke.yaml")
    api = _SlowCreates(hold)
    run = runner.Runner(api, config, "r", pacing=pacing)  # type: ignore[arg-type]
    queue = generator.queues(config)[0].name
    run.t0 = time.monotonic()
    await run._create_all()  # the pacing alone, without a watch
    await asyncio.gather(*run._tasks)  # creates spawned on the timeline
    out: dict[str, list[float]] = {"small": [], "medium": []}
    for at, path, name in api.sent:
        cls = run.records[queue, name].arrival.template.class_name
        if path == runner.workloads_path(queue) and cls in out:
            out[cls].append(at - run.t0)
    return out


async def test_sequential_pacing_waits_for_each_answer_before_the_next_interval() -> None:
    # Kueue's generateWlSet: interval, create, wait for it; a slow API server stretches arrivals.
    sent = await _sent_at(runner.Pacing.SEQUENTIAL, hold=0.1)
    small = sent["small"]
    assert len(small) == 12
    gaps = [b - a for a, b in itertools.pairwise(small)]
    assert min(gaps) >= 0.2 - 0.01  # 0.1 s interval + 0.1 s answer
    assert small[-1] >= 12 * 0.1 + 11 * 0.1 - 0.05  # twelve intervals, eleven answers
    # Each workload set is a stream of its own: mediums are not held behind smalls.
    assert sent["medium"][0] < 0.5 + 0.1 + 0.05


async def test_timeline_pacing_sends_each_create_when_due_whatever_the_answers_take() -> None:
    small = (await _sent_at(runner.Pacing.TIMELINE, hold=0.1))["small"]
    assert len(small) == 12
    assert small[-1] == pytest.approx(1.2, abs=0.08)


_KUEUE_SUMMARY = """\
clusterQueueClasses:
  cq:
    cpuAverageUsage: 11
    cpuUsed: 7920000
    firstEventTime: "2026-11-27T12:00:00.250000000Z"
    lastEventTime: "2026-11-27T12:07:34.250000000Z"
    nominalQuota: 600
droppedWorkloadEvents: 0
workloadClasses:
  large:
    averageTimeToAdmissionMs: 33600
    averageTimeToFinishMs: 40000
    count: 1500
    totalEvictions: 5
  small:
    averageTimeToAdmissionMs: 253000
    averageTimeToFinishMs: 260000
    count: 10500
    totalEvictions: 30
"""
_KUEUE_STATS = "wallMs: 470000\nuserMs: 100000\nsysMs: 16000\nmaxrss: 625664\n"


def test_kueues_summary_is_read_into_its_figures(tmp_path: Path) -> None:
    (tmp_path / kueue.SUMMARY).write_text(_KUEUE_SUMMARY)
    (tmp_path / kueue.STATS).write_text(_KUEUE_STATS)
    run = kueue.read(tmp_path, runner_seconds=500.0)
    assert run.wall_seconds == pytest.approx(454.0)
    assert run.classes["small"] == kueue.ClassFigures(10500, 30, 253.0)
    assert run.evictions == 35
    assert run.controller_cpu_seconds == pytest.approx(116.0)
    assert run.controller_peak_rss_mib == pytest.approx(611.0)

    berth = {
        "wallSeconds": 227.0,
        "evictions": 70,
        "workloadClasses": {
            "small": {"averageSeenToLastAdmissionSeconds": 126.5},
            "large": {"averageSeenToLastAdmissionSeconds": 16.8},
        },
        "operator": {"cpuSecondsWholeProcess": 232.0, "peakRssMiB": 305.5},
    }
    rows = {r.figure: r for r in kueue.compare(run, berth)}
    assert rows["wall (s)"].ratio == pytest.approx(0.5)
    assert rows["average time to admission, small (s)"].ratio == pytest.approx(0.5)
    assert rows["average time to admission, large (s)"].ratio == pytest.approx(0.5)
    assert rows["evictions"].ratio == pytest.approx(2.0)
    assert rows["controller CPU, whole process (s)"].ratio == pytest.approx(2.0)
    assert rows["controller peak RSS (MiB)"].ratio == pytest.approx(0.5)
    table = kueue.table(list(rows.values()))
    assert "| wall (s) | 454.0 | 227.0 | 0.50 |" in table.splitlines()


def test_a_kueue_run_without_a_summary_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    with pytest.raises(kueue.KueueHarnessError, match=str(tmp_path)):
        kueue.read(tmp_path)
