"""``core.preemption`` through flavor assignment: which victims a preemptor gets, and why.

Rows follow Kueue's ``pkg/scheduler/preemption/preemption.go`` and its table tests
(``preemption_test.go``):
- ``withinClusterQueue`` ``LowerPriority`` takes lower-priority victims, lowest first, and never
  an equal priority. ``LowerOrNewerEqualPriority`` also takes newer workloads of equal priority.
  ``Never`` takes none;
- ``reclaimWithinCohort`` takes back nominal quota from a queue that borrows it
  (``InCohortReclamation``), and ``Never`` leaves the lender waiting;
- the fewest victims that make room are taken: candidates are removed in order until the
  preemptor fits, then given back where it still fits without them (fill-back).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import builders
import worlds
from berth.api import conditions
from berth.core import flavors, preemption

GPU = "nvidia.com/gpu"
_REASON = conditions.PreemptionReason


def _world(
    within: str = "LowerPriority",
    reclaim: str | None = None,
    *,
    cohort: bool = True,
    borrow: str | None = None,
) -> worlds.World:
    """``cq`` (4 GPUs) and, in its cohort when ``cohort``, ``other`` (4 GPUs)."""
    cq = (
        builders.ClusterQueueBuilder("cq")
        .flavor_quotas("a100", {GPU: 4})
        .preemption(
            within_cluster_queue=within, reclaim_within_cohort=reclaim, borrow_within_cohort=borrow
        )
    )
    if cohort:
        cq.cohort("pool")
    lender = builders.ClusterQueueBuilder("other").flavor_quotas("a100", {GPU: 4})
    if cohort:
        lender.cohort("pool")
    return worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        cq,
        lender,
        builders.LocalQueueBuilder("q", "default").cluster_queue("cq"),
        builders.LocalQueueBuilder("oq", "default").cluster_queue("other"),
    )


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    running: list[tuple[str, int, int, float]]
    """(name, gpus, priority, admitted at) in ``cq``."""
    want: list[str]
    """Victims, in the order they are taken."""
    within: str = "LowerPriority"
    preemptor: tuple[int, int] = (4, 10)
    """(gpus, priority) of the preemptor in ``cq``."""
    mode: flavors.Mode = flavors.Mode.PREEMPT
    """Flavor assignment says Preempt whenever preemption could make room in principle; whether
    any victim qualifies is the preemption search's answer (Kueue's flavorassigner, then
    preemption: no targets makes the cycle report PreemptionNoCandidates)."""


ROWS = [
    Row("one lower-priority victim", [("low", 4, 0, 0)], ["low"]),
    Row(
        "lowest priority first, only as many as needed",
        [("mid", 2, 5, 0), ("low", 2, 1, 0)],
        ["low", "mid"],
        preemptor=(4, 10),
    ),
    Row(
        "fill-back: a victim not needed after all is kept",
        [("low-small", 1, 0, 0), ("low-big", 3, 1, 0)],
        ["low-big"],
        preemptor=(3, 10),
    ),
    Row(
        "equal priority is never a victim under LowerPriority",
        [("peer", 4, 10, 0)],
        [],
    ),
    Row(
        "LowerOrNewerEqualPriority takes a newer peer",
        [("peer", 4, 10, 5)],
        ["peer"],
        within="LowerOrNewerEqualPriority",
    ),
    Row(
        "Never takes none",
        [("low", 4, 0, 0)],
        [],
        within="Never",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_victims_within_the_cluster_queue(row: Row) -> None:
    w = _world(row.within, cohort=False)  # no lender: room only by preemption
    for name, gpus, prio, at in row.running:
        wl = (
            builders.WorkloadBuilder(name).queue("q").priority(prio).pod_set("main", 1, {GPU: gpus})
        )
        w.admit(w.info(wl, at=at), "cq", at=at)
    gpus, prio = row.preemptor
    preemptor = w.info(
        builders.WorkloadBuilder("new").queue("q").priority(prio).pod_set("main", 1, {GPU: gpus}),
        at=1.0,
    )
    assignment, targets = w.assign(preemptor, "cq")
    assert assignment.mode == row.mode
    assert [t.victim.info.key.name for t in targets] == row.want
    assert all(t.reason == _REASON.IN_CLUSTER_QUEUE for t in targets)


@pytest.mark.parametrize(
    ("reclaim", "want"),
    [("Any", ["borrower"]), ("LowerPriority", ["borrower"]), ("Never", [])],
    ids=["Any reclaims", "LowerPriority reclaims a lower one", "Never waits"],
)
def test_reclaiming_lent_quota(reclaim: str, want: list[str]) -> None:
    # other borrows 2 of cq's 4 GPUs (it runs 6 on a nominal 4); cq needs its 4 back.
    w = _world(reclaim=reclaim)
    w.admit(
        w.info(
            builders.WorkloadBuilder("borrower")
            .queue("oq")
            .priority(0)
            .pod_set("main", 1, {GPU: 6})
        ),
        "other",
    )
    preemptor = w.info(
        builders.WorkloadBuilder("owner").queue("q").priority(5).pod_set("main", 1, {GPU: 4})
    )
    _assignment, targets = w.assign(preemptor, "cq")
    assert [t.victim.info.key.name for t in targets] == want
    assert all(t.reason == _REASON.IN_COHORT_RECLAMATION for t in targets)


@dataclasses.dataclass(frozen=True)
class BorrowRow:
    id: str
    own_priority: int
    """Priority of the 2 GPUs ``cq`` runs itself (the preemptor has priority 5)."""
    borrow: str | None
    want: list[tuple[str, conditions.PreemptionReason]]


BORROW_ROWS = [
    BorrowRow(
        "its own lower-priority work goes too, so it ends within nominal and reclaims",
        0,
        None,
        [("borrower", _REASON.IN_COHORT_RECLAMATION), ("own", _REASON.IN_CLUSTER_QUEUE)],
    ),
    BorrowRow(
        "its own work stays, so it would borrow: reclaiming needs it not to",
        10,
        None,
        [],
    ),
    BorrowRow(
        "borrowWithinCohort lets it reclaim while it borrows",
        10,
        "LowerPriority",
        [("borrower", _REASON.IN_COHORT_RECLAIM_WHILE_BORROWING)],
    ),
]


@pytest.mark.parametrize("row", BORROW_ROWS, ids=lambda r: r.id)
def test_reclaiming_for_a_request_beyond_what_is_left_of_nominal(row: BorrowRow) -> None:
    # cq runs 2 of its 4 GPUs; other borrows 2 (6 on a nominal 4); cq's new 4-GPU workload fits
    # its nominal quota only if its own work goes (Kueue: reclaiming without borrowing, by
    # priority, only for a preemptor that ends within nominal).
    w = _world(reclaim="Any", borrow=row.borrow)
    own = builders.WorkloadBuilder("own").queue("q").priority(row.own_priority)
    w.admit(w.info(own.pod_set("main", 1, {GPU: 2})), "cq")
    borrower = builders.WorkloadBuilder("borrower").queue("oq").priority(0)
    w.admit(w.info(borrower.pod_set("main", 1, {GPU: 6})), "other")
    preemptor = w.info(
        builders.WorkloadBuilder("new").queue("q").priority(5).pod_set("main", 1, {GPU: 4}),
        at=1.0,
    )
    _assignment, targets = w.assign(preemptor, "cq")
    assert sorted((t.victim.info.key.name, t.reason) for t in targets) == row.want


@settings(max_examples=50)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 20)), min_size=1, max_size=4))
def test_lower_priority_never_takes_an_equal_or_higher_victim(
    running: list[tuple[int, int]],
) -> None:
    w = _world()
    used = 0
    for i, (gpus, prio) in enumerate(running):
        if used + gpus > 4:
            break
        used += gpus
        wl = (
            builders.WorkloadBuilder(f"r{i}")
            .queue("q")
            .priority(prio)
            .pod_set("main", 1, {GPU: gpus})
        )
        w.admit(w.info(wl), "cq")
    preemptor = w.info(
        builders.WorkloadBuilder("new").queue("q").priority(10).pod_set("main", 1, {GPU: 4})
    )
    _assignment, targets = w.assign(preemptor, "cq")
    assert all(t.victim.info.priority < 10 for t in targets)
    freed = sum(t.victim.admission.usage.get(worlds.fr("a100", GPU), 0) for t in targets)
    if targets:
        assert 4 - used + freed >= 4  # the victims make room for the whole gang


@settings(max_examples=100, deadline=None)
@example(  # own work evicted too brings it within nominal: it may reclaim by priority
    own=[(2, 0)], lent=[(4, 0), (2, 0)], gpus=4, within="LowerPriority", reclaim="Any", borrow=None
)
@given(
    own=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 10)), max_size=3),
    lent=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 10)), max_size=4),
    gpus=st.integers(1, 8),
    within=st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
    reclaim=st.sampled_from(["Any", "LowerPriority"]),
    borrow=st.sampled_from([None, "LowerPriority"]),
)
def test_skipping_candidates_that_could_never_be_chosen_keeps_the_victims(
    *,
    own: list[tuple[int, int]],
    lent: list[tuple[int, int]],
    gpus: int,
    within: str,
    reclaim: str,
    borrow: str | None,
) -> None:
    # The search skips other queues' candidates by priority when the preemptor would borrow
    # even with its own queue's candidates gone; searching them all must give the same victims.
    w = _world(within, reclaim, borrow=borrow)
    for queue, lq, jobs in (("cq", "q", own), ("other", "oq", lent)):
        for i, (size, prio) in enumerate(jobs):
            wl = builders.WorkloadBuilder(f"{queue}-{i}").queue(lq).priority(prio)
            info = w.info(wl.pod_set("main", 1, {GPU: size}), at=float(i))
            if w.assign(info, queue)[0].mode == flavors.Mode.FIT:
                w.admit(info, queue, at=float(i))
    preemptor = w.info(
        builders.WorkloadBuilder("new").queue("q").priority(5).pod_set("main", 1, {GPU: gpus}),
        at=10.0,
    )
    _assignment, targets = w.assign(preemptor, "cq")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(preemption.Preemptor, "_borrows_without", lambda *_args: False)
        _assignment, searched = w.assign(preemptor, "cq")
    assert [(t.victim.info.key, t.reason) for t in targets] == [
        (t.victim.info.key, t.reason) for t in searched
    ]
