"""``core.cycle.schedule``: one scheduling cycle over the queue heads, checked directly.

Rows follow Kueue's scheduler (``pkg/scheduler/scheduler.go``) and its table tests
(``scheduler_test.go``):
- every ClusterQueue's head is nominated and the entries are taken in Kueue's order: first those
  that need no borrowing, then higher priority, then older (``core.ordering``);
- an entry that fits is admitted and its usage counts for the entries after it in the same
  cohort. A later entry that no longer fits is skipped after nomination and goes straight
  back to its queue (``FailedAfterNomination``) for the next cycle;
- a gang is admitted whole or not at all;
- an entry that must preempt marks its victims and waits for their release (PendingPreemption).
"""

from __future__ import annotations

import dataclasses

import pytest

import builders
import worlds
from berth.core import cycle, workload

GPU = "nvidia.com/gpu"
_R = cycle.RequeueReason


def _world(a: int = 2, b: int = 2, *, cohort: bool = True, preempt: bool = False) -> worlds.World:
    cqs = []
    for name, gpus in (("cq-a", a), ("cq-b", b)):
        cq = builders.ClusterQueueBuilder(name).flavor_quotas("a100", {GPU: gpus})
        if cohort:
            cq.cohort("pool")
        if preempt:
            cq.preemption(within_cluster_queue="LowerPriority")
        cqs.append(cq)
    return worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        *cqs,
        builders.LocalQueueBuilder("qa", "default").cluster_queue("cq-a"),
        builders.LocalQueueBuilder("qb", "default").cluster_queue("cq-b"),
    )


@dataclasses.dataclass(frozen=True)
class Submit:
    name: str
    queue: str
    gpus: int
    priority: int = 0
    at: float = 0.0
    pods: int = 1


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    world: worlds.World
    submit: list[Submit]
    want_admitted: list[str]
    want_pending: dict[str, cycle.RequeueReason] = dataclasses.field(default_factory=dict)
    running: list[Submit] = dataclasses.field(default_factory=list)
    want_preempted: list[str] = dataclasses.field(default_factory=list)


ROWS = [
    Row(
        "a head per ClusterQueue, both fit",
        _world(cohort=False),
        [Submit("a", "qa", 2), Submit("b", "qb", 2)],
        ["a", "b"],
    ),
    Row(
        "the entry that needs no borrowing goes first (Kueue: borrowing last)",
        _world(),
        [Submit("borrows", "qa", 3, priority=10), Submit("within", "qb", 2)],
        ["within"],
        {"borrows": _R.FAILED_AFTER_NOMINATION},
    ),
    Row(
        "between two borrowers, the higher priority goes first",
        _world(),
        [Submit("low", "qa", 3, priority=1), Submit("high", "qb", 3, priority=5)],
        ["high"],
        {"low": _R.FAILED_AFTER_NOMINATION},
    ),
    Row(
        "between equal borrowers, the older goes first",
        _world(),
        [Submit("young", "qa", 3, at=5), Submit("old", "qb", 3, at=1)],
        ["old"],
        {"young": _R.FAILED_AFTER_NOMINATION},
    ),
    Row(
        "a gang that fits only whole waits whole",
        _world(cohort=False),
        [Submit("gang", "qa", 1, pods=3)],
        [],
        {"gang": _R.NO_FIT},
    ),
    Row(
        "a preemptor marks its victim and waits for its release",
        _world(cohort=False, preempt=True),
        [Submit("urgent", "qa", 2, priority=10)],
        [],
        {"urgent": _R.PENDING_PREEMPTION},
        running=[Submit("low", "qa", 2)],
        want_preempted=["low"],
    ),
]


def _info(w: worlds.World, s: Submit) -> workload.WorkloadInfo:
    wl = (
        builders.WorkloadBuilder(s.name)
        .queue(s.queue)
        .priority(s.priority)
        .pod_set("main", s.pods, {GPU: s.gpus})
    )
    return w.info(wl, at=s.at)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_one_cycle(row: Row) -> None:
    w = row.world
    for s in row.running:
        cq = "cq-a" if s.queue == "qa" else "cq-b"
        w.admit(_info(w, s), cq)
    for s in row.submit:
        w.submit(_info(w, s))
    result = w.state.schedule(w.now, cycle.Policy())
    assert result is not None
    assert sorted(a.info.key.name for a in result.admitted) == sorted(row.want_admitted)
    assert {p.info.key.name: p.requeue for p in result.pending} == row.want_pending
    assert [p.victim.info.key.name for p in result.preempted] == row.want_preempted
    for p in result.pending:
        assert p.message  # every pending head says why, in words


def test_admissions_of_one_cycle_count_for_the_next_entry() -> None:
    # Both fit alone; together they exceed the cohort's 4 GPUs: the second waits.
    w = _world()
    w.submit(_info(w, Submit("first", "qa", 3, at=0)))
    w.submit(_info(w, Submit("second", "qb", 3, at=1)))
    result = w.state.schedule(w.now, cycle.Policy())
    assert result is not None
    assert [a.info.key.name for a in result.admitted] == ["first"]
    usage = sum(a.admission.usage.get(worlds.fr("a100", GPU), 0) for a in result.admitted)
    assert usage == 3


def test_an_empty_queue_runs_no_cycle() -> None:
    w = _world()
    assert w.state.schedule(w.now, cycle.Policy()) is None


def test_an_entry_whose_victims_another_entry_chose_is_skipped_not_given_victims_of_its_own() -> (
    None
):
    """The second preemptor of overlapping victims waits for the next cycle, evicting nothing.

    Kueue v0.19: ``scheduler.go`` processEntry, with ``RecomputeAssignmentUponPreemptionTargets-
    Overlap`` off by default.

    Five queues of 20 CPUs (borrowing limit 100) in a cohort, in the baseline's shape: cq-a and
    cq-b each run a large (20), two mediums (5) and a small (1), cq-c and cq-d a medium and a
    small, cq-e four mediums; 6 CPUs are free. A large arrives in cq-c and one in cq-d. The first
    evicts its own queue's medium and small and cq-a's two mediums; the second's victims overlap
    those. Recomputed as if they were gone, it would evict six others in the same cycle.
    """
    cqs = [
        builders.ClusterQueueBuilder(f"cq-{q}")
        .flavor_quotas("rf", {"cpu": (20, 100)})
        .cohort("co")
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
        for q in "abcde"
    ]
    w = worlds.World(
        builders.ResourceFlavorBuilder("rf"),
        *cqs,
        *(builders.LocalQueueBuilder(f"q{q}", "default").cluster_queue(f"cq-{q}") for q in "abcde"),
    )

    def info(name: str, q: str, priority: int, cpu: int, at: float) -> workload.WorkloadInfo:
        wl = builders.WorkloadBuilder(name).queue(f"q{q}").priority(priority)
        return w.info(wl.pod_set("main", 1, {"cpu": cpu}), at=at)

    running = [
        *(
            (f"{kind}-{q}", q, prio, cpu)
            for q in "ab"
            for kind, prio, cpu in (("large", 200, 20), ("medium", 100, 5), ("medium2", 100, 5))
        ),
        ("small-a", "a", 50, 1),
        ("small-b", "b", 50, 1),
        *(
            (f"{kind}-{q}", q, prio, cpu)
            for q in "cd"
            for kind, prio, cpu in (("medium", 100, 5), ("small", 50, 1))
        ),
        *((f"medium-e{i}", "e", 100, 5) for i in range(4)),
    ]
    for i, (name, q, prio, cpu) in enumerate(running):
        w.admit(info(name, q, prio, cpu, at=i / 100), f"cq-{q}", at=i / 100)
    w.submit(info("large-c", "c", 200, 20, at=1.0))
    w.submit(info("large-d", "d", 200, 20, at=1.0))
    result = w.state.schedule(w.now, cycle.Policy())
    assert result is not None
    by = {p.victim.info.key.name: p.preemptor.key.name for p in result.preempted}
    assert set(by.values()) == {"large-c"}, by
    pending = {p.info.key.name: p for p in result.pending}
    assert pending["large-c"].requeue == _R.PENDING_PREEMPTION
    assert pending["large-d"].requeue == _R.FAILED_AFTER_NOMINATION
    assert pending["large-d"].message == (
        "Workload has overlapping preemption targets with another workload"
    )
