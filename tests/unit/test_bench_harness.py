"""The harness's pure parts: the generator config, its arrivals, the summary's arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.adapters.benchharness import generator, runner, summary

CONFIGS = Path(__file__).resolve().parents[2] / "config" / "bench"


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
