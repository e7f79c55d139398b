"""The Backfill strategy: reservations for blocked heads and who may start beside them.

Each case builds queues, admits the running workloads (each with a known estimate and start),
queues the holders and then the candidate (in that creation order), and runs cycles until the
candidate is decided. Times are in minutes; every estimate comes from the workload's
``berth.dev/expected-runtime`` unless the case says otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import builders
from berth.api import conditions, names
from berth.core import cycle
from berth.sim import documents, engine
from worlds import World

GPU = "nvidia.com/gpu"
MIN = 60.0


def cq(
    name: str,
    gpus: int,
    *,
    strategy: str = "Backfill",
    cohort: str | None = None,
    depth: int | None = None,
    ahead: str | None = None,
) -> builders.ClusterQueueBuilder:
    b = builders.ClusterQueueBuilder(name).flavor_quotas("gpu", {GPU: gpus}).strategy(strategy)
    if cohort is not None:
        b.cohort(cohort)
    settings: dict[str, object] = {}
    if depth is not None:
        settings["reservationDepth"] = depth
    if ahead is not None:
        settings["aheadOfReservations"] = ahead
    if settings:
        b.set("spec.backfill", settings)
    return b


@dataclasses.dataclass(frozen=True)
class Job:
    name: str
    queue: str
    gpus: int
    minutes: float
    """Its estimate (berth.dev/expected-runtime) in minutes."""
    started: float = 0.0
    """Running jobs: when it was admitted, in minutes."""
    priority: int = 0
    limit: float | None = None
    """berth.dev/runtime-limit in minutes, if any."""

    def builder(self) -> builders.WorkloadBuilder:
        notes = {"berth.dev/expected-runtime": f"{self.minutes}m"}
        if self.limit is not None:
            notes["berth.dev/runtime-limit"] = f"{self.limit}m"
        return (
            builders.WorkloadBuilder(self.name)
            .queue(self.queue)
            .priority(self.priority)
            .annotations(notes)
            .pod_set("main", 1, {GPU: self.gpus})
        )


@dataclasses.dataclass(frozen=True)
class Case:
    queues: tuple[builders.ClusterQueueBuilder, ...]
    running: tuple[Job, ...]
    holders: tuple[Job, ...]
    candidate: Job
    admitted: bool
    now: float = 0.0
    start: float | None = None
    """The first holder's estimated start, in minutes (None: it holds no reservation)."""
    delays: str = "big"
    """The holder whose reservation a held candidate would delay."""
    preempts: str | None = None
    """The victim of a candidate that preempts instead (preemption is not held back)."""
    fair: bool = False
    """Run the cycles with fair sharing."""
    why: str = "its estimated runtime of"
    """What a held candidate's message says delays the reservation."""


def run(case: Case) -> tuple[cycle.Admit | cycle.Pending, cycle.Pending | None, cycle.CycleResult]:
    """The candidate's decision, the first holder's latest pending decision, the last cycle."""
    policy = cycle.Policy(fair_sharing=case.fair)
    lqs = [
        builders.LocalQueueBuilder(q.obj().name, cluster_queue=q.obj().name) for q in case.queues
    ]
    world = World(builders.ResourceFlavorBuilder("gpu"), *case.queues, *lqs)
    for job in case.running:
        world.admit(
            world.info(job.builder(), at=job.started * MIN), job.queue, at=job.started * MIN
        )
    world.now = case.now * MIN
    first = names.WorkloadKey("default", case.holders[0].name) if case.holders else None
    held: cycle.Pending | None = None
    for i, job in enumerate(case.holders):
        world.submit(world.info(job.builder(), at=world.now - 10 + i))
    for _ in case.holders:  # each is the head once, found blocked and parked
        result = world.cycle(policy)
        assert not result.admitted, "a holder must be blocked"
        held = next((p for p in result.pending if p.info.key == first), held)
    world.submit(world.info(case.candidate.builder(), at=world.now))
    result = world.cycle(policy)
    want = names.WorkloadKey("default", case.candidate.name)
    decisions: list[cycle.Admit | cycle.Pending] = [*result.admitted, *result.pending]
    decision = next(d for d in decisions if d.info.key == want)
    return decision, held, result


A, B, C = "cq-a", "cq-b", "cq-c"

CASES = [
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("short", A, 4, 20),
            admitted=True,
            start=60,
        ),
        id="a job that ends before the reservation starts is admitted",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("long", A, 4, 90),
            admitted=False,
            start=60,
        ),
        id="a job that would still run when the reservation starts waits",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 6, 30),),
            candidate=Job("long", A, 2, 90),
            admitted=True,
            start=60,
        ),
        id="a long job that leaves the reservation its room is admitted beside it",
    ),
    pytest.param(
        Case(
            (cq(A, 8, strategy="BestEffortFIFO"),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("long", A, 4, 90),
            admitted=True,
        ),
        id="BestEffortFIFO holds no reservation: the long job goes past the blocked head",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("urgent", A, 4, 90, priority=10),
            admitted=True,
            start=60,
        ),
        id="a later job of higher priority is ahead of the blocked one and not bound by it",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 30),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("short", A, 4, 15),
            now=40,
            admitted=True,
            start=60,
        ),
        id="a job past its estimate is expected to run as long again: the reservation moves",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 30),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("longer", A, 4, 25),
            now=40,
            admitted=False,
            start=60,
        ),
        id="the moved reservation still binds a job that would run past it",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("bounded", A, 4, 120, limit=20),
            admitted=True,
            start=60,
        ),
        id="a runtime limit below the expected runtime is the estimate",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("huge", A, 16, 30),),
            candidate=Job("long", A, 4, 90),
            admitted=True,
        ),
        id="a holder that can never fit holds nothing",
    ),
    pytest.param(
        Case(
            (cq(A, 4, cohort="pool"), cq(B, 4, cohort="pool"), cq(C, 0, cohort="pool")),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("own", B, 4, 90),
            admitted=True,
            start=60,
        ),
        id="another queue's job within its own nominal quota is not held for a borrower's "
        "reservation",
    ),
    pytest.param(
        Case(
            (cq(A, 4, cohort="pool"), cq(B, 4, cohort="pool"), cq(C, 0, cohort="pool")),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("borrower", C, 2, 90),
            admitted=False,
            start=60,
        ),
        id="another queue's borrowing job is held for a reservation in the cohort",
    ),
    pytest.param(
        Case(
            (
                cq(A, 4, cohort="pool"),
                cq(B, 4, cohort="pool"),
                cq(C, 0, cohort="pool", strategy="BestEffortFIFO"),
            ),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("borrower", C, 2, 30),
            admitted=True,
            start=60,
        ),
        id="a borrowing job that ends before the reservation starts is admitted",
    ),
    pytest.param(
        Case(
            (cq(A, 8).preemption(within_cluster_queue="LowerPriority"),),
            running=(Job("peer", A, 4, 60, priority=10), Job("low", A, 4, 60)),
            holders=(Job("big", A, 8, 30, priority=10),),
            candidate=Job("mid", A, 4, 90, priority=5),
            admitted=False,
            start=60,
            preempts="low",
        ),
        id="a job behind the holder that may preempt does so: preemption goes by priority",
    ),
    pytest.param(
        Case(
            (
                cq(A, 4, cohort="pool").fair_weight(1),
                cq(B, 4, cohort="pool").fair_weight(1),
                cq(C, 0, cohort="pool").fair_weight(1),
            ),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("borrower", C, 2, 90),
            admitted=False,
            start=60,
            fair=True,
        ),
        id="with fair sharing, a borrowing job is still held for the reservation",
    ),
    pytest.param(
        Case(
            (cq(A, 8),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 6, 30), Job("mid", A, 8, 30)),
            candidate=Job("small", A, 2, 100),
            admitted=True,
            start=60,
        ),
        id="depth 1: only the first blocked workload holds a reservation",
    ),
    pytest.param(
        Case(
            (cq(A, 8, depth=2),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 6, 30), Job("mid", A, 8, 30)),
            candidate=Job("small", A, 2, 100),
            admitted=False,
            start=60,
            delays="mid",
        ),
        id="depth 2: the second blocked workload's reservation, placed after the first, binds too",
    ),
    pytest.param(
        Case(
            (cq(A, 8, ahead="RuntimeLimit"),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("short", A, 4, 20),
            admitted=False,
            start=60,
            why="that queue lets only a runtime limit (activeDeadlineSeconds) ending before a "
            "reservation run ahead of it; this workload has none",
        ),
        id="limits only: an estimate that ends before the reservation does not let a job ahead",
    ),
    pytest.param(
        Case(
            (cq(A, 8, ahead="RuntimeLimit"),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("bounded", A, 4, 20, limit=50),
            admitted=True,
            start=60,
        ),
        id="limits only: a runtime limit that ends before the reservation lets a job ahead",
    ),
    pytest.param(
        Case(
            (cq(A, 8, ahead="RuntimeLimit"),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("bounded", A, 4, 20, limit=90),
            admitted=False,
            start=60,
            why="its runtime limit of 1h30m would delay",
        ),
        id="limits only: a short estimate under a limit past the reservation waits",
    ),
    pytest.param(
        Case(
            (cq(A, 8, ahead="RuntimeLimit"),),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 6, 30),),
            candidate=Job("unbounded", A, 2, 20),
            admitted=True,
            start=60,
        ),
        id="limits only: a job without a limit still runs beside a reservation that keeps its room",
    ),
    pytest.param(
        Case(
            (
                cq(A, 4, cohort="pool", ahead="RuntimeLimit"),
                cq(B, 4, cohort="pool"),
                cq(C, 0, cohort="pool", strategy="BestEffortFIFO"),
            ),
            running=(Job("run", A, 4, 60),),
            holders=(Job("big", A, 8, 30),),
            candidate=Job("borrower", C, 2, 30),
            admitted=False,
            start=60,
            why="this workload has none",
        ),
        id="limits only: the reservation's queue decides, for a borrower of another queue too",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_backfill_decides_as_reservations_say(case: Case) -> None:
    decision, held, result = run(case)
    assert isinstance(decision, cycle.Admit) == case.admitted, decision
    if case.preempts is not None:
        assert isinstance(decision, cycle.Pending)
        assert decision.reason == conditions.PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS
        assert [p.victim.info.key.name for p in result.preempted] == [case.preempts]
    elif not case.admitted:
        assert isinstance(decision, cycle.Pending)
        assert decision.reason == conditions.PendingReason.WAITING_FOR_RESERVATION
        assert decision.requeue == cycle.RequeueReason.RESERVATION
        assert f"would delay the reservation of default/{case.delays} " in decision.message
        assert case.why in decision.message
    if case.start is None:
        assert held is None or held.estimated_start is None
    else:
        assert held is not None
        assert held.estimated_start == case.start * MIN


@st.composite
def exact_streams(draw: st.DrawFn) -> list[documents.Document]:
    """One 8-GPU Backfill queue and jobs whose estimates are their true runtimes."""
    depth = draw(st.integers(1, 3))
    raws: list[dict[str, Any]] = [
        builders.ResourceFlavorBuilder("gpu").raw(),
        cq(A, 8, depth=depth).raw(),
        builders.LocalQueueBuilder(A, cluster_queue=A).raw(),
    ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for i in range(draw(st.integers(2, 14))):
        runtime = float(draw(st.integers(1, 20)))
        job = Job(f"j{i}", A, draw(st.sampled_from([1, 2, 4, 6, 8])), runtime / 60)
        raw = job.builder().raw()
        at = float(draw(st.integers(0, 30)))
        docs.append(documents.generated(raw, len(docs), at=at, run_for=runtime))
    docs.sort(key=lambda d: d.at)
    return docs


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_streams())
def test_with_exact_estimates_no_reservation_is_ever_delayed(
    docs: list[documents.Document],
) -> None:
    events = engine.Simulator(docs).run()
    started = [e for e in events if e["event"] == "Admitted" and "estimatedStart" in e]
    for e in started:
        assert e["t"] <= e["estimatedStart"] + 1e-6, e
    assert all(e["event"] != "Preempted" for e in events)
