"""The differential parts that need no Kueue: generator, Berth's trace, comparison, shrinking."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api import kueue_convert
from berth.api.clusterqueue import PreemptionPolicy
from berth.devtools.differential import berth_run, case, compare, generate, observation, shrink

SEEDS = st.integers(min_value=0, max_value=2**32)


@given(SEEDS)
@settings(max_examples=150, deadline=None)
def test_every_generated_case_is_accepted_by_berth_and_settles(seed: int) -> None:
    trace = berth_run.run(generate.generate(seed))
    assert trace.error is None
    assert len(trace.points) == len(generate.generate(seed).steps) + 1


@given(SEEDS)
@settings(max_examples=50, deadline=None)
def test_a_seed_names_one_case(seed: int) -> None:
    assert generate.generate(seed) == generate.generate(seed)


@given(SEEDS)
@settings(max_examples=100, deadline=None)
def test_steps_arrive_each_workload_once_and_finish_only_after_arrival(seed: int) -> None:
    c = generate.generate(seed)
    arrivals = [s.workload for s in c.steps if s.kind == case.StepKind.ARRIVE]
    assert sorted(arrivals) == sorted(w.name for w in c.workloads)
    for w in c.workloads:
        finish = c.step_of(w.name, case.StepKind.FINISH)
        arrive = c.step_of(w.name, case.StepKind.ARRIVE)
        assert arrive is not None
        assert finish is None or finish > arrive


@given(SEEDS)
@settings(max_examples=60, deadline=None)
def test_the_berth_yaml_is_what_berth_import_makes_of_the_kueue_yaml(seed: int) -> None:
    c = generate.generate(seed)
    kueue = case.kueue_documents(c)
    berth = berth_run.berth_documents(c)
    assert berth[:-1] == [kueue_convert.convert(d)[0] for d in kueue]
    assert berth[-1]["kind"] == "Configuration"
    assert berth[-1]["waitForPodsReady"] is None


def test_a_prefix_renames_every_object_a_case_makes() -> None:
    docs = case.kueue_documents(generate.generate(3), "d7-")
    for doc in docs:
        assert doc["metadata"]["name"].startswith("d7-")
        assert doc["metadata"].get("namespace", "d7-").startswith("d7-")


@given(SEEDS)
@settings(max_examples=25, deadline=None)
def test_every_shrink_candidate_is_a_smaller_valid_case(seed: int) -> None:
    c = generate.generate(seed)
    for candidate in shrink.candidates(c)[:30]:
        assert candidate != c
        assert shrink.size(candidate) <= shrink.size(c)
        assert berth_run.run(candidate).error is None


def _point(
    admitted: dict[str, observation.Admission] | None = None,
    preemptions: tuple[observation.Preemption, ...] = (),
    reasons: dict[str, str] | None = None,
) -> observation.Point:
    return observation.Point(admitted or {}, preemptions, reasons or {})


A100 = observation.Admission("cq0", (("main", 1, (("nvidia.com/gpu", "a100"),)),))
H100 = observation.Admission("cq0", (("main", 1, (("nvidia.com/gpu", "h100"),)),))
BY_W2 = observation.Preemption("w1", "InClusterQueue", "w2")


@dataclasses.dataclass(frozen=True)
class CompareCase:
    id: str
    kueue: observation.Point
    berth: observation.Point
    want_first: compare.DivergenceClass | None


COMPARE_CASES = [
    CompareCase("equal points agree", _point({"w1": A100}), _point({"w1": A100}), None),
    CompareCase(
        "one side admits more",
        _point({"w1": A100}),
        _point(),
        compare.DivergenceClass.ADMITTED_SET,
    ),
    CompareCase(
        "another flavor",
        _point({"w1": A100}),
        _point({"w1": H100}),
        compare.DivergenceClass.ASSIGNMENT,
    ),
    CompareCase(
        "a preemption on one side comes before what follows from it",
        _point({"w2": A100}, (BY_W2,)),
        _point({"w1": A100}),
        compare.DivergenceClass.PREEMPTIONS,
    ),
    CompareCase(
        "pending reasons compared where both give one",
        _point(reasons={"w1": "WaitingForQuota"}),
        _point(reasons={"w1": "ExceedsMaxQuota"}),
        compare.DivergenceClass.PENDING_REASON,
    ),
    CompareCase(
        "a reason only one side gives is no divergence",
        _point(reasons={"w1": "WaitingForQuota"}),
        _point(),
        None,
    ),
]


@pytest.mark.parametrize("tc", COMPARE_CASES, ids=lambda tc: tc.id)
def test_the_first_divergence_is_classified_by_the_first_criterion(tc: CompareCase) -> None:
    found = compare.divergences(
        observation.Trace((_point(), tc.kueue)), observation.Trace((_point(), tc.berth))
    )
    first = compare.first(found)
    assert (first.kind if first else None) == tc.want_first
    if first is not None:
        assert first.step == 1


def test_berth_refusing_the_input_is_a_divergence_of_its_own() -> None:
    found = compare.divergences(observation.Trace(()), observation.Trace((), error="bad"))
    assert [d.kind for d in found] == [compare.DivergenceClass.BERTH_ERROR]


def test_berths_trace_drops_a_finished_workload_and_keeps_preemptions_per_step() -> None:
    gpu = (("nvidia.com/gpu", 4),)
    quota = case.Quota("nvidia.com/gpu", 4)
    c = case.Case(
        seed=0,
        flavors=("a100",),
        cohorts=(),
        queues=(
            case.ClusterQueue(
                "cq0",
                (case.ResourceGroup(("nvidia.com/gpu",), (case.FlavorQuotas("a100", (quota,)),)),),
                preemption=case.Preemption(within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY),
            ),
        ),
        priority_classes=(),
        workloads=(
            case.Workload("low", "cq0", (case.PodSet("main", 1, gpu),), priority=0),
            case.Workload("high", "cq0", (case.PodSet("main", 1, gpu),), priority=10),
        ),
        steps=(
            case.Step(case.StepKind.ARRIVE, "low"),
            case.Step(case.StepKind.ARRIVE, "high"),
            case.Step(case.StepKind.FINISH, "high"),
        ),
    )
    points = berth_run.run(c).points
    assert list(points[1].admitted) == ["low"]
    assert list(points[2].admitted) == ["high"]
    assert points[2].preemptions == (observation.Preemption("low", "InClusterQueue", "high"),)
    assert list(points[3].admitted) == ["low"]
    assert points[3].preemptions == ()


async def test_shrinking_keeps_the_class_and_stops_when_nothing_smaller_diverges() -> None:
    # An oracle that calls a case divergent while it still has workload w0 on a queue with
    # more than one flavor: the shrinker must end at one workload and keep that queue.
    def diverges(c: case.Case) -> compare.Divergence | None:
        names = {w.name for w in c.workloads}
        if "w0" in names:
            return compare.Divergence(compare.DivergenceClass.ADMITTED_SET, 1, "test")
        return None

    async def oracle(cases: list[case.Case]) -> list[compare.Divergence | None]:
        return [diverges(c) for c in cases]

    seed = next(s for s in range(100) if len(generate.generate(s).workloads) > 3)
    minimal, found, tries = await shrink.shrink(
        generate.generate(seed), compare.DivergenceClass.ADMITTED_SET, oracle, budget=500
    )
    assert found is not None
    assert [w.name for w in minimal.workloads] == ["w0"]
    assert len(minimal.queues) == 1
    assert tries <= 500
