"""Backfill plans kept from one cycle to the next (``reservations.Kept``), and grown in place.

A cycle leaves its plans to the next cycle, which takes one over only when nothing the plan was
made from changed: the tree's generation (counting the admissions the plan took in), the holders
(the same objects; holders more are inserted), ``now`` (or a later instant before any running
work was due to end), and the version of estimates and evictions. Taking a plan over must
decide exactly as making it again, and a backfill test a plan recalls (``Plan._squeezed_by``)
or a running workload's end it recalls (``reservations.Inputs.ends``) exactly as one worked
out afresh: the simulations below run with and without them and compare every event. A holder
blocked ahead of others joins a plan in place (``planning.Plan.insert``), and work admitted in a
cycle joins its releases (``planning.Plan.started``): either way the reservations come out as
those of a plan made with it. A later entry of the cycle is tested against the reservations an
admission moved.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import builders
from berth.api import names
from berth.core import flavors, resources
from berth.core.backfill import estimates, planning, reservations
from berth.sim import documents, engine
from worlds import World

GPU = "nvidia.com/gpu"
QUEUES = ("cq-a", "cq-b", "cq-c")


def _queue(
    name: str, gpus: int, depth: int, *, reclaim: str = "Any"
) -> builders.ClusterQueueBuilder:
    return (
        builders.ClusterQueueBuilder(name)
        .cohort("pool")
        .flavor_quotas("gpu", {GPU: gpus})
        .strategy("Backfill")
        .set("spec.backfill", {"reservationDepth": depth})
        .preemption(reclaim_within_cohort=reclaim)
    )


def _job(name: str, queue: str, gpus: int, *, estimate: float | None) -> builders.WorkloadBuilder:
    b = builders.WorkloadBuilder(name).queue(queue).pod_set("main", 1, {GPU: gpus})
    if estimate is not None:
        b.annotations({"berth.dev/expected-runtime": f"{estimate}s"})
    return b


@st.composite
def cohort_streams(draw: st.DrawFn) -> list[documents.Document]:
    """Three Backfill queues lending to each other; estimates that are often wrong or missing.

    Sometimes under waitForPodsReady's blockAdmission, with pods that take a while to be ready:
    a workload that fits then takes quota in the cycle without starting.
    """
    depth = draw(st.integers(1, 2))
    raws: list[dict[str, Any]] = [builders.ResourceFlavorBuilder("gpu").raw()]
    block = draw(st.booleans())
    if block:
        config = builders.ConfigurationBuilder().wait_for_pods_ready("1000s", block_admission=True)
        raws.append(config.raw())
    for name in QUEUES:
        gpus = draw(st.sampled_from([2, 4, 8]))
        reclaim = draw(st.sampled_from(["Any", "LowerPriority", "Never"]))
        raws.append(_queue(name, gpus, depth, reclaim=reclaim).raw())
        raws.append(builders.LocalQueueBuilder(name, cluster_queue=name).raw())
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for i in range(draw(st.integers(4, 24))):
        runtime = float(draw(st.integers(1, 40)))
        estimate = draw(st.sampled_from([None, runtime, runtime / 2, runtime * 3]))
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        b = _job(f"j{i}", draw(st.sampled_from(QUEUES)), gpus, estimate=estimate)
        raw = b.priority(draw(st.integers(0, 2))).raw()
        at = float(draw(st.integers(0, 60)))
        doc = documents.generated(raw, len(docs), at=at, run_for=runtime)
        if block:
            doc = dataclasses.replace(doc, ready_after=float(draw(st.sampled_from([0, 1, 5]))))
        docs.append(doc)
    docs.sort(key=lambda d: d.at)
    return docs


def _run(
    docs: list[documents.Document], *, keep: bool, recall: bool = True
) -> tuple[list[dict[str, Any]], int]:
    """The run's events, and how many plans were taken over.

    ``recall`` False: a plan answers every backfill test afresh instead of recalling it, places
    every reservation by a search from the start, without hints, is made again after an
    admission instead of taking it in, and works out every running workload's end again
    instead of recalling it (``reservations.Inputs.ends``).
    """
    taken = 0
    original = reservations.Planner._taken_over
    squeezed = planning.Plan._squeezed_by
    earliest = planning._Search.earliest
    releases = reservations.Planner._releases

    def listed_afresh(self: reservations.Planner, root: str) -> list[planning.Release]:
        self._ends = {}  # what recalling the ends reads
        return releases(self, root)

    def unhinted(self: planning._Search, _hint: float | None) -> Any:
        return earliest(self, None)

    def counted(self: reservations.Planner, *args: Any) -> Any:
        nonlocal taken
        found = original(self, *args) if keep else None
        taken += found is not None
        return found

    def afresh(self: planning.Plan, *args: Any) -> bool:
        self._squeezed.clear()  # what recalling answers reads
        return squeezed(self, *args)

    def made_again(
        self: reservations.Planner, info: Any, cq: names.ClusterQueueName, usage: Any
    ) -> None:
        # The tree's plan dropped at an admission, to be made again with it when next needed.
        root = self.root_of(cq)
        end = planning.expected_end(self.now, self.inputs.estimate(info, cq).seconds, self.now)
        self.started_here.setdefault(root, []).append(planning.Release(end, cq, usage))
        self.plans.pop(root, None)
        self.changed_roots.add(root)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reservations.Planner, "_taken_over", counted)
        if not recall:
            mp.setattr(planning.Plan, "_squeezed_by", afresh)
            mp.setattr(planning._Search, "earliest", unhinted)
            mp.setattr(reservations.Planner, "started", made_again)
            mp.setattr(reservations.Planner, "_releases", listed_afresh)
        return engine.Simulator(docs).run(), taken


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cohort_streams())
def test_a_plan_taken_over_decides_as_one_made_again(docs: list[documents.Document]) -> None:
    kept, _ = _run(docs, keep=True)
    made, _ = _run(docs, keep=False, recall=False)
    assert kept == made


# (name, queue, arrives at, runs for, expected runtime, GPUs)
_LATE_LENDER_JOBS = [
    ("running-a", "cq-a", 0.0, 10.0, 10.0, 4),  # cq-a is full until 10
    ("gang-a", "cq-a", 1.0, 5.0, 5.0, 8),  # needs cq-b's 4 too: reserved at 10
    ("own-b", "cq-b", 2.0, 50.0, 50.0, 2),  # within cq-b's quota: never held; ends at 52
    ("borrower-c", "cq-c", 2.0, 20.0, 20.0, 2),  # borrows cq-b's last 2 until 22
]


def test_an_admission_that_ends_after_a_reservation_starts_moves_it() -> None:
    # own-b is admitted within its quota in the same cycle as borrower-c, before it (it does
    # not borrow): with own-b running, gang-a no longer fits at 10 but at 52, and borrower-c,
    # which ends at 22, does not delay it. A plan kept as it was before own-b's admission
    # would leave the reservation at 10 and hold borrower-c back.
    raws: list[dict[str, Any]] = [builders.ResourceFlavorBuilder("gpu").raw()]
    for name, gpus in (("cq-a", 4), ("cq-b", 4), ("cq-c", 0)):
        raws += [
            _queue(name, gpus, 1).raw(),
            builders.LocalQueueBuilder(name, cluster_queue=name).raw(),
        ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for name, queue, at, runtime, estimate, gpus in _LATE_LENDER_JOBS:
        raw = _job(name, queue, gpus, estimate=estimate).raw()
        docs.append(documents.generated(raw, len(docs), at=at, run_for=runtime))
    events, _ = _run(docs, keep=True)
    admitted = {e["workload"]: e["t"] for e in events if e["event"] == "Admitted"}
    assert admitted["default/borrower-c"] == 2.0
    assert admitted["default/gang-a"] == 52.0
    told = [e for e in events if e["event"] == "Pending" and e["workload"] == "default/borrower-c"]
    assert told == []  # never held, not even for a cycle


# (name, queue, arrives at, runs for, pods ready after, expected runtime, GPUs, priority)
_BLOCKED_JOBS = [
    *[(f"small-{q}{i}", f"cq-{q}", 0.0, 1.0, 0.0, None, 1, 0) for q in "abc" for i in range(4)],
    ("wide-b", "cq-b", 0.0, 2.0, 0.0, None, 4, 0),
    ("slow-ready-c", "cq-c", 2.0, 1.0, 1.0, 1.0, 1, 1),
    ("late-c", "cq-c", 2.0, 1.0, 0.0, None, 1, 0),
    ("gang-a", "cq-a", 2.0, 1.0, 0.0, None, 8, 1),
    ("short-a", "cq-a", 2.0, 1.0, 0.0, 1.0, 1, 1),
    ("gang-c", "cq-c", 2.0, 1.0, 0.0, None, 4, 1),
]


def test_a_plan_in_use_is_made_again_once_a_workload_waits_for_pods_ready() -> None:
    # Under blockAdmission a workload that fits takes quota in the cycle without starting. A
    # plan places its holders only as far as a question needs: kept in use, it placed those
    # asked about before against the old usage and the others against the new, so a plan taken
    # over from the cycle before (all placed) answered otherwise than one made in this cycle.
    # Found by the property above; pinned here.
    raws: list[dict[str, Any]] = [
        builders.ResourceFlavorBuilder("gpu").raw(),
        builders.ConfigurationBuilder().wait_for_pods_ready("1000s", block_admission=True).raw(),
    ]
    for name in QUEUES:
        raws += [
            _queue(name, 4, 1).raw(),
            builders.LocalQueueBuilder(name, cluster_queue=name).raw(),
        ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for name, queue, at, runtime, ready_after, estimate, gpus, priority in _BLOCKED_JOBS:
        raw = _job(name, queue, gpus, estimate=estimate).priority(priority).raw()
        doc = documents.generated(raw, len(docs), at=at, run_for=runtime)
        docs.append(dataclasses.replace(doc, ready_after=ready_after))
    kept, taken = _run(docs, keep=True)
    made, _ = _run(docs, keep=False, recall=False)
    assert taken >= 1
    assert kept == made


def test_plans_are_taken_over_while_heads_are_held() -> None:
    # 12 GPUs in the cohort, 3 taken until t=600; a 12-GPU gang holds the reservation from then.
    # 1-GPU jobs estimated to run past it are held, one per cycle (each with an estimate of
    # its own, so none stands for another): the cycles after the first take the plan over from
    # the one before.
    raws: list[dict[str, Any]] = [builders.ResourceFlavorBuilder("gpu").raw()]
    for name in QUEUES:
        raws += [
            _queue(name, 4, 1).raw(),
            builders.LocalQueueBuilder(name, cluster_queue=name).raw(),
        ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    jobs = [("run", 3, 600.0, 0.0), ("gang", 12, 600.0, 1.0)]
    jobs += [(f"small-{i}", 1, 1000.0 + i, 2.0) for i in range(5)]
    for name, gpus, runtime, at in jobs:
        raw = _job(name, "cq-a", gpus, estimate=runtime).raw()
        docs.append(documents.generated(raw, len(docs), at=at, run_for=runtime))
    kept, taken = _run(docs, keep=True)
    made, none = _run(docs, keep=False)
    assert taken >= 4
    assert none == 0
    assert kept == made
    reasons = [e["reason"] for e in kept if e["event"] == "Pending"]
    assert reasons.count("WaitingForReservation") >= 4


@dataclasses.dataclass(frozen=True)
class Change:
    id: str
    change: Callable[[World, reservations.Inputs], reservations.Inputs]
    taken_over: bool


def _same(_world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    return inputs


def _later(world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    world.now += 1
    return inputs


def _past_an_end(world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    world.now = 700.0  # "run" was expected to end at 600: now it is expected later
    return inputs


def _admitted(world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    world.admit(world.info(_job("new", "cq-b", 1, estimate=60), at=world.now), "cq-b")
    return inputs


def _learned(_world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    return dataclasses.replace(inputs, version=(inputs.version[0] + 1, *inputs.version[1:]))


def _holder_replaced(_world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    holders = {cq: [dataclasses.replace(i) for i in infos] for cq, infos in inputs.holders.items()}
    return dataclasses.replace(inputs, holders=holders)


def _holder_gone(_world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    return dataclasses.replace(inputs, holders={})


def _holder_joined(world: World, inputs: reservations.Inputs) -> reservations.Inputs:
    joined = world.info(_job("parked-b", "cq-b", 8, estimate=60), at=2)
    holders = {**inputs.holders, names.ClusterQueueName("cq-b"): [joined]}
    return dataclasses.replace(inputs, holders=holders)


CHANGES = [
    Change("nothing changed: taken over", _same, taken_over=True),
    Change("a later instant, no work due to end before it: taken over", _later, taken_over=True),
    Change("a later instant, past running work's expected end: made again", _past_an_end, False),
    Change("an admission in the tree: made again", _admitted, taken_over=False),
    Change("a runtime learned: made again", _learned, taken_over=False),
    Change("a holder's info replaced: made again", _holder_replaced, taken_over=False),
    Change("no holder any more: no plan", _holder_gone, taken_over=False),
    Change("a holder more: taken over, the holder inserted", _holder_joined, taken_over=True),
]


@pytest.mark.parametrize("row", CHANGES, ids=lambda r: r.id)
def test_a_plan_is_taken_over_only_if_nothing_it_was_made_from_changed(row: Change) -> None:
    world = World(
        builders.ResourceFlavorBuilder("gpu"),
        *(_queue(name, 4, 1) for name in QUEUES),
        *(builders.LocalQueueBuilder(name, cluster_queue=name) for name in QUEUES),
    )
    world.admit(world.info(_job("run", "cq-a", 4, estimate=600), at=0), "cq-a")
    world.submit(world.info(_job("big", "cq-a", 12, estimate=60), at=1))
    world.cycle()  # big is blocked: it holds a reservation, and the cycle changed no usage
    kept = world.state.kept
    root = world.cache.root_of(names.ClusterQueueName("cq-a"))
    assert root in kept
    inputs = reservations.Inputs(
        world.queues.holders(),
        world.state.estimate,
        (world.state.runtimes.version, world.cache.revision),
        kept,
    )
    inputs = row.change(world, inputs)
    snap = world.cache.snapshot
    planner = reservations.Planner(snap, world.now, inputs, {}, world.cache.generation)
    assert (planner.plan(root) is kept[root].plan) == row.taken_over


@st.composite
def plans_and_a_newcomer(
    draw: st.DrawFn,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]], int, int]:
    """A case of ``Plan.insert``.

    Running work (GPUs, end), holders (GPUs, estimate), which holder comes later, and how many
    holders the plan placed before it came.
    """
    running = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 50)), max_size=5))
    holders = draw(
        st.lists(st.tuples(st.integers(1, 8), st.integers(1, 30)), min_size=1, max_size=5)
    )
    later = draw(st.integers(0, len(holders) - 1))
    placed = draw(st.integers(0, len(holders) - 1))
    return (
        [(g, float(e)) for g, e in running],
        [(g, float(e)) for g, e in holders],
        later,
        placed,
    )


def _one_queue(
    running: list[tuple[int, float]], holders: list[tuple[int, float]]
) -> tuple[World, list[planning.Release], list[planning.Holder], planning.Fits]:
    """An 8-GPU Backfill queue, what of its work ends when, its holders, and plans' fit test.

    It runs what fits of ``running`` (GPUs, end) from 0; ``holders`` are (GPUs, estimate).
    """
    world = World(builders.ResourceFlavorBuilder("gpu"), _queue("cq-a", 8, len(holders)))
    cq = names.ClusterQueueName("cq-a")
    gpu = resources.FlavorResource(names.FlavorName("gpu"), names.ResourceName(GPU))
    releases, used = [], 0
    for i, (gpus, end) in enumerate(running):
        if used + gpus > 8:
            break
        used += gpus
        world.admit(world.info(_job(f"r{i}", "cq-a", gpus, estimate=end), at=0.0), "cq-a")
        releases.append(planning.Release(end, cq, {gpu: gpus}))
    everyone = [
        planning.Holder(
            world.info(_job(f"h{i}", "cq-a", gpus, estimate=None), at=float(i)),
            cq,
            estimates.Estimate(minutes, estimates.Source.DEFAULT),
        )
        for i, (gpus, minutes) in enumerate(holders)
    ]
    fits = reservations.Planner(
        world.cache.snapshot, 0.0, reservations.Inputs({}, world.state.estimate), {}
    ).fits
    return world, releases, everyone, fits


@given(plans_and_a_newcomer())
def test_a_holder_inserted_gets_what_a_plan_made_with_it_gives(
    case: tuple[list[tuple[int, float]], list[tuple[int, float]], int, int],
) -> None:
    running, holders, later, placed = case
    world, releases, everyone, fits = _one_queue(running, holders)
    made = planning.Plan(world.cache.snapshot, 0.0, releases, everyone, fits)
    others = [h for i, h in enumerate(everyone) if i != later]
    grown = planning.Plan(world.cache.snapshot, 0.0, releases, others, fits)
    for holder in others[:placed]:
        grown.reservation_of(holder.info)  # placed as far as some question needed
    grown.insert(everyone[later])

    def seen(plan: planning.Plan) -> list[tuple[str, float, float]]:
        return [(r.holder.info.key.name, r.start, r.end) for r in plan.placed()]

    assert seen(grown) == seen(made)


TWO_FLAVORS = ("gpu-a", "gpu-b")


@st.composite
def plans_and_a_start(
    draw: st.DrawFn,
) -> tuple[
    dict[str, tuple[int, int]],
    list[tuple[str, int, float]],
    list[tuple[str, int, float]],
    int,
    tuple[str, int, float],
]:
    """A case of ``Plan.started``, in a cohort of two queues with two flavors each.

    Quotas per queue and flavor, running work (queue, GPUs, end), holders (queue, GPUs,
    estimate), how many holders the plan placed before the start, and the work that starts
    (queue, GPUs, end). Ends often tie, with each other and with reservations' starts.
    """
    quotas = {q: (draw(st.integers(0, 4)), draw(st.integers(0, 4))) for q in ("cq-a", "cq-b")}
    queue, gpus = st.sampled_from(["cq-a", "cq-b"]), st.integers(1, 4)
    end = st.sampled_from([5.0, 10.0, 20.0, 30.0])
    running = draw(st.lists(st.tuples(queue, gpus, end), max_size=5))
    holders = draw(st.lists(st.tuples(queue, st.integers(1, 8), end), min_size=1, max_size=4))
    placed = draw(st.integers(0, len(holders)))
    return quotas, running, holders, placed, draw(st.tuples(queue, gpus, end))


@given(plans_and_a_start())
def test_work_started_in_a_plan_gives_what_a_plan_made_with_it_gives(
    case: tuple[
        dict[str, tuple[int, int]],
        list[tuple[str, int, float]],
        list[tuple[str, int, float]],
        int,
        tuple[str, int, float],
    ],
) -> None:
    quotas, running, holders, placed, (queue, gpus, ends_at) = case
    world = World(
        *(builders.ResourceFlavorBuilder(f) for f in TWO_FLAVORS),
        *(
            builders.ClusterQueueBuilder(q)
            .cohort("pool")
            .resource_group(
                *(
                    builders.flavor_quotas(f, {GPU: n})
                    for f, n in zip(TWO_FLAVORS, quotas[q], strict=True)
                )
            )
            .strategy("Backfill")
            .set("spec.backfill", {"reservationDepth": len(holders)})
            for q in quotas
        ),
    )
    releases: list[planning.Release] = []

    def run(name: str, q: str, n: int, end: float) -> bool:
        info = world.info(_job(name, q, n, estimate=end), at=0.0)
        assignment, _ = world.assign(info, q)
        if assignment.mode != flavors.Mode.FIT:
            return False
        admission = world.admit(info, q, at=0.0)
        releases.append(planning.Release(end, names.ClusterQueueName(q), admission.usage))
        return True

    for i, (q, n, end) in enumerate(running):
        run(f"r{i}", q, n, end)
    everyone = [
        planning.Holder(
            world.info(_job(f"h{i}", q, n, estimate=None), at=float(i)),
            names.ClusterQueueName(q),
            estimates.Estimate(estimate, estimates.Source.DEFAULT),
        )
        for i, (q, n, estimate) in enumerate(holders)
    ]
    snap = world.cache.snapshot
    fits = reservations.Planner(snap, 0.0, reservations.Inputs({}, world.state.estimate), {}).fits
    grown = planning.Plan(snap, 0.0, releases, everyone, fits)
    for holder in everyone[:placed]:
        grown.reservation_of(holder.info)  # placed as far as some question needed
    if not run("started", queue, gpus, ends_at):
        return  # nothing starts
    grown.started(releases[-1])
    made = planning.Plan(snap, 0.0, releases, everyone, fits)

    def seen(plan: planning.Plan) -> list[tuple[str, float, float, dict[Any, int]]]:
        return [(r.holder.info.key.name, r.start, r.end, dict(r.usage)) for r in plan.placed()]

    assert seen(grown) == seen(made)


@st.composite
def plans_with_hints(
    draw: st.DrawFn,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]], list[float | None]]:
    """Running work (GPUs, end), holders (GPUs, estimate), and a hint per holder.

    Hints as earlier plans leave them (a release's end, ``now``, never) and wrong ones.
    """
    running = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 50)), max_size=6))
    holders = draw(
        st.lists(st.tuples(st.integers(1, 12), st.integers(1, 30)), min_size=1, max_size=5)
    )
    ends = [float(e) for _, e in running] or [0.0]
    hint = st.one_of(
        st.none(),
        st.sampled_from([*ends, 0.0, math.inf]),
        st.floats(min_value=0.0, max_value=100.0),
    )
    hints = draw(st.lists(hint, min_size=len(holders), max_size=len(holders)))
    return [(g, float(e)) for g, e in running], [(g, float(e)) for g, e in holders], hints


@given(plans_with_hints())
def test_a_hint_changes_where_a_placement_searches_never_what_it_finds(
    case: tuple[list[tuple[int, float]], list[tuple[int, float]], list[float | None]],
) -> None:
    running, holders, hints = case
    world, releases, everyone, fits = _one_queue(running, holders)
    given_hints = {
        h.info.key: hint for h, hint in zip(everyone, hints, strict=True) if hint is not None
    }
    hinted = planning.Plan(
        world.cache.snapshot, 0.0, releases, everyone, fits, hints=dict(given_hints)
    )
    plain = planning.Plan(world.cache.snapshot, 0.0, releases, everyone, fits)

    def seen(plan: planning.Plan) -> list[tuple[str, float, float, dict[Any, int]]]:
        return [(r.holder.info.key.name, r.start, r.end, dict(r.usage)) for r in plan.placed()]

    assert seen(hinted) == seen(plain)
    # What each search found is left as the next one's hint (never: infinity).
    placed = {r.holder.info.key: r.start for r in plain.placed()}
    assert hinted.hints == {h.info.key: placed.get(h.info.key, math.inf) for h in everyone}


@dataclasses.dataclass(frozen=True)
class Move:
    id: str
    holder_gpus: int
    to: float
    moved: bool


MOVES = [
    Move("before running work is due to end: moved", 8, 9.0, moved=True),
    Move("when running work is due to end: made again", 8, 10.0, moved=False),
    Move("a reservation starting at the plan's instant: made again", 2, 1.0, moved=False),
]


@pytest.mark.parametrize("row", MOVES, ids=lambda r: r.id)
def test_a_plan_is_taken_to_a_later_instant_only_if_nothing_in_it_depends_on_the_time(
    row: Move,
) -> None:
    # An 8-GPU queue with 4 GPUs running until 10; the holder waits for them or fits at once.
    world, releases, everyone, fits = _one_queue([(4, 10.0)], [(row.holder_gpus, 5.0)])
    plan = planning.Plan(world.cache.snapshot, 0.0, releases, everyone, fits)
    before = plan.placed()
    assert plan.moved_to(row.to) == row.moved
    assert plan.now == (row.to if row.moved else 0.0)
    if row.moved:
        again = planning.Plan(world.cache.snapshot, row.to, releases, everyone, fits)
        assert plan.placed() == before == again.placed()


@pytest.mark.parametrize(
    ("backfill", "start"),
    [
        pytest.param({"reservationDepth": 1}, 3600.0, id="settings unchanged: 1h default"),
        pytest.param(
            {"reservationDepth": 1, "defaultRuntime": "2h"}, 7200.0, id="a longer default"
        ),
        pytest.param(
            {"reservationDepth": 1, "defaultRuntime": "10m"}, 600.0, id="a shorter default"
        ),
    ],
)
def test_an_admin_changing_a_queues_default_runtime_moves_the_reservations_at_once(
    backfill: dict[str, Any], start: float
) -> None:
    # Running work's ends are recalled from cycle to cycle (``reservations.Inputs.ends``); the
    # queue's settings, applied again between two cycles, must not be answered from them.
    world = World(
        builders.ResourceFlavorBuilder("gpu"),
        *(_queue(name, 4, 1) for name in QUEUES),
        *(builders.LocalQueueBuilder(name, cluster_queue=name) for name in QUEUES),
    )
    world.admit(world.info(_job("run", "cq-a", 4, estimate=None), at=0), "cq-a")
    world.submit(world.info(_job("big", "cq-a", 12, estimate=60), at=1))

    def estimated_start() -> float | None:
        (pending,) = [p for p in world.cycle().pending if p.info.key.name == "big"]
        return pending.estimated_start

    assert estimated_start() == 3600.0  # the default runtime: 1h
    world.add(_queue("cq-a", 4, 1).set("spec.backfill", backfill))
    world.state.queues_changed(world.now)
    assert estimated_start() == start
