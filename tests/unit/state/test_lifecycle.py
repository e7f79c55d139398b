"""``state.lifecycle.Lifecycle``: the transitions both drivers make, checked directly.

A recording ``CycleEffects`` shows what a driver is told of each decision and in which order. The
rows check when a cycle has progressed (Kueue's scheduler runs again after it admits, preempts,
parks a head as inadmissible, or has flavors left to try). They also check that a release
requeues the inadmissible workloads of the quota tree (Kueue's ``QueueInadmissibleWorkloads`` on
a workload's deletion or finish, ``pkg/cache/queue/manager.go``), that backoffs end, and that a
priority change re-sorts a pending workload without losing its backoff, and when the workloads
held for a Backfill reservation are tried again: once the cycles settle, where the quota tree's
holders changed since they last settled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

import builders
import worlds
from berth.api import names
from berth.core import cycle
from berth.state import lifecycle
from berth.state.queues import pending

GPU = "nvidia.com/gpu"


@dataclasses.dataclass
class Recorder:
    """A driver's effects, recorded in the order ``apply_cycle`` calls them."""

    calls: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def evicting(self, decision: cycle.Preempt) -> None:
        self.calls.append(("evicting", decision.victim.info.key.name))

    def admitted(self, decision: cycle.Admit) -> None:
        self.calls.append(("admitted", decision.info.key.name))

    def parked(self, decision: cycle.Pending, same_shape: list[pending.Told]) -> None:
        self.calls.append(("parked", decision.info.key.name))
        self.calls.extend(("parked-with", told.pw.info.key.name) for told in same_shape)


_RECORDER_IS_EFFECTS: lifecycle.CycleEffects = Recorder()
"""Checked by mypy: the recorder is a driver's effects as ``apply_cycle`` takes them."""


def _world(
    gpus: int = 4, *, preempt: bool = False, strategy: str = "BestEffortFIFO"
) -> worlds.World:
    cq = builders.ClusterQueueBuilder("cq").flavor_quotas("a100", {GPU: gpus}).strategy(strategy)
    if preempt:
        cq.preemption(within_cluster_queue="LowerPriority")
    return worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        cq,
        builders.LocalQueueBuilder("q", "default").cluster_queue("cq"),
    )


def _wl(name: str, gpus: int, priority: int = 0) -> builders.WorkloadBuilder:
    return (
        builders.WorkloadBuilder(name).queue("q").priority(priority).pod_set("main", 1, {GPU: gpus})
    )


def _apply(w: worlds.World) -> tuple[bool, list[tuple[str, str]]]:
    result = w.state.schedule(w.now, cycle.Policy())
    assert result is not None
    rec = Recorder()
    return w.state.apply_cycle(result, w.now, rec), rec.calls


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    gpus: int
    submit: list[tuple[str, int, int]]
    """(name, gpus, priority) pending, in order."""
    admitted: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)
    preempt: bool = False
    strategy: str = "BestEffortFIFO"
    want_progress: bool = True
    want_calls: list[tuple[str, str]] = dataclasses.field(default_factory=list)


ROWS = [
    Row("a fitting head is admitted", 4, [("a", 2, 0)], want_calls=[("admitted", "a")]),
    Row(
        "a head that does not fit is parked: the next one becomes the head (progress)",
        4,
        [("big", 8, 0)],
        want_calls=[("parked", "big")],
    ),
    Row(
        "StrictFIFO keeps a head that does not fit at the front: no progress",
        4,
        [("big", 8, 0)],
        strategy="StrictFIFO",
        want_progress=False,
        want_calls=[("parked", "big")],
    ),
    Row(
        "a preemption marks the victim, then the preemptor waits for its release",
        4,
        [("urgent", 4, 10)],
        admitted=[("low", 4, 0)],
        preempt=True,
        want_calls=[("evicting", "low"), ("parked", "urgent")],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_apply_cycle(row: Row) -> None:
    w = _world(row.gpus, preempt=row.preempt, strategy=row.strategy)
    for name, gpus, prio in row.admitted:
        w.admit(w.info(_wl(name, gpus, prio)), "cq")
    for name, gpus, prio in row.submit:
        w.submit(w.info(_wl(name, gpus, prio)))
    progressed, calls = _apply(w)
    assert (progressed, calls) == (row.want_progress, row.want_calls)
    for kind, name in calls:
        key = names.WorkloadKey("default", name)
        if kind == "admitted":
            assert key in w.cache.admitted
            assert key not in w.queues.pending
        if kind == "evicting":
            assert w.cache.admitted[key].evicted


def test_a_victim_is_marked_once() -> None:
    w = _world(4, preempt=True)
    w.admit(w.info(_wl("low", 4, 0)), "cq")
    w.submit(w.info(_wl("urgent", 4, 10)))
    result = w.state.schedule(w.now, cycle.Policy())
    assert result is not None
    result.preempted.extend(result.preempted)  # the same victim twice
    rec = Recorder()
    w.state.apply_cycle(result, w.now, rec)
    assert rec.calls.count(("evicting", "low")) == 1


def test_release_requeues_the_inadmissible_workloads_of_the_tree() -> None:
    w = _world(4)
    running = w.info(_wl("running", 4))
    w.admit(running, "cq")
    w.submit(w.info(_wl("waiting", 2)))
    _apply(w)  # parked: no room
    q = w.queues.queues[names.ClusterQueueName("cq")]
    assert q.is_parked(names.WorkloadKey("default", "waiting"))
    released = w.state.release(running.key, w.now)
    assert released is not None
    assert released.cluster_queue == "cq"
    assert not q.is_parked(names.WorkloadKey("default", "waiting"))
    _progressed, calls = _apply(w)
    assert calls == [("admitted", "waiting")]
    assert w.state.release(running.key, w.now) is None  # nothing held any more


def test_a_backoff_ends_when_due() -> None:
    w = _world(4)
    info = w.info(_wl("a", 2))
    w.state.enqueue(info, 0.0, requeue_at=30.0)
    assert w.state.schedule(0.0, cycle.Policy()) is None  # backing off: no head
    assert w.state.due_backoffs(29.0) == []
    assert w.state.due_backoffs(30.0) == [info.key]
    assert w.state.end_backoff(info.key, 30.0) == []  # back in its queue, no shape parked
    assert w.state.end_backoff(names.WorkloadKey("default", "gone"), 30.0) is None
    result = w.state.schedule(30.0, cycle.Policy())
    assert result is not None
    assert [a.info.key for a in result.admitted] == [info.key]


def test_a_priority_change_re_sorts_and_keeps_the_backoff() -> None:
    w = _world(2)
    first = w.info(_wl("first", 2, 0))
    second = w.info(_wl("second", 2, 0), at=1.0)
    w.submit(first)
    w.submit(second)
    w.state.change_info(dataclasses.replace(second, priority=5), 0.0)
    result = w.state.schedule(0.0, cycle.Policy())
    assert result is not None
    assert [a.info.key.name for a in result.admitted] == ["second"]
    held = w.info(_wl("held", 1, 0))
    w.state.enqueue(held, 0.0, requeue_at=50.0)
    w.state.change_info(dataclasses.replace(held, priority=9), 0.0)
    assert w.queues.pending[held.key].requeue_at == 50.0


def test_a_priority_change_of_an_admitted_workload_counts_in_preemption() -> None:
    w = _world(2, preempt=True)
    low = w.info(_wl("low", 2, 0))
    w.admit(low, "cq")
    w.state.change_info(dataclasses.replace(low, priority=20), 0.0)
    w.submit(w.info(_wl("mid", 2, 10)))
    _progressed, calls = _apply(w)
    assert ("evicting", "low") not in calls  # it now outranks the preemptor


def _held_world() -> worlds.World:
    """Backfill workloads held for a reservation, and the queues to change their plan with.

    Queue ``cq`` has 4 GPUs (3 running until minute 60), in cohort ``all`` with ``cq2``;
    ``solo`` is a tree of its own. At minute 10 ``big`` (4 GPUs) holds a reservation at minute
    60; ``s1`` and ``s2`` (1 GPU for an hour, the same shape and estimate) fit now but would
    delay it.
    """

    def queue(name: str, gpus: int, cohort: str | None) -> builders.ClusterQueueBuilder:
        b = builders.ClusterQueueBuilder(name).flavor_quotas("a100", {GPU: gpus})
        b.strategy("Backfill")
        return b if cohort is None else b.cohort(cohort)

    w = worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        queue("cq", 4, "all"),
        queue("cq2", 0, "all"),
        queue("solo", 4, None),
        builders.LocalQueueBuilder("q", "default").cluster_queue("cq"),
        builders.LocalQueueBuilder("q2", "default").cluster_queue("cq2"),
        builders.LocalQueueBuilder("qs", "default").cluster_queue("solo"),
    )
    w.admit(w.info(_timed("running", 3, "60m")), "cq", at=0.0)
    w.now = 600.0
    w.submit(w.info(_timed("big", 4, "60m"), at=100.0))
    for i, name in enumerate(["s1", "s2"]):
        w.submit(w.info(_timed(name, 1, "60m"), at=200.0 + i))
    return w


def _timed(name: str, gpus: int, runtime: str, queue: str = "q") -> builders.WorkloadBuilder:
    return (
        builders.WorkloadBuilder(name)
        .queue(queue)
        .annotations({"berth.dev/expected-runtime": runtime})
        .pod_set("main", 1, {GPU: gpus})
    )


def _settle(w: worlds.World) -> list[tuple[str, str]]:
    """Run cycles until one makes no progress or none has a head; every call, in order."""
    calls: list[tuple[str, str]] = []
    for _ in range(20):
        result = w.state.schedule(w.now, cycle.Policy())
        if result is None:
            return calls
        rec = Recorder()
        progressed = w.state.apply_cycle(result, w.now, rec)
        calls += rec.calls
        if not progressed:
            return calls
    raise AssertionError(f"the cycles did not settle: {calls[-6:]}")


@dataclasses.dataclass(frozen=True)
class HeldRow:
    id: str
    change: Callable[[worlds.World], None]
    want_calls: list[tuple[str, str]]


def _admit_in_tree(w: worlds.World) -> None:
    w.admit(w.info(_timed("late", 1, "5m")), "cq")


def _new_holder(w: worlds.World) -> None:
    w.submit(w.info(_timed("huge", 8, "60m", queue="q2"), at=150.0))


def _holder_elsewhere(w: worlds.World) -> None:
    w.submit(w.info(_timed("apart", 8, "60m", queue="qs"), at=150.0))


def _holder_gone(w: worlds.World) -> None:
    w.state.withdraw(names.WorkloadKey("default", "big"))


HELD_ROWS = [
    HeldRow("nothing changed: they stay parked", lambda _w: None, []),
    HeldRow("work admitted in the tree: they wait for a release", _admit_in_tree, []),
    HeldRow(
        "the holder is gone: the first of the shape starts, the next finds no room",
        _holder_gone,
        [("admitted", "s1"), ("parked", "s2")],
    ),
    HeldRow(
        "a new holder in the tree: its head is parked, then the held shape is tried",
        _new_holder,
        [("parked", "huge"), ("parked", "s1")],
    ),
    HeldRow(
        "a new holder in another tree: its head is parked, they stay parked",
        _holder_elsewhere,
        [("parked", "apart")],
    ),
]


@pytest.mark.parametrize("row", HELD_ROWS, ids=lambda r: r.id)
def test_held_shapes_are_tried_again_when_their_tree_moved(row: HeldRow) -> None:
    w = _held_world()
    first = _settle(w)
    # The held shape is parked whole, and tried once more when the cycles first settle.
    assert first == [
        ("parked", "big"),
        ("parked", "s1"),
        ("parked-with", "s2"),
        ("parked", "s1"),
    ]
    assert w.queues.note(names.WorkloadKey("default", "s2")) is not None
    row.change(w)
    assert _settle(w) == row.want_calls
    assert _settle(w) == []  # settled: no change, no retry
