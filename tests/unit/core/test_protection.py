"""Preemption protection (``core.protection``): who is kept from preemption, until when, and after.

Rows follow Kueue's KEP-9876 (``preemptionProtection.reclaimWithinCohort.minAdmitDuration`` and
``.fairSharing.minAdmitDuration``, kubernetes-sigs/kueue#12791 and its implementation #12996):
- a candidate admitted less than the window ago is skipped, after the policy (and, under fair
  sharing, the strategy) accepted it; the window of the reason it would be preempted for applies;
- the window ends at admission + minAdmitDuration exactly: a candidate is free from then on;
- a candidate already being evicted is never protected;
- preemption within a ClusterQueue is not protected unless Berth's ``withinClusterQueue`` is set;
- a preemptor kept back retries when the first protection ends (a timer: nothing else changes);
- a preemptor with ``reclaimWithinCohort: Any`` kept back holds the room it waits for
  (Kueue's ``CanAlwaysReclaim`` is false while a protection applies).
Berth's own: the windows are the victim's ClusterQueue's ``spec.preemptionProtection``, each
unset one the Configuration's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import builders
import worlds
from berth.api import conditions, names, protection
from berth.core import cycle, explain
from berth.core import protection as core_protection

GPU = "nvidia.com/gpu"
_REASON = conditions.PreemptionReason
WINDOW = 600.0


def _windows(**minutes: float) -> protection.PreemptionProtection:
    """The Configuration's windows: minutes by kind (``reclaim_within_cohort=10``)."""
    return protection.PreemptionProtection.model_validate(
        builders.ClusterQueueBuilder("unused")
        .protection(**_durations(minutes))
        .raw()["spec"]["preemptionProtection"]
    )


def _durations(minutes: dict[str, float]) -> dict[str, str]:
    return {kind: f"{m * 60:g}s" for kind, m in minutes.items()}


def _queue(name: str, nominal: int, own: dict[str, float] | None) -> builders.ClusterQueueBuilder:
    cq = (
        builders.ClusterQueueBuilder(name)
        .cohort("pool")
        .flavor_quotas("a100", {GPU: nominal})
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    )
    if own is not None:
        cq.protection(**_durations(own))
    return cq


def _world(
    cq_own: dict[str, float] | None = None,
    other_own: dict[str, float] | None = None,
    *,
    third: bool = False,
) -> worlds.World:
    """``cq`` and ``other`` (4 GPUs each) in cohort ``pool``; with ``third``, an idle lender."""
    objects: list[Any] = [
        builders.ResourceFlavorBuilder("a100"),
        _queue("cq", 4, cq_own),
        _queue("other", 4, other_own),
        builders.LocalQueueBuilder("q", "default").cluster_queue("cq"),
        builders.LocalQueueBuilder("oq", "default").cluster_queue("other"),
    ]
    if third:
        objects.append(_queue("third", 4, None))
    return worlds.World(*objects)


def _wl(name: str, queue: str, gpus: int, priority: int) -> builders.WorkloadBuilder:
    return (
        builders.WorkloadBuilder(name)
        .queue(queue)
        .priority(priority)
        .pod_set("main", 1, {GPU: gpus})
    )


def _reclaim(w: worlds.World) -> None:
    """``other`` borrows 2 of cq's GPUs (6 on a nominal 4), admitted at 0."""
    w.admit(w.info(_wl("borrower", "oq", 6, 0), at=0.0), "other", at=0.0)


def _within(w: worlds.World) -> None:
    """``cq`` runs a low-priority workload on all of its 4 GPUs; ``other`` uses its own 4."""
    w.admit(w.info(_wl("low", "q", 4, 0), at=0.0), "cq", at=0.0)
    w.admit(w.info(_wl("lender", "oq", 4, 100), at=0.0), "other", at=0.0)


def _fair(w: worlds.World) -> None:
    """``cq`` runs 4 of its own at high priority; other borrows third's 4 (four 2-GPU workloads)."""
    w.admit(w.info(_wl("own", "q", 4, 100), at=0.0), "cq", at=0.0)
    for i in range(4):
        w.admit(w.info(_wl(f"borrower-{i}", "oq", 2, 0), at=0.0), "other", at=0.0)


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    setup: str
    """reclaim, within or fair (see the functions of those names)."""
    config: dict[str, float]
    """The Configuration's windows, in minutes."""
    now: float
    want: list[tuple[str, conditions.PreemptionReason]]
    """Victims and reasons; [] when protection keeps them all."""
    protected_until: float | None = None
    other_own: dict[str, float] | None = None
    cq_own: dict[str, float] | None = None
    evicted: bool = False
    preemptor_gpus: int = 4


ROWS = [
    Row(
        "reclaim inside the window waits", "reclaim", {"reclaim_within_cohort": 10}, 60, [], WINDOW
    ),
    Row(
        "reclaim at the window's end preempts",
        "reclaim",
        {"reclaim_within_cohort": 10},
        WINDOW,
        [("borrower", _REASON.IN_COHORT_RECLAMATION)],
    ),
    Row(
        "a fair-sharing window does not protect from reclaim",
        "reclaim",
        {"fair_sharing": 10},
        60,
        [("borrower", _REASON.IN_COHORT_RECLAMATION)],
    ),
    Row(
        "the victim's queue turns its protection off with 0s",
        "reclaim",
        {"reclaim_within_cohort": 10},
        60,
        [("borrower", _REASON.IN_COHORT_RECLAMATION)],
        other_own={"reclaim_within_cohort": 0},
    ),
    Row(
        "the victim's queue protects its own workloads with no Configuration",
        "reclaim",
        {},
        60,
        [],
        1200.0,
        other_own={"reclaim_within_cohort": 20},
    ),
    Row(
        "the preemptor's queue's window is not the one that counts",
        "reclaim",
        {},
        60,
        [("borrower", _REASON.IN_COHORT_RECLAMATION)],
        cq_own={"reclaim_within_cohort": 20},
    ),
    Row(
        "a workload already being evicted is never protected",
        "reclaim",
        {"reclaim_within_cohort": 10},
        60,
        [("borrower", _REASON.IN_COHORT_RECLAMATION)],
        evicted=True,
    ),
    Row(
        "priority preemption in the queue is not protected by Kueue's windows",
        "within",
        {"reclaim_within_cohort": 10, "fair_sharing": 10},
        60,
        [("low", _REASON.IN_CLUSTER_QUEUE)],
    ),
    Row(
        "withinClusterQueue opts priority preemption in",
        "within",
        {"within_cluster_queue": 10},
        60,
        [],
        WINDOW,
    ),
]


def _run(row: Row, policy: cycle.Policy) -> tuple[list[tuple[str, Any]], explain.Explanation]:
    w = _world(row.cq_own, row.other_own, third=row.setup == "fair")
    {"reclaim": _reclaim, "within": _within, "fair": _fair}[row.setup](w)
    if row.evicted:
        w.cache.mark_evicted(names.WorkloadKey("default", "borrower"))
    preemptor = w.info(_wl("new", "q", row.preemptor_gpus, 10), at=row.now)
    with w.snap.what_if():
        guard = core_protection.Guard(w.snap, policy.protection, row.now)
        _a, targets = cycle.get_assignment(w.snap, w.cq("cq"), preemptor, policy, guard=guard)
    got = sorted((t.victim.info.key.name, t.reason) for t in targets)
    why = explain.explain(w.snap, preemptor, names.ClusterQueueName("cq"), policy, now=row.now)
    return got, why


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_classical_preemption_skips_protected_candidates(row: Row) -> None:
    policy = cycle.Policy(protection=_windows(**row.config) if row.config else None)
    got, why = _run(row, policy)
    assert got == sorted(row.want)
    if row.protected_until is None:
        assert why.protected is None
    else:
        assert why.protected is not None
        assert (why.protected.count, why.protected.until) == (1, row.protected_until)
        assert why.blocker == "protection"
        assert why.estimated_start == row.protected_until


FAIR_ROWS = [
    Row(
        "fair-sharing preemption inside the window waits",
        "fair",
        {"fair_sharing": 10},
        60,
        [],
        WINDOW,
        preemptor_gpus=2,
    ),
    Row(
        "a reclaim window does not protect from fair-sharing preemption",
        "fair",
        {"reclaim_within_cohort": 10},
        60,
        [("borrower-0", _REASON.IN_COHORT_FAIR_SHARING)],
        preemptor_gpus=2,
    ),
    Row(
        "fair-sharing preemption after the window",
        "fair",
        {"fair_sharing": 10},
        WINDOW,
        [("borrower-0", _REASON.IN_COHORT_FAIR_SHARING)],
        preemptor_gpus=2,
    ),
    Row(
        "under fair sharing, reclaim within nominal keeps the reclaim window",
        "reclaim",
        {"reclaim_within_cohort": 10},
        60,
        [],
        WINDOW,
    ),
]


@pytest.mark.parametrize("row", FAIR_ROWS, ids=lambda r: r.id)
def test_fair_preemption_skips_protected_candidates_after_the_strategy(row: Row) -> None:
    policy = cycle.Policy(fair_sharing=True, protection=_windows(**row.config))
    got, why = _run(row, policy)
    assert got == sorted(row.want)
    assert (why.protected is None) == (row.protected_until is None)


def test_a_preemptor_kept_back_retries_when_the_protection_ends() -> None:
    w = _world()
    _reclaim(w)
    policy = cycle.Policy(protection=_windows(reclaim_within_cohort=10))
    w.now = 60.0
    w.submit(w.info(_wl("new", "q", 4, 10), at=60.0))
    first = w.cycle(policy)
    assert not first.preempted
    [waiting] = first.pending
    assert waiting.requeue == cycle.RequeueReason.PREEMPTION_NO_CANDIDATES
    assert waiting.protected is not None
    assert waiting.protected.until == WINDOW
    assert first.recheck_at == WINDOW
    assert w.state.next_recheck() == WINDOW
    # Parked as inadmissible: nothing but the protection's end brings it back.
    assert w.state.schedule(WINDOW - 1, policy) is None
    assert not w.state.end_protections(WINDOW - 1)
    w.now = WINDOW
    assert w.state.end_protections(WINDOW)
    assert w.state.next_recheck() is None
    second = w.cycle(policy)
    assert [p.victim.info.key.name for p in second.preempted] == ["borrower"]


def test_a_kept_back_preemptor_that_could_always_reclaim_holds_the_room_it_waits_for() -> None:
    # other borrows 2 of cq's nominal 4 (6 of 8 used, 2 free); cq's preemptor needs 4. Kept
    # back by the protection, it holds cq's free 2, so other cannot borrow them meanwhile;
    # with no preemptor there, other borrows them.
    policy = cycle.Policy(protection=_windows(reclaim_within_cohort=10))
    for preemptor, want_admitted in ((True, []), (False, ["more"])):
        w = _world()
        _reclaim(w)
        w.now = 60.0
        if preemptor:
            w.submit(w.info(_wl("new", "q", 4, 10), at=w.now))
        w.submit(w.info(_wl("more", "oq", 2, 0), at=w.now + 1))
        result = w.cycle(policy)
        assert not result.preempted
        assert [a.info.key.name for a in result.admitted] == want_admitted


# Budgets ----------------------------------------------------------------------------------------
# Rows follow the PreemptedClusterQueue scope of Kueue's PreemptionLimit (KEP-13396,
# kubernetes-sigs/kueue#14554): a preemption goes ahead only if every limit it falls under has
# room left in its sliding window; Berth's budget owners are the victim's ClusterQueue and each
# Cohort above it.


def _budget_world(cq_budget: int | None, cohort_budget: int | None, gpus: int = 2) -> worlds.World:
    """``cq`` (``gpus`` GPUs, reclaim Any) lends to other and third (0 each), all in cohort pool."""
    pool = builders.CohortBuilder("pool")
    if cohort_budget is not None:
        pool.set("spec.preemptionBudget", {"limit": cohort_budget, "limitWindowDuration": "1h"})
    objects: list[Any] = [builders.ResourceFlavorBuilder("a100"), pool]
    for name, nominal in (("cq", gpus), ("other", 0), ("third", 0)):
        q = _queue(name, nominal, None)
        if name == "other" and cq_budget is not None:
            q.set("spec.preemptionBudget", {"limit": cq_budget, "limitWindowDuration": "1h"})
        objects.append(q)
        objects.append(builders.LocalQueueBuilder(f"lq-{name}", "default").cluster_queue(name))
    return worlds.World(*objects)


@dataclasses.dataclass(frozen=True)
class BudgetRow:
    id: str
    cq_budget: int | None
    cohort_budget: int | None
    borrowers: tuple[str, ...]
    """The queue of each 1-GPU borrower, admitted at 0; together they borrow all of cq's GPUs."""
    preemptors: tuple[int, ...]
    """GPUs of each preemptor in cq, submitted one per cycle at 60, 120, ..."""
    want: tuple[tuple[str, ...], ...]
    """The victims of each of those cycles."""
    spent_until: float | None = None
    """When the last cycle's preemptor's budget lets one more go, if it waited for one."""


BUDGET_ROWS = [
    BudgetRow(
        "a queue's budget of 1 per hour: the second reclaim waits for the window",
        1,
        None,
        ("other", "other"),
        (1, 1),
        (("b-0",), ()),
        spent_until=60 + 3600,
    ),
    BudgetRow(
        "within the budget every reclaim goes ahead",
        2,
        None,
        ("other", "other"),
        (1, 1),
        (("b-0",), ("b-1",)),
    ),
    BudgetRow(
        "a cohort's budget counts the evictions of all its queues",
        None,
        1,
        ("other", "third"),
        (1, 1),
        (("b-0",), ()),
        spent_until=60 + 3600,
    ),
    BudgetRow(
        "another queue's budget does not hold back victims of a queue without one",
        1,
        None,
        ("other", "third", "third"),
        (1, 1, 1),
        (("b-0",), ("b-1",), ("b-2",)),
    ),
    BudgetRow(
        "victims that together overspend the budget wait, though each alone fits it",
        1,
        None,
        ("other", "other"),
        (2,),
        ((),),
        spent_until=60 + 3600,
    ),
]


def _settle(w: worlds.World) -> tuple[list[str], list[cycle.Pending]]:
    """Run cycles until one changes nothing: every victim, and the last cycle's pending heads."""
    victims: list[str] = []
    for _ in range(10):
        result = w.cycle(cycle.Policy())
        victims += [p.victim.info.key.name for p in result.preempted]
        if not result.changed:
            return sorted(victims), result.pending
    raise AssertionError("the cycles did not settle")


@pytest.mark.parametrize("row", BUDGET_ROWS, ids=lambda r: r.id)
def test_a_preemption_budget_bounds_the_evictions_below_it_per_window(row: BudgetRow) -> None:
    w = _budget_world(row.cq_budget, row.cohort_budget, len(row.borrowers))
    for i, queue in enumerate(row.borrowers):
        w.admit(w.info(_wl(f"b-{i}", f"lq-{queue}", 1, 0), at=0.0), queue, at=0.0)
    pending: list[cycle.Pending] = []
    for i, (gpus, want) in enumerate(zip(row.preemptors, row.want, strict=True)):
        w.now = 60.0 * (i + 1)
        w.submit(w.info(_wl(f"p-{i}", "lq-cq", gpus, 10), at=w.now))
        victims, pending = _settle(w)
        assert tuple(victims) == want
    waiting = [p for p in pending if p.info.key.name.startswith("p-")]
    if row.spent_until is None:
        assert all(p.spent is None for p in waiting)
    else:
        [last] = waiting
        assert last.spent is not None
        assert last.spent.until == row.spent_until
        assert w.state.next_recheck() == row.spent_until


def test_a_preemptor_held_by_a_budget_preempts_once_the_window_lets_one_more_go() -> None:
    w = _budget_world(1, None)
    for i in range(2):
        w.admit(w.info(_wl(f"b-{i}", "lq-other", 1, 0), at=0.0), "other", at=0.0)
    w.now = 60.0
    w.submit(w.info(_wl("p-0", "lq-cq", 1, 10), at=w.now))
    assert _settle(w)[0] == ["b-0"]
    w.now = 120.0
    w.submit(w.info(_wl("p-1", "lq-cq", 1, 10), at=w.now))
    assert _settle(w)[0] == []
    assert w.state.next_recheck() == 3660.0
    w.now = 3659.0
    assert not w.state.end_protections(w.now)
    w.now = 3660.0
    assert w.state.end_protections(w.now)
    assert _settle(w)[0] == ["b-1"]


def test_when_a_protection_ends_only_the_heads_it_held_are_tried_again() -> None:
    # cq's preemptor is held by the borrower's protection; other's big workload is parked for
    # want of room, which the protection's end does not change: it stays parked.
    w = _world()
    _reclaim(w)
    policy = cycle.Policy(protection=_windows(reclaim_within_cohort=10))
    w.now = 60.0
    w.submit(w.info(_wl("new", "q", 4, 10), at=60.0))
    w.submit(w.info(_wl("huge", "oq", 8, 0), at=60.0))
    w.cycle(policy)
    queues = w.queues.queues
    new, huge = names.WorkloadKey("default", "new"), names.WorkloadKey("default", "huge")
    assert queues[names.ClusterQueueName("cq")].is_parked(new)
    assert queues[names.ClusterQueueName("other")].is_parked(huge)
    w.now = WINDOW
    assert w.state.end_protections(WINDOW)
    assert not queues[names.ClusterQueueName("cq")].is_parked(new)
    assert queues[names.ClusterQueueName("other")].is_parked(huge)
