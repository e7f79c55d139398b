"""``state.queues.manager``: queue order, heads, requeueing by strategy, backoff, outsiders.

Kueue's queue manager is the model (``pkg/cache/queue/cluster_queue.go``, ``manager.go``):
- heads are taken by priority, then by creation (or eviction) time, then by uid;
- a head that does not fit goes back according to the queue's strategy. StrictFIFO keeps it at
  the front, except on a namespace mismatch. BestEffortFIFO parks it as inadmissible, so the next
  workload becomes the head;
- parked workloads return when something in their quota tree changes;
- Backfill (Berth's own) requeues as BestEffortFIFO; its first parked workloads are the
  holders of its reservations, and one held for a reservation is parked with the workloads of
  its shape and estimate, which go back when the tree's plan moves (``push_held``);
- a backed-off workload is no head until its time;
- a workload whose LocalQueue is missing waits outside every queue.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import builders
import worlds
from berth.api import names
from berth.api import workload as api_workload
from berth.core import cycle, workload
from berth.state.queues import cluster_queue, shapes
from berth.state.queues.pending import Note, PendingWorkload

GPU = "nvidia.com/gpu"
CQ = names.ClusterQueueName("cq")


def _world(strategy: str = "BestEffortFIFO", *, cqs: int = 1) -> worlds.World:
    objects: list[object] = [builders.ResourceFlavorBuilder("a100")]
    for i in range(cqs):
        name = "cq" if i == 0 else f"cq{i}"
        objects.append(
            builders.ClusterQueueBuilder(name).flavor_quotas("a100", {GPU: 4}).strategy(strategy)
        )
        objects.append(builders.LocalQueueBuilder(f"q{i}", "default").cluster_queue(name))
    return worlds.World(*objects)


def _info(
    w: worlds.World,
    name: str,
    *,
    priority: int = 0,
    at: float = 0.0,
    queue: str = "q0",
    gpus: int = 1,
) -> workload.WorkloadInfo:
    wl = (
        builders.WorkloadBuilder(name)
        .queue(queue)
        .priority(priority)
        .pod_set("main", 1, {GPU: gpus})
    )
    return w.info(wl, at=at)


def _order(w: worlds.World) -> list[str]:
    return [k.name for k in w.queues.queues[CQ].ordered()]


@dataclasses.dataclass(frozen=True)
class OrderRow:
    id: str
    workloads: list[tuple[str, int, float]]
    """(name, priority, created at), added in this order."""
    want: list[str]


ORDER_ROWS = [
    OrderRow("by priority", [("low", 0, 0), ("high", 10, 5)], ["high", "low"]),
    OrderRow("then by creation", [("late", 0, 5), ("early", 0, 1)], ["early", "late"]),
    OrderRow(
        "then by uid (the order they were made in)",
        [("b", 0, 1), ("a", 0, 1)],
        ["b", "a"],
    ),
]


@pytest.mark.parametrize("row", ORDER_ROWS, ids=lambda r: r.id)
def test_queue_order(row: OrderRow) -> None:
    w = _world()
    for name, prio, at in row.workloads:
        w.submit(_info(w, name, priority=prio, at=at))
    assert _order(w) == row.want
    heads = w.queues.heads()
    assert [h.info.key.name for h in heads] == row.want[:1]


def _pending(
    info: workload.WorkloadInfo, reason: cycle.RequeueReason, *, message: str = "no room"
) -> cycle.Pending:
    return cycle.Pending(info, CQ, "WaitingForQuota", message, reason)


@dataclasses.dataclass(frozen=True)
class RequeueRow:
    id: str
    strategy: str
    reason: cycle.RequeueReason
    want_head_next: str
    want_parked: bool


REQUEUE_ROWS = [
    RequeueRow(
        "BestEffortFIFO parks a head that does not fit",
        "BestEffortFIFO",
        cycle.RequeueReason.NO_FIT,
        "second",
        want_parked=True,
    ),
    RequeueRow(
        "StrictFIFO keeps it at the front",
        "StrictFIFO",
        cycle.RequeueReason.NO_FIT,
        "first",
        want_parked=False,
    ),
    RequeueRow(
        "StrictFIFO does not block on a namespace mismatch",
        "StrictFIFO",
        cycle.RequeueReason.NAMESPACE_MISMATCH,
        "second",
        want_parked=True,
    ),
    RequeueRow(
        "a head waiting for its preemptions stays the head",
        "BestEffortFIFO",
        cycle.RequeueReason.PENDING_PREEMPTION,
        "first",
        want_parked=False,
    ),
    RequeueRow(
        "Backfill parks a head that does not fit, as BestEffortFIFO",
        "Backfill",
        cycle.RequeueReason.NO_FIT,
        "second",
        want_parked=True,
    ),
    RequeueRow(
        "Backfill parks a head that would delay a reservation",
        "Backfill",
        cycle.RequeueReason.RESERVATION,
        "second",
        want_parked=True,
    ),
    RequeueRow(
        "a Backfill head waiting for its preemptions stays the head",
        "Backfill",
        cycle.RequeueReason.PENDING_PREEMPTION,
        "first",
        want_parked=False,
    ),
    RequeueRow(
        "a head skipped after nomination goes straight back",
        "BestEffortFIFO",
        cycle.RequeueReason.FAILED_AFTER_NOMINATION,
        "first",
        want_parked=False,
    ),
]


@pytest.mark.parametrize("row", REQUEUE_ROWS, ids=lambda r: r.id)
def test_requeue_by_strategy(row: RequeueRow) -> None:
    w = _world(row.strategy)
    first = _info(w, "first", at=0)
    w.submit(first)
    # Another shape: a BestEffortFIFO queue parks same-shape workloads with the head.
    w.submit(_info(w, "second", at=1, gpus=2))
    [head] = w.queues.heads()
    assert head.info.key.name == "first"
    w.queues.requeue(_pending(first, row.reason))
    assert w.queues.queues[CQ].is_parked(first.key) == row.want_parked
    [next_head] = w.queues.heads()
    assert next_head.info.key.name == row.want_head_next


def test_best_effort_parks_the_same_shape_with_the_head() -> None:
    # Kueue re-evaluates each; the same answer holds for the same shape until the tree changes,
    # so they are parked together (docs/scheduling.md, "same shape").
    w = _world()
    first = _info(w, "first")
    w.submit(first)
    w.submit(_info(w, "twin", at=1))
    w.queues.heads()
    same = w.queues.requeue(_pending(first, cycle.RequeueReason.NO_FIT))
    assert [(told.pw.info.key.name, told.before) for told in same] == [("twin", None)]
    assert w.queues.heads() == []
    assert w.queues.note(same[0].pw.info.key) == Note("WaitingForQuota", "no room")


@dataclasses.dataclass(frozen=True)
class JoinRow:
    id: str
    strategy: str = "BestEffortFIFO"
    reason: cycle.RequeueReason = cycle.RequeueReason.NO_FIT
    gpus: int = 1
    """The newcomer's request (the head asks for 1)."""
    released: bool = False
    """The tree's parked workloads went back before the newcomer came."""
    node_selector: dict[str, str] | None = None
    """The newcomer's (the head has none)."""
    want_joined: bool = False


JOIN_ROWS = [
    JoinRow("a newcomer of a shape parked for want of room joins it", want_joined=True),
    JoinRow(
        "so it does after the head found no candidates to preempt",
        reason=cycle.RequeueReason.PREEMPTION_NO_CANDIDATES,
        want_joined=True,
    ),
    JoinRow("and in a Backfill queue", strategy="Backfill", want_joined=True),
    JoinRow("a newcomer of another shape is tried", gpus=2),
    JoinRow(
        "one that differs only in the nodes it asks for gets its own answer: tried",
        node_selector={"zone": "b"},
    ),
    JoinRow("once the parked workloads went back, it is tried", released=True),
    JoinRow(
        "a shape held for a reservation may end before it: tried",
        strategy="Backfill",
        reason=cycle.RequeueReason.RESERVATION,
    ),
    JoinRow("StrictFIFO parks no shape: tried in its turn", strategy="StrictFIFO"),
]


@pytest.mark.parametrize("row", JOIN_ROWS, ids=lambda r: r.id)
def test_a_workload_entering_while_its_shape_is_parked(row: JoinRow) -> None:
    # Kueue v0.19's ClusterQueue.PushOrUpdate: a workload whose scheduling hash was bulk-moved
    # to the inadmissible set since it was last requeued goes there too (BestEffortFIFO).
    w = _world(row.strategy)
    head = _info(w, "head")
    w.submit(head)
    w.queues.heads()
    w.queues.requeue(_pending(head, row.reason))
    if row.released:
        w.queues.requeue_inadmissible(w.cache.root_of(CQ), 0.0)
    newcomer_wl = builders.WorkloadBuilder("newcomer").queue("q0")
    newcomer_wl.pod_set("main", 1, {GPU: row.gpus}, node_selector=row.node_selector)
    newcomer = w.info(newcomer_wl, at=1)
    joined = w.queues.add(newcomer)
    q = w.queues.queues[CQ]
    assert q.is_parked(newcomer.key) == row.want_joined
    assert [t.pw.info.key.name for t in joined] == (["newcomer"] if row.want_joined else [])
    if row.want_joined:
        assert w.queues.note(newcomer.key) == Note("WaitingForQuota", "no room")
        # It goes back with its shape at the next release, behind the head.
        w.queues.requeue_inadmissible(w.cache.root_of(CQ), 0.0)
        assert q.ordered() == [head.key, newcomer.key]
        assert q.active_count == 2


def test_a_queued_workload_that_changes_into_a_parked_shape_stays_active() -> None:
    # Kueue updates a workload that is in its heap in place; only one that was not there joins
    # the inadmissible set with its scheduling hash.
    w = _world()
    head = _info(w, "head")
    urgent = _info(w, "urgent", priority=5, at=1)
    w.submit(head)
    w.submit(urgent)
    [first] = w.queues.heads()
    assert first.info.key == urgent.key
    w.queues.requeue(_pending(urgent, cycle.RequeueReason.FAILED_AFTER_NOMINATION))
    w.queues.queues[CQ].park_same_shape(
        w.queues.pending[head.key].shape, Note("WaitingForQuota", "no room")
    )
    # Lowered to the parked shape's priority: the same shape now, but it was in the heap.
    assert w.queues.add(dataclasses.replace(urgent, priority=0)) == []
    assert not w.queues.queues[CQ].is_parked(urgent.key)
    assert w.queues.queues[CQ].is_parked(head.key)


def test_a_shape_told_the_same_reason_again_reports_no_change() -> None:
    # A released shape tried again and parked with the same reason: its workloads' message
    # changes, and none of them is reported as told another reason.
    w = _world()
    infos = [_info(w, name, at=i) for i, name in enumerate(["first", "second", "third"])]
    for info in infos:
        w.submit(info)
    w.queues.heads()
    w.queues.requeue(_pending(infos[0], cycle.RequeueReason.NO_FIT, message="1 short"))
    w.queues.requeue_inadmissible(w.cache.root_of(CQ), 0.0)
    [head] = w.queues.heads()
    assert head.info.key == infos[0].key
    again = w.queues.requeue(_pending(infos[0], cycle.RequeueReason.NO_FIT, message="2 short"))
    assert again == []
    assert w.queues.note(infos[2].key) == Note("WaitingForQuota", "2 short")


def test_parked_workloads_return_when_their_tree_changes() -> None:
    w = _world()
    first = _info(w, "first")
    w.submit(first)
    w.queues.heads()
    w.queues.requeue(_pending(first, cycle.RequeueReason.NO_FIT))
    assert w.queues.counts(CQ) == (0, 1)
    assert w.queues.requeue_inadmissible(w.cache.root_of(CQ), 0.0)
    assert w.queues.counts(CQ) == (1, 0)


def test_one_head_per_cluster_queue_in_name_order() -> None:
    w = _world(cqs=3)
    for i, cq in enumerate(["q2", "q0", "q1"]):
        w.submit(_info(w, f"w{i}", queue=cq))
        w.submit(_info(w, f"x{i}", queue=cq, at=1))
    heads = w.queues.heads()
    assert [str(h.cluster_queue) for h in heads] == ["cq", "cq1", "cq2"]
    assert [h.info.key.name for h in heads] == ["w1", "w2", "w0"]


def test_a_backed_off_workload_is_no_head_until_its_time() -> None:
    w = _world()
    info = _info(w, "a")
    w.queues.add(info, now=0.0, requeue_at=30.0)
    assert w.queues.heads() == []
    assert w.queues.next_backoff_expiry(0.0) == 30.0
    w.queues.add(info, now=30.0)
    assert [h.info.key.name for h in w.queues.heads()] == ["a"]


def test_a_workload_without_its_local_queue_waits_outside() -> None:
    w = _world()
    info = _info(w, "lost", queue="missing")
    w.submit(info)
    assert info.key in w.queues.outside
    assert w.queues.heads() == []
    assert w.queues.position(info.key) is None


def test_admitted_and_deleted_leave_the_queue() -> None:
    w = _world()
    a, b = _info(w, "a"), _info(w, "b", at=1)
    w.submit(a)
    w.submit(b)
    w.queues.admitted(a.key)
    w.queues.delete(b.key)
    assert w.queues.pending == {}
    assert w.queues.heads() == []


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=12))
def test_heads_follow_priority_then_time(specs: list[tuple[int, int]]) -> None:
    w = _world()
    infos = [_info(w, f"w{i}", priority=prio, at=float(at)) for i, (prio, at) in enumerate(specs)]
    for info in infos:
        w.submit(info)
    order = _order(w)
    want = sorted(infos, key=lambda i: (-i.priority, i.creation_time, i.uid))
    assert order == [i.key.name for i in want]


@dataclasses.dataclass(frozen=True)
class HeldRow:
    id: str
    strategy: str
    twin_queue: str = "q0"
    twin_runtime: str | None = None
    """Its ``berth.dev/expected-runtime``."""
    want_parked_with: bool = False


HELD_ROWS = [
    HeldRow(
        "Backfill parks a twin of the same LocalQueue with it: the same estimate",
        "Backfill",
        want_parked_with=True,
    ),
    HeldRow(
        "a twin with its own expected runtime may end sooner: it is tried",
        "Backfill",
        twin_runtime="10m",
    ),
    HeldRow(
        "a twin of another LocalQueue learns its estimate there: it is tried",
        "Backfill",
        twin_queue="other",
    ),
    HeldRow(
        "BestEffortFIFO (held while borrowing) keeps no estimate in its shapes: it is tried",
        "BestEffortFIFO",
    ),
]


@pytest.mark.parametrize("row", HELD_ROWS, ids=lambda r: r.id)
def test_a_head_held_for_a_reservation_stands_for_its_shape_and_estimate(row: HeldRow) -> None:
    w = _world(row.strategy)
    w.add(builders.LocalQueueBuilder("other", "default").cluster_queue("cq"))
    first = _info(w, "first", at=0)
    twin_wl = builders.WorkloadBuilder("twin").queue(row.twin_queue).pod_set("main", 1, {GPU: 1})
    if row.twin_runtime is not None:
        twin_wl.annotations({api_workload.EXPECTED_RUNTIME_ANNOTATION: row.twin_runtime})
    twin = w.info(twin_wl, at=1)
    w.submit(first)
    w.submit(twin)
    w.queues.heads()
    same = w.queues.requeue(_pending(first, cycle.RequeueReason.RESERVATION))
    assert [t.pw.info.key.name for t in same] == (["twin"] if row.want_parked_with else [])
    assert [h.info.key.name for h in w.queues.heads()] == ([] if row.want_parked_with else ["twin"])


def test_a_held_shape_tells_only_those_told_nothing_yet() -> None:
    # A shape whose answer turns between no room and a reservation with every release would
    # tell each of its workloads each time; those already waiting keep what they were told.
    w = _world("Backfill")
    infos = [_info(w, name, at=i) for i, name in enumerate(["head", "waits", "new"])]
    w.submit(infos[0])
    w.submit(infos[1])
    w.queues.heads()
    w.queues.requeue(_pending(infos[0], cycle.RequeueReason.NO_FIT, message="no room"))
    w.queues.requeue_inadmissible(w.cache.root_of(CQ), 0.0)
    w.submit(infos[2])
    [head] = w.queues.heads()
    assert head.info.key.name == "head"
    held = cycle.Pending(
        infos[0], CQ, "WaitingForReservation", "would delay", cycle.RequeueReason.RESERVATION
    )
    same = w.queues.requeue(held)
    assert [t.pw.info.key.name for t in same] == ["new"]
    notes = {info.key.name: w.queues.note(info.key) for info in infos[1:]}
    assert notes == {
        "waits": Note("WaitingForQuota", "no room"),
        "new": Note("WaitingForReservation", "would delay"),
    }
    assert w.queues.heads() == []  # all parked


def test_held_shapes_go_back_without_those_parked_for_want_of_room() -> None:
    w = _world("Backfill")
    held, twin = _info(w, "held", at=0), _info(w, "twin", at=1)
    big = _info(w, "big", at=2, gpus=4)
    for info in (held, twin, big):
        w.submit(info)
    w.queues.heads()
    w.queues.requeue(_pending(held, cycle.RequeueReason.RESERVATION))
    w.queues.heads()
    w.queues.requeue(_pending(big, cycle.RequeueReason.NO_FIT))
    assert w.queues.counts(CQ) == (0, 3)
    assert w.queues.retry_held(w.cache.root_of(CQ))
    # The first of the held shape is the head; its twin waits behind it, the big one parked.
    assert [h.info.key.name for h in w.queues.heads()] == ["held"]
    assert w.queues.counts(CQ) == (1, 1)
    assert not w.queues.retry_held(w.cache.root_of(CQ))  # nothing held any more


_OPS = st.lists(
    st.tuples(st.sampled_from(["park", "push", "remove", "release"]), st.integers(0, 7)),
    max_size=40,
)


@given(_OPS, st.integers(1, 3))
def test_holders_are_always_the_first_parked_in_queue_order(
    ops: list[tuple[str, int]], depth: int
) -> None:
    w = _world("Backfill")
    w.add(
        builders.ClusterQueueBuilder("cq")
        .flavor_quotas("a100", {GPU: 4})
        .strategy("Backfill")
        .set("spec.backfill", {"reservationDepth": depth})
    )
    infos = [_info(w, f"w{i}", priority=i % 3, at=float(7 - i)) for i in range(8)]
    for info in infos:
        w.submit(info)
    q = w.queues.queues[CQ]
    for op, i in ops:
        pw = w.queues.pending.get(infos[i].key)
        if op == "release":
            w.queues.requeue_inadmissible(w.cache.root_of(CQ), 0.0)
        elif pw is None:
            w.submit(infos[i])
        elif op == "park":
            q.park(pw)
        elif op == "push":
            q.push(pw)
        else:
            w.queues.delete(infos[i].key)
        want = sorted(q.parked(), key=lambda p: p.order)[:depth]
        assert w.queues.holders()[CQ] == [p.info for p in want]


_SHAPE_OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["park", "push", "park_shape", "park_held", "pop", "remove", "release", "retry_held"]
        ),
        st.integers(0, 15),
    ),
    max_size=80,
)


@given(_SHAPE_OPS)
def test_a_queue_moving_whole_shapes_answers_as_one_moving_every_workload(
    ops: list[tuple[str, int]],
) -> None:
    # The reference is the plain model the grouped queue must not differ from: every active
    # workload may be popped (the first in queue order is), releasing makes every parked one
    # active, and parking a shape parks every active workload of it and tells each of them the
    # note, which it holds until it is told something itself or parked with its shape again.
    # Parking a shape as held tells only those told nothing yet or that reason before; the
    # others keep theirs. Retrying the held shapes makes every parked workload of a shape last
    # parked as held active, unless a release came since. A workload that enters while its
    # shape was last parked (not held) and no release came since joins it, told its note.
    w = _world()
    infos = [
        _info(w, f"w{i}", priority=i % 2, gpus=1 + (i // 2) % 2, at=float(15 - i))
        for i in range(16)
    ]
    for info in infos:
        w.submit(info)
    q = w.queues.queues[CQ]
    state = dict.fromkeys((info.key for info in infos), "active")
    told: dict[names.WorkloadKey, Note | None] = dict.fromkeys(state)
    held: set[shapes.Shape] = set()
    bulk: dict[shapes.Shape, Note] = {}
    fresh = set(state)
    """Told nothing yet, by a driver or with a shape."""
    pending = w.queues.pending
    for n, (op, i) in enumerate(ops):
        key = infos[i].key
        pw = pending.get(key)
        if pw is None:
            _enter(w, infos[i], state, told=told, fresh=fresh, bulk=bulk)
        elif op == "park":
            q.park(pw)
            state[key] = "parked"
        elif op == "push":
            q.push(pw)
            state[key] = "active"
        elif op in ("park_shape", "park_held"):
            # Two reasons, so that some parkings tell a shape a reason other than its last.
            note = Note(f"R{n % 3 // 2}", f"m{n}")
            is_held = op == "park_held"
            _park_shape(q, pw, state, pending, told=told, note=note, fresh=fresh, held=is_held)
            (held.add if is_held else held.discard)(pw.shape)
            _remember_parked(bulk, pw.shape, note, held=is_held)
        elif op in ("release", "retry_held"):
            _release(w, state, held, only_held=op == "retry_held", bulk=bulk)
        elif op == "pop":
            _pop(q, state, pending)
        elif op == "remove":
            w.queues.delete(key)
            del state[key], told[key]
        else:  # "tell"
            w.queues.told(key)
            told[key] = None
            fresh.discard(key)
        _check(q, state, pending)
        assert {k: w.queues.note(k) for k in state} == told


def _remember_parked(
    bulk: dict[shapes.Shape, Note], shape: shapes.Shape, note: Note, *, held: bool
) -> None:
    """Parked for want of room (not held), a shape takes in what enters until a release."""
    if held:
        bulk.pop(shape, None)
    else:
        bulk[shape] = note


def _enter(
    w: worlds.World,
    info: workload.WorkloadInfo,
    state: dict[names.WorkloadKey, str],
    *,
    told: dict[names.WorkloadKey, Note | None],
    fresh: set[names.WorkloadKey],
    bulk: dict[shapes.Shape, Note],
) -> None:
    """Submit a workload: it joins its shape if that was last parked (not held) since a release."""
    key = info.key
    joined = w.queues.add(info)
    note = bulk.get(w.queues.pending[key].shape)
    if note is not None:
        assert [t.pw.info.key for t in joined] == [key]
        state[key], told[key] = "parked", note
        fresh.discard(key)
    else:
        assert joined == []
        state[key], told[key] = "active", None
        fresh.add(key)


def _release(
    w: worlds.World,
    state: dict[names.WorkloadKey, str],
    held: set[shapes.Shape],
    *,
    only_held: bool,
    bulk: dict[shapes.Shape, Note],
) -> None:
    """Release every parked workload (or those of the shapes last parked as held)."""
    root = w.cache.root_of(CQ)
    if only_held:
        w.queues.retry_held(root)
    else:
        w.queues.requeue_inadmissible(root, 0.0)
        bulk.clear()  # the parked shapes are forgotten: what enters is tried
    pending = w.queues.pending
    for k, s in state.items():
        if s == "parked" and (not only_held or pending[k].shape in held):
            state[k] = "active"
    held.clear()


def _park_shape(
    q: cluster_queue.ClusterQueuePending,
    pw: PendingWorkload,
    state: dict[names.WorkloadKey, str],
    pending: dict[names.WorkloadKey, PendingWorkload],
    *,
    told: dict[names.WorkloadKey, Note | None],
    note: Note,
    fresh: set[names.WorkloadKey],
    held: bool = False,
) -> None:
    reported = q.park_same_shape(pw.shape, note, held=held)
    want = {k for k, s in state.items() if s == "active" and pending[k].shape == pw.shape}
    if held:
        # Parked too, but told only if they were told nothing yet or that reason before.
        noted = {
            k
            for k in want
            if k in fresh or ((last := told[k]) is not None and last.reason == note.reason)
        }
    else:
        noted = want
    # Every workload told that held another reason (or its driver's word) is reported once,
    # with what it held.
    before = {k: told[k] for k in noted}
    keys = [r.pw.info.key for r in reported]
    assert len(keys) == len(set(keys))
    assert set(keys) == {k for k, n in before.items() if n is None or n.reason != note.reason}
    assert all(r.before == told[r.pw.info.key] for r in reported)
    state.update(dict.fromkeys(want, "parked"))
    told.update(dict.fromkeys(noted, note))
    fresh.difference_update(noted)


def _pop(
    q: cluster_queue.ClusterQueuePending,
    state: dict[names.WorkloadKey, str],
    pending: dict[names.WorkloadKey, PendingWorkload],
) -> None:
    head = q.pop()
    active = [k for k, s in state.items() if s == "active"]
    assert head == (min(active, key=lambda k: pending[k].order) if active else None)
    if head is not None:
        q.take(pending[head])
        state[head] = "taken"


def _check(
    q: cluster_queue.ClusterQueuePending,
    state: dict[names.WorkloadKey, str],
    pending: dict[names.WorkloadKey, PendingWorkload],
) -> None:
    def by_order(wanted: str) -> list[names.WorkloadKey]:
        keys = (k for k, s in state.items() if s == wanted)
        return sorted(keys, key=lambda k: pending[k].order)

    active, parked = by_order("active"), by_order("parked")
    assert q.ordered() == active + parked
    assert q.active_count == len(active)
    assert len(q) == len(active) + len(parked)
    assert all(q.is_parked(k) == (s == "parked") for k, s in state.items())
    assert all(q.contains(k) == (s != "taken") for k, s in state.items())
