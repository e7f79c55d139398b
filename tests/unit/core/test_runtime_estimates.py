"""Runtime estimates: their sources in order, what is learned from finished runs, overruns."""

from __future__ import annotations

import dataclasses

import pytest

import builders
from berth.api import clusterqueue, names
from berth.core import workload as core_workload
from berth.core.backfill import estimates, planning
from berth.jobs import batchjob
from berth.state import runtimes
from worlds import World

SETTINGS = clusterqueue.Backfill.model_validate({"defaultRuntime": "45m"})
Q = names.ClusterQueueName("q")
H = 3600.0


def info(
    name: str = "w",
    *,
    queue: str = "q",
    gpus: int = 1,
    expected: str | None = None,
    limit: str | None = None,
) -> core_workload.WorkloadInfo:
    notes = {}
    if expected is not None:
        notes["berth.dev/expected-runtime"] = expected
    if limit is not None:
        notes["berth.dev/runtime-limit"] = limit
    b = builders.WorkloadBuilder(name).queue(queue).pod_set("main", 1, {"nvidia.com/gpu": gpus})
    return World().info(b.annotations(notes) if notes else b)


@pytest.mark.parametrize(
    ("expected", "limit", "learned", "want"),
    [
        pytest.param(
            None,
            None,
            None,
            (2700.0, estimates.Source.DEFAULT),
            id="nothing known: the queue's default",
        ),
        pytest.param(
            None, None, 600.0, (600.0, estimates.Source.LEARNED), id="learned beats the default"
        ),
        pytest.param(
            None, "1h", 600.0, (H, estimates.Source.LIMIT), id="a hard limit beats what was learned"
        ),
        pytest.param(
            "2h",
            None,
            600.0,
            (2 * H, estimates.Source.ANNOTATION),
            id="the annotation beats what was learned",
        ),
        pytest.param(
            "30m",
            "1h",
            None,
            (1800.0, estimates.Source.ANNOTATION),
            id="an annotation below the limit is the estimate",
        ),
        pytest.param(
            "3h",
            "1h",
            None,
            (H, estimates.Source.LIMIT),
            id="the limit caps an annotation above it",
        ),
    ],
)
def test_an_estimate_comes_from_the_most_trusted_source(
    expected: str | None,
    limit: str | None,
    learned: float | None,
    want: tuple[float, estimates.Source],
) -> None:
    got = estimates.estimate(info(expected=expected, limit=limit), learned, SETTINGS)
    assert (got.seconds, got.source) == want


def test_what_is_learned_is_a_percentile_of_the_same_shape_then_of_the_queue() -> None:
    history = runtimes.RuntimeHistory()
    one, eight, other = info(gpus=1), info(gpus=8), info(queue="elsewhere")
    for minutes in range(1, runtimes.MIN_SAMPLES):
        history.record(one, minutes * 60.0)
    assert history.learned(one, 90) is None
    history.record(one, 10 * 60.0)
    # 1, 2, 3, 4, 10 minutes: the 90th percentile (nearest rank) is the largest
    assert history.learned(one, 90) == 600.0
    assert history.learned(one, 50) == 180.0
    # another shape of the same queue falls back to the whole queue's runs
    assert history.learned(eight, 90) == 600.0
    # another queue has learned nothing
    assert history.learned(other, 90) is None


def test_only_the_latest_runs_count() -> None:
    history = runtimes.RuntimeHistory()
    w = info()
    for _ in range(runtimes.WINDOW):
        history.record(w, 10 * H)
    for _ in range(runtimes.WINDOW):
        history.record(w, 60.0)
    assert history.learned(w, 100) == 60.0


# (runs recorded first as (GPUs, minutes), percentiles asked as (GPUs, percentile), the run
# recorded then, whether the version moves)
_Runs = list[tuple[int, int]]


@pytest.mark.parametrize(
    ("first", "asked", "then", "moves"),
    [
        pytest.param([(1, 10)] * 5, [], (1, 60), False, id="no estimate made yet"),
        pytest.param([(1, 10)] * 5, [(1, 90)], (1, 10), False, id="the percentile stays"),
        pytest.param([(1, 10)] * 5, [(1, 90)], (1, 60), True, id="the percentile moves"),
        pytest.param(
            [(1, 10)] * 9 + [(1, 60)],
            [(1, 90)],
            (1, 10),
            False,
            id="a run below it leaves a high percentile where it was",
        ),
        pytest.param(
            [(1, 10)] * 5, [(1, 90), (1, 50)], (1, 60), True, id="any percentile asked counts"
        ),
        pytest.param(
            [(8, 10)] * 5 + [(1, 10)] * 4,
            [(1, 90)],
            (1, 10),
            True,
            id="a shape's fifth run: it is learned from the shape from now on",
        ),
        pytest.param(
            [(1, 10)] * 5 + [(8, 10)] * 4,
            [(8, 100)],
            (1, 60),
            True,
            id="another shape's run moves the queue's percentile it fell back on",
        ),
        pytest.param(
            [(8, 10)] * 5 + [(1, 10)] * 5,
            [(1, 90)],
            (8, 60),
            False,
            id="a run of a shape and queue no estimate was made from",
        ),
    ],
)
def test_the_version_moves_only_when_a_percentile_an_estimate_was_made_from_moves(
    first: _Runs, asked: list[tuple[int, int]], then: tuple[int, int], moves: bool
) -> None:
    history = runtimes.RuntimeHistory()
    for gpus, minutes in first:
        history.record(info(gpus=gpus), minutes * 60.0)
    for gpus, percentile in asked:
        history.learned(info(gpus=gpus), percentile)
    before = history.version
    history.record(info(gpus=then[0]), then[1] * 60.0)
    assert (history.version != before) == moves
    # What it keeps is what a history given the same runs works out.
    fresh = runtimes.RuntimeHistory()
    for gpus, minutes in [*first, then]:
        fresh.record(info(gpus=gpus), minutes * 60.0)
    for gpus, percentile in asked:
        assert history.learned(info(gpus=gpus), percentile) == fresh.learned(
            info(gpus=gpus), percentile
        )


def _backfill_world(*local_queues: str) -> World:
    """An 8-GPU Backfill ClusterQueue ``q`` and LocalQueues pointing at it."""
    q = (
        builders.ClusterQueueBuilder("q")
        .flavor_quotas("gpu", {"nvidia.com/gpu": 8})
        .strategy("Backfill")
    )
    lqs = (builders.LocalQueueBuilder(lq, cluster_queue="q") for lq in local_queues)
    return World(builders.ResourceFlavorBuilder("gpu"), q, *lqs)


def test_a_successful_finish_teaches_the_estimator_and_an_eviction_does_not() -> None:
    world = _backfill_world("q")
    estimate = runtimes.estimator(world.cache, world.state.runtimes)
    for i in range(runtimes.MIN_SAMPLES):
        w = world.info(
            builders.WorkloadBuilder(f"w{i}").queue("q").pod_set("main", 1, {"nvidia.com/gpu": 1})
        )
        world.admit(w, "q", at=0.0)
        world.state.release(w.key, 1200.0, succeeded=i > 0)
    probe = world.info(
        builders.WorkloadBuilder("next").queue("q").pod_set("main", 1, {"nvidia.com/gpu": 1})
    )
    assert estimate(probe, Q).source == estimates.Source.DEFAULT
    w = world.info(
        builders.WorkloadBuilder("last").queue("q").pod_set("main", 1, {"nvidia.com/gpu": 1})
    )
    world.admit(w, "q", at=0.0)
    world.state.release(w.key, 1200.0, succeeded=True)
    got = estimate(probe, Q)
    assert (got.seconds, got.source) == (1200.0, estimates.Source.LEARNED)


@pytest.mark.parametrize(
    ("started", "estimate", "now", "want"),
    [
        pytest.param(0.0, 100.0, 50.0, 100.0, id="within its estimate: started plus estimate"),
        pytest.param(0.0, 100.0, 100.0, 200.0, id="at its estimate: expected to run as long again"),
        pytest.param(0.0, 100.0, 350.0, 400.0, id="far past it: doubled until it lies ahead"),
        pytest.param(10.0, 0.0, 50.0, 50.0, id="no estimate: ends now"),
    ],
)
def test_work_past_its_estimate_is_expected_to_end_later_never_now(
    started: float, estimate: float, now: float, want: float
) -> None:
    assert planning.expected_end(started, estimate, now) == want


def _job(annotations: dict[str, str], deadline: int | None) -> dict[str, object]:
    spec: dict[str, object] = {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "labels": {"berth.dev/queue-name": "lq"},
            "annotations": annotations,
        },
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("annotations", "deadline", "want_expected", "want_limit"),
    [
        pytest.param({}, None, None, None, id="neither: no estimate of its own"),
        pytest.param({}, 600, None, 600.0, id="activeDeadlineSeconds is the hard limit"),
        pytest.param({"berth.dev/expected-runtime": "2h"}, None, 7200.0, None, id="annotation"),
        pytest.param(
            {"berth.dev/expected-runtime": "2h"}, 0, 7200.0, None, id="a zero deadline is none"
        ),
        pytest.param(
            {},
            2**62,
            None,
            None,
            id="a deadline past Go's longest duration bounds nothing: none",
        ),
    ],
)
def test_a_job_passes_its_estimates_to_its_workload(
    annotations: dict[str, str],
    deadline: int | None,
    want_expected: float | None,
    want_limit: float | None,
) -> None:
    wl, problems = batchjob.to_workload(_job(annotations, deadline), uid="u")
    assert not problems
    assert wl is not None
    got = World().info(wl)
    assert (got.expected_runtime, got.runtime_limit) == (want_expected, want_limit)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            "two hours", "is not a duration; write e.g. 90s, 5m or 1h30m", id="not a duration"
        ),
        pytest.param("0s", "must be longer than 0s", id="zero"),
        pytest.param(
            "9" * 400 + "h", "is not a finite duration", id="digits past a float: infinite"
        ),
        pytest.param(
            "3000000h", "longer than Go's longest duration", id="past Go's longest duration"
        ),
    ],
)
def test_a_bad_expected_runtime_is_refused_naming_the_annotation(value: str, message: str) -> None:
    wl, problems = batchjob.to_workload(_job({"berth.dev/expected-runtime": value}, None), uid="u")
    assert wl is None
    assert [(p.path, message in p.message) for p in problems] == [
        ("metadata.annotations[berth.dev/expected-runtime]", True)
    ]


def test_estimates_are_made_again_for_the_queue_that_learned_and_for_a_changed_workload() -> None:
    world = _backfill_world("a", "b")
    estimate = runtimes.estimator(world.cache, world.state.runtimes)

    def job(name: str, lq: str, expected: str | None = None) -> core_workload.WorkloadInfo:
        b = builders.WorkloadBuilder(name).queue(lq).pod_set("main", 1, {"nvidia.com/gpu": 1})
        if expected is not None:
            b.annotations({"berth.dev/expected-runtime": expected})
        return world.info(b)

    probe_a, probe_b = job("probe-a", "a"), job("probe-b", "b")
    first_b = estimate(probe_b, Q)
    for i in range(runtimes.MIN_SAMPLES):
        w = job(f"w{i}", "a")
        world.admit(w, "q", at=0.0)
        world.state.release(w.key, 1200.0, succeeded=True)
    learned = estimate(probe_a, Q)
    assert (learned.seconds, learned.source) == (1200.0, estimates.Source.LEARNED)
    assert estimate(probe_b, Q) is first_b  # queue b learned nothing: its estimate stands
    # The same workload (name and uid), annotated since.
    changed = dataclasses.replace(job("probe-a", "a", expected="2h"), uid=probe_a.uid)
    assert (estimate(changed, Q).seconds, estimate(changed, Q).source) == (
        2 * H,
        estimates.Source.ANNOTATION,
    )
