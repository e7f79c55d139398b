"""Pending workloads: one ordered queue per ClusterQueue plus an inadmissible set.

Mirrors Kueue's queue manager (``pkg/cache/queue``). Each ClusterQueue keeps an *active* heap
ordered by ``core.ordering.queue_key`` and an *inadmissible* set. ``heads`` pops one workload
from every ClusterQueue that may admit; ``requeue`` puts a head that was not admitted back:

- StrictFIFO: always back into the heap (it stays the head and blocks the queue), except on a
  namespace mismatch, which must not block other namespaces.
- BestEffortFIFO: back into the heap only when it was skipped after nomination, is waiting for
  its preemptions, or has flavors left to try; otherwise into the inadmissible set, so the next
  workload becomes the head. A workload that issued preemptions becomes *sticky*: it stays the
  head until it is admitted, found inadmissible or deleted.
- If inadmissible workloads were requeued since the head was popped, it goes straight back.
- Backfill (Berth's own): as BestEffortFIFO, and a head that fits but would delay a
  reservation (``RequeueReason.RESERVATION``) is parked with its shape too: in a Backfill queue a
  shape includes what decides the workload's runtime estimate, so the workloads of one shape
  would delay the same reservation. ``holders`` gives the cycle each Backfill queue's first
  parked workloads, which hold the reservations (``core.backfill``).

``requeue_inadmissible`` moves inadmissible workloads of a whole quota tree back to the heap when
something there changed (a workload finished or was evicted, a queue, cohort or flavor changed).
Parked workloads move as whole scheduling shapes (``ClusterQueueQueue``), so a release costs in
proportion to the shapes parked, with the same heads in the same order as moving each one.

A head parked with its shape shares what it was told (a ``Note``) with the workloads parked with
it: the queues keep the note once for the whole group, so telling a thousand workloads why they
wait costs as much as telling one. ``note`` reads what a queued workload was last told that way.

Workloads whose LocalQueue or ClusterQueue is missing or stopped wait outside any queue.
Used by the operator's scheduler loop and the simulator; no I/O, no clock.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import typing
import weakref
from collections.abc import Iterator, Sequence

from berth.api import clusterqueue, names
from berth.core import cycle, ordering, workload
from berth.state import cache as cache_mod

_IMMEDIATE_BEST_EFFORT = {
    cycle.RequeueReason.FAILED_AFTER_NOMINATION,
    cycle.RequeueReason.PENDING_PREEMPTION,
    cycle.RequeueReason.WAITING_FOR_PODS_READY,
}


class Shape:
    """A workload's ``scheduling_shape``, hashed once: the queues file workloads under it.

    One object per shape (``_shape``) makes each lookup an identity test.
    """

    __slots__ = ("__weakref__", "_hash", "key")

    def __init__(self, key: tuple[object, ...]) -> None:
        self.key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Shape) and self.key == other.key)


_SHAPES: weakref.WeakValueDictionary[tuple[object, ...], Shape] = weakref.WeakValueDictionary()
"""The one ``Shape`` of each scheduling shape in use."""


def _shape(key: tuple[object, ...]) -> Shape:
    found = _SHAPES.get(key)
    if found is None:
        found = _SHAPES[key] = Shape(key)
    return found


def _queue_shape(info: workload.WorkloadInfo, strategy: clusterqueue.QueueingStrategy) -> Shape:
    """The shape a queue files a workload under.

    Its scheduling shape, and under Backfill also what its runtime estimate is made from
    besides its pod sets (``state.runtimes``): its own bounds and its LocalQueue. Workloads of
    one such shape get the same estimate at any time, so one held for a reservation stands for
    all of them (``core.backfill``: those behind it see the same reservations ahead and more).
    """
    key = info.scheduling_shape()
    if strategy == clusterqueue.QueueingStrategy.BACKFILL:
        estimated = (
            info.key.namespace,
            info.local_queue,
            info.runtime_limit,
            info.expected_runtime,
        )
        key = (*key, estimated)
    return _shape(key)


Order = tuple[bool, int, float, str]


@dataclasses.dataclass(frozen=True, slots=True)
class Note:
    """Why a head was not admitted, as the workloads of its shape parked with it were told."""

    reason: str
    message: str


class Told(typing.NamedTuple):
    """A workload parked with a head's shape that held another reason, or its driver's word.

    ``before`` is the note it held (None: what its driver told it itself).
    """

    pw: PendingWorkload
    before: Note | None


@dataclasses.dataclass(slots=True)
class PendingWorkload:
    """A workload waiting for admission, and what the queue remembers about it."""

    info: workload.WorkloadInfo
    cluster_queue: names.ClusterQueueName | None = None
    progress: cycle.ScanProgress | None = None
    requeue_at: float = 0.0
    """Not before this time (backoff after a pods-ready timeout)."""
    shape: Shape = dataclasses.field(init=False)
    """Set when it is placed in a ClusterQueue, which files it by it (``_queue_shape``)."""
    preemptor: bool = False
    """It issued preemptions and waits for the room they make."""
    preempted_for: tuple[int, ...] | None = None
    """The pod counts its preemptions were decided for, when partial admission reduced them."""
    order: Order = (False, 0, 0.0, "")
    """Its ``ordering.queue_key``, kept: a parked workload is pushed back after every release
    in its quota tree, and its info never changes while it is queued."""
    note: Note | None = None
    """What it was told with its shape, while it does not share its group's note (None: what
    its driver told it itself holds)."""
    own_word: bool = False
    """Its driver told it something itself once (else, with ``note`` None, it was told nothing
    yet)."""

    @property
    def fresh(self) -> bool:
        """Told nothing yet, by its driver or with its shape (while it shares no group's note)."""
        return self.note is None and not self.own_word

    def __post_init__(self) -> None:
        self.order = ordering.queue_key(self.info)


def _takes_held(pw: PendingWorkload, note: Note) -> bool:
    """Whether a workload not sharing a group's note is told a held head's ``note``.

    Yes if it was told nothing yet, or that reason before; one waiting for another reason
    keeps it.
    """
    return pw.fresh or (pw.note is not None and pw.note.reason == note.reason)


def _differs(before: Note | None, note: Note) -> bool:
    """Whether a workload that held ``before`` is told another reason by ``note``."""
    return before is None or before.reason != note.reason


class _Group:
    """Workloads of one shape that move together: parked, or released but not in the heap.

    Members share ``note`` except the *loose* ones, which hold their own (``PendingWorkload.note``
    or their driver's). A member joins loose; telling the group (``tell``) makes every member
    share the new note. Loose members are kept in the order they joined, which is the order of
    ``members``: both only ever append.
    """

    __slots__ = ("heap", "loose", "members", "note", "parked", "shape")

    def __init__(self, shape: Shape, *, parked: bool) -> None:
        self.shape = shape
        self.members: dict[names.WorkloadKey, PendingWorkload] = {}
        self.heap: list[tuple[Order, names.WorkloadKey]] = []
        """Members by order; entries of members gone are dropped when they reach the top."""
        self.parked = parked
        self.note: Note | None = None
        self.loose: dict[names.WorkloadKey, PendingWorkload] = {}

    def add(self, pw: PendingWorkload) -> None:
        """Take in a member, loose."""
        self.members[pw.info.key] = pw
        self.loose[pw.info.key] = pw
        heapq.heappush(self.heap, (pw.order, pw.info.key))

    def drop(self, key: names.WorkloadKey) -> PendingWorkload:
        """Let a member go; it keeps what it was told."""
        pw = self.members.pop(key)
        if self.loose.pop(key, None) is None:
            pw.note = self.note
        return pw

    def shares(self, key: names.WorkloadKey) -> bool:
        """Tell whether a member holds the group's note."""
        return key in self.members and key not in self.loose

    def tell(self, note: Note) -> list[Told]:
        """Every member now holds ``note``; return those that held another reason or their own.

        Costs in proportion to the loose members, unless the reason changed.
        """
        old = self.note
        if old is not None and old.reason != note.reason:
            told = [
                Told(pw, pw.note if key in self.loose else old) for key, pw in self.members.items()
            ]
        else:
            told = [Told(pw, pw.note) for pw in self.loose.values()]
        told = [t for t in told if _differs(t.before, note)]
        for pw in self.loose.values():
            pw.note = None
        self.loose.clear()
        self.note = note
        return told

    def tell_held(self, note: Note) -> list[Told]:
        """Members told ``note``'s reason or nothing yet now hold ``note``; the others keep theirs.

        Returns those told nothing before. Costs in proportion to the loose members.
        """
        if self.note is not None and self.note.reason == note.reason:
            self.note = note
        told = []
        for pw in self.loose.values():
            if _takes_held(pw, note):
                if pw.fresh:
                    told.append(Told(pw, None))
                pw.note = note
        return told

    def first(self) -> PendingWorkload | None:
        """The member first in queue order (None: no member)."""
        heap, members = self.heap, self.members
        while heap:
            order, key = heap[0]
            pw = members.get(key)
            if pw is not None and pw.order == order:
                return pw
            heapq.heappop(heap)
        return None


class ClusterQueueQueue:
    """The pending workloads of one ClusterQueue.

    Active workloads are in a heap by queue order, parked ones in the inadmissible set. A parked
    workload of a scheduling shape stands for every other of that shape, so parking and releasing
    move whole shapes (``_Group``): a release puts only the first of each parked shape into the
    heap and keeps the others *dormant* (active, but not in the heap). Whenever a workload of a
    shape leaves the heap, the first dormant one of its shape takes its place, so the first in the
    heap is always the first active workload; when the head of a shape is parked again, its
    dormant ones are parked with it at once. A release then costs in proportion to the shapes
    parked, not the workloads.
    """

    def __init__(
        self, name: names.ClusterQueueName, strategy: clusterqueue.QueueingStrategy
    ) -> None:
        self.name = name
        self.strategy = strategy
        self._heap: list[tuple[Order, int, names.WorkloadKey]] = []
        self._active: dict[names.WorkloadKey, Order] = {}
        """The workloads in the heap, with their order."""
        self._in_heap: dict[names.WorkloadKey, Order] = {}
        """The order of an entry each key still has in the heap: pushing a key back with the same
        order adds none, so parking and requeueing a queue over and over leaves no trail of
        stale entries for ``pop`` to wade through."""
        self._active_by_shape: dict[Shape, dict[names.WorkloadKey, PendingWorkload]] = {}
        self._parked: dict[Shape, _Group] = {}
        self._dormant: dict[Shape, _Group] = {}
        self._group_of: dict[names.WorkloadKey, _Group] = {}
        self._backoff: dict[names.WorkloadKey, PendingWorkload] = {}
        """Parked workloads that carry a backoff time: each is released on its own once due."""
        self._bulk: dict[Shape, Note] = {}
        """Shapes parked for want of room since the parked workloads last went back, with what
        their head was told: a workload of one of them that enters the queue joins it there
        (``enter``)."""
        self._held: dict[Shape, None] = {}
        """Parked shapes whose head was held for a reservation: that answer holds only while
        the quota tree's reservations stand, so they also go back when its holders change
        (``push_held``). In the order they were parked."""
        self._parked_count = 0
        self._dormant_count = 0
        self.sticky: names.WorkloadKey | None = None
        self._first_parked: list[PendingWorkload] | None = None
        """The first parked workloads in order (Backfill's holders), kept while still true."""
        self._first_depth = 0
        self.pop_cycle = -1
        self.requeue_cycle = -1
        self._seq = itertools.count()

    def __len__(self) -> int:
        return self.active_count + self._parked_count + len(self._backoff)

    @property
    def active_count(self) -> int:
        """Workloads that may be popped (in the heap, or dormant behind one there)."""
        return len(self._active) + self._dormant_count

    @property
    def parks_any(self) -> bool:
        """Tell whether anything is in the inadmissible set (``push_parked`` has work)."""
        return bool(self._parked or self._backoff or self._bulk)

    def forget_shapes(self) -> None:
        """Workloads that enter go into the heap until a shape is parked for want of room again."""
        self._bulk = {}

    def is_active(self, key: names.WorkloadKey) -> bool:
        """Tell whether the workload may be popped (in the heap, or dormant behind one there)."""
        if key in self._active:
            return True
        group = self._group_of.get(key)
        return group is not None and not group.parked

    def is_parked(self, key: names.WorkloadKey) -> bool:
        """Tell whether the workload is in the inadmissible set."""
        group = self._group_of.get(key)
        return key in self._backoff or (group is not None and group.parked)

    def parked(self) -> Iterator[PendingWorkload]:
        """The workloads of the inadmissible set, in no particular order."""
        yield from self._backoff.values()
        for group in self._parked.values():
            yield from group.members.values()

    def _unpark(self, key: names.WorkloadKey) -> bool:
        """Take a workload out of the inadmissible set or a dormant group; tell if parked."""
        if self._backoff.pop(key, None) is not None:
            self._forget_first(key)
            return True
        group = self._group_of.pop(key, None)
        if group is None:
            return False
        group.drop(key)
        shapes = self._parked if group.parked else self._dormant
        if group.parked:
            self._parked_count -= 1
            self._forget_first(key)
        else:
            self._dormant_count -= 1
        if not group.members and shapes.get(group.shape) is group:
            del shapes[group.shape]
        return group.parked

    def push(self, pw: PendingWorkload) -> None:
        """Put a workload into the heap (replacing its old place)."""
        key = pw.info.key
        self._unpark(key)
        self._activate(key, pw)

    def enter(self, pw: PendingWorkload, *, was_active: bool) -> list[Told]:
        """Take in a workload that arrives or changed: into the heap, or parked with its shape.

        One of a shape parked for want of room joins it, told what its head was, unless it
        ``was_active`` here already: it would get the same answer, so trying it would only cost a
        cycle. So does Kueue's ``ClusterQueue.PushOrUpdate`` with scheduling equivalence hashing
        (on by default since v0.18), until the parked workloads go back (``push_parked``).
        Returns it if it held another reason, or its driver's word.
        """
        note = self._bulk.get(pw.shape)
        if note is None or was_active:
            self.push(pw)
            return []
        self.park(pw)
        told = [Told(pw, pw.note)] if _differs(pw.note, note) else []
        pw.note = note
        return told

    def _forget_first(self, key: names.WorkloadKey) -> None:
        first = self._first_parked
        if first is not None and any(pw.info.key == key for pw in first):
            self._first_parked = None

    def first_parked(self, depth: int) -> list[PendingWorkload]:
        """The first ``depth`` parked workloads in queue order (waiting out a backoff or not)."""
        if self._first_parked is None or self._first_depth != depth:
            self._first_parked = heapq.nsmallest(depth, self.parked(), key=lambda pw: pw.order)
            self._first_depth = depth
        return list(self._first_parked)

    def _activate(self, key: names.WorkloadKey, pw: PendingWorkload) -> None:
        order = pw.order
        self._active[key] = order
        self._active_by_shape.setdefault(pw.shape, {})[key] = pw
        if self._in_heap.get(key) != order:
            self._in_heap[key] = order
            heapq.heappush(self._heap, (order, next(self._seq), key))

    def _promote(self, shape: Shape) -> None:
        """Put the first dormant workload of a shape into the heap."""
        group = self._dormant.get(shape)
        first = None if group is None else group.first()
        if group is None or first is None:
            return
        key = first.info.key
        group.drop(key)
        del self._group_of[key]
        self._dormant_count -= 1
        if not group.members:
            del self._dormant[shape]
        self._activate(key, first)

    def push_parked(self, now: float) -> bool:
        """Release every parked workload whose backoff is over; tell if any was.

        The same as ``push`` of each in turn: each parked shape joins its dormant workloads and
        its first goes into the heap; a workload with a backoff time goes in on its own.
        """
        moved = False
        for key, pw in list(self._backoff.items()):
            if pw.requeue_at <= now:
                del self._backoff[key]
                self._activate(key, pw)
                moved = True
        for group in self._parked.values():
            self._wake(group)
            moved = True
        self._parked = {}
        self._held = {}
        self._bulk = {}
        if moved:
            self._first_parked = None
        return moved

    @property
    def holds_any(self) -> bool:
        """Tell whether a parked shape waits for a reservation (``push_held`` has work)."""
        return bool(self._held)

    def push_held(self) -> bool:
        """Release the parked shapes held for a reservation; tell if any was."""
        moved = False
        for shape in self._held:
            group = self._parked.pop(shape, None)
            if group is not None:
                self._wake(group)
                moved = True
        self._held = {}
        if moved:
            self._first_parked = None
        return moved

    def _wake(self, group: _Group) -> None:
        """A parked group joins the dormant workloads of its shape; its first goes into the heap."""
        shape = group.shape
        self._parked_count -= len(group.members)
        self._dormant_count += len(group.members)
        group.parked = False
        self._dormant[shape] = self._merged(self._dormant.get(shape), group)
        self._promote(shape)

    def _merged(self, into: _Group | None, group: _Group) -> _Group:
        """One group of both (the larger keeps its place; the other's members join it, loose)."""
        if into is None:
            return group
        if len(into.members) < len(group.members):
            into, group = group, into
        for key in list(group.members):
            into.add(group.drop(key))
            self._group_of[key] = into
        return into

    def _deactivate(self, key: names.WorkloadKey, shape: Shape) -> bool:
        """Take a workload out of the heap; tell whether it was there."""
        if self._active.pop(key, None) is None:
            return False
        same = self._active_by_shape.get(shape)
        if same is not None:
            same.pop(key, None)
            if not same:
                del self._active_by_shape[shape]
        return True

    def _leave_heap(self, key: names.WorkloadKey, shape: Shape) -> None:
        """Take a workload out of the heap; the first dormant one of its shape takes its place."""
        if self._deactivate(key, shape):
            self._promote(shape)

    def park(self, pw: PendingWorkload) -> None:
        """Put a workload into the inadmissible set."""
        key = pw.info.key
        if key in self._active:
            self._leave_heap(key, pw.shape)
        else:
            self._unpark(key)
        self._add_parked(pw)
        first = self._first_parked
        if first is not None and (len(first) < self._first_depth or pw.order < first[-1].order):
            first.append(pw)  # one of the first now: the list stays the first ones
            first.sort(key=lambda p: p.order)
            del first[self._first_depth :]

    def _add_parked(self, pw: PendingWorkload) -> None:
        key = pw.info.key
        if pw.requeue_at > 0:
            self._backoff[key] = pw
            return
        group = self._parked.get(pw.shape)
        if group is None:
            group = self._parked[pw.shape] = _Group(pw.shape, parked=True)
        group.add(pw)
        self._group_of[key] = group
        self._parked_count += 1

    def park_same_shape(self, shape: Shape, note: Note, *, held: bool = False) -> list[Told]:
        """Park every active workload of this shape (they would not fit either), told ``note``.

        ``held``: they would delay a reservation, which holds only while the tree's reservations
        stand. Those already waiting for another reason keep it then (``tell_held``): only the
        head is told each time, so a shape whose answer turns between no room and a reservation
        with every release does not tell each of its workloads so each time.
        Not ``held``, workloads of the shape that enter later join it (``enter``).
        Returns those that held another reason or their driver's word, in the order they are
        parked.
        """
        if held:
            self._held[shape] = None
            self._bulk.pop(shape, None)
        else:
            self._held.pop(shape, None)
            self._bulk[shape] = note
        active = list(self._active_by_shape.pop(shape, {}).values())
        news = [pw for pw in active if _takes_held(pw, note)] if held else active
        told = [Told(pw, pw.note) for pw in news if _differs(pw.note, note)]
        for pw in active:
            del self._active[pw.info.key]
            self.park(pw)
        for pw in news:
            pw.note = note
        dormant = self._dormant.pop(shape, None)
        if dormant is not None:
            told += dormant.tell_held(note) if held else dormant.tell(note)
            self._dormant_count -= len(dormant.members)
            self._parked_count += len(dormant.members)
            self._note_first(dormant)
            dormant.parked = True
            self._parked[shape] = self._merged(self._parked.get(shape), dormant)
        return told

    def shared_note(self, key: names.WorkloadKey) -> Note | None:
        """The note a workload holds with its group (None: it holds its own, if any)."""
        group = self._group_of.get(key)
        return group.note if group is not None and group.shares(key) else None

    def loosen(self, key: names.WorkloadKey) -> None:
        """The workload no longer holds its group's note."""
        group = self._group_of.get(key)
        if group is not None and group.shares(key):
            # Rare (a grouped workload told something on its own): keep loose in member order.
            group.loose = {k: pw for k, pw in group.members.items() if k in group.loose or k == key}

    def _note_first(self, group: _Group) -> None:
        """Keep the first parked workloads true when a whole group is parked."""
        first = self._first_parked
        if first is None:
            return
        lead = group.first()
        if lead is None or (len(first) >= self._first_depth and first[-1].order <= lead.order):
            return
        first += heapq.nsmallest(self._first_depth, group.members.values(), key=lambda p: p.order)
        first.sort(key=lambda p: p.order)
        del first[self._first_depth :]

    def remove(self, pw: PendingWorkload) -> None:
        """Drop a workload from the queue wherever it is."""
        key = pw.info.key
        if key in self._active:
            self._leave_heap(key, pw.shape)
        else:
            self._unpark(key)
        if self.sticky == key:
            self.sticky = None

    def contains(self, key: names.WorkloadKey) -> bool:
        """Tell whether the workload is in this queue (active or inadmissible)."""
        return key in self._active or key in self._group_of or key in self._backoff

    def pop(self) -> names.WorkloadKey | None:
        """Take the head of the heap (the sticky preemptor first, if it is there)."""
        if self.sticky is not None and self.sticky in self._active:
            return self.sticky
        heap = self._heap
        while heap:
            order, _, key = heap[0]
            if self._active.get(key) == order:
                return key
            heapq.heappop(heap)
            if self._in_heap.get(key) == order:
                del self._in_heap[key]
        return None

    def take(self, pw: PendingWorkload) -> None:
        """Remove the popped head from the heap while it is being scheduled."""
        self._leave_heap(pw.info.key, pw.shape)

    def ordered(self) -> list[names.WorkloadKey]:
        """Every pending workload in queue order (active first, then inadmissible)."""
        active = dict(self._active)
        for group in self._dormant.values():
            active.update((key, pw.order) for key, pw in group.members.items())
        first = sorted(active, key=lambda k: (k != self.sticky, active[k]))
        parked = sorted(self.parked(), key=lambda pw: pw.order)
        return first + [pw.info.key for pw in parked]


class QueueManager:
    """All pending workloads, in per-ClusterQueue queues or waiting outside them."""

    def __init__(self, cache: cache_mod.Cache) -> None:
        self.cache = cache
        self.queues: dict[names.ClusterQueueName, ClusterQueueQueue] = {}
        self.pending: dict[names.WorkloadKey, PendingWorkload] = {}
        self.outside: set[names.WorkloadKey] = set()
        """Pending workloads whose LocalQueue or ClusterQueue is missing or stopped."""
        self.backing_off: set[names.WorkloadKey] = set()
        """Pending workloads added with a ``requeue_at`` (a backoff), until added again without."""
        self.cycle = 0
        self._by_root: dict[str, list[ClusterQueueQueue]] | None = None
        self._backfill: tuple[object, list[tuple[ClusterQueueQueue, int]]] = (None, [])
        """The Backfill queues and their reservation depths, and the snapshot they are of
        (cleared when a queue is added or removed): ``holders`` runs once per cycle, and a
        round runs a cycle per group of quota trees."""

    # Membership ---------------------------------------------------------------------------------

    def add(
        self, info: workload.WorkloadInfo, *, now: float = 0.0, requeue_at: float = 0.0
    ) -> list[Told]:
        """Queue a new (or re-queued) pending workload; it waits out ``requeue_at`` if later.

        Returns it if it joined its shape parked for want of room (``ClusterQueueQueue.enter``)
        and held another reason, or its driver's word, before.
        """
        old = self.pending.get(info.key)
        note = None
        active_in = None
        if old is not None:
            note = self.note(info.key)
            q = None if old.cluster_queue is None else self.queues.get(old.cluster_queue)
            if q is not None and q.is_active(info.key):
                active_in = q.name
            self._detach(old)
        pw = PendingWorkload(info, requeue_at=requeue_at, note=note)
        pw.own_word = old is not None and old.own_word
        self.pending[info.key] = pw
        if requeue_at > 0:
            self.backing_off.add(info.key)
        else:
            self.backing_off.discard(info.key)
        return self._place(pw, now=now, active_in=active_in)

    def delete(self, key: names.WorkloadKey) -> None:
        """Forget a pending workload (admitted, deleted or deactivated)."""
        pw = self.pending.pop(key, None)
        self.backing_off.discard(key)
        if pw is not None:
            self._detach(pw)

    def _detach(self, pw: PendingWorkload) -> None:
        self.outside.discard(pw.info.key)
        if pw.cluster_queue is not None and pw.cluster_queue in self.queues:
            self.queues[pw.cluster_queue].remove(pw)
        pw.cluster_queue = None

    def _queue(self, name: names.ClusterQueueName) -> ClusterQueueQueue | None:
        info = self.cache.snapshot.cluster_queues.get(name)
        if info is None:
            return None
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = ClusterQueueQueue(name, info.strategy)
            self._by_root = None
            self._backfill = (None, [])
        q.strategy = info.strategy
        return q

    def _place(
        self,
        pw: PendingWorkload,
        now: float,
        active_in: names.ClusterQueueName | None = None,
    ) -> list[Told]:
        """Put a workload where it belongs: its ClusterQueue (``enter``), or outside any queue.

        ``active_in``: the queue it could be popped from before it changed. Returns it if it
        joined a parked shape and held another reason there.
        """
        cq_name = self.cache.cluster_queue_for(pw.info)
        q = None if cq_name is None else self._queue(cq_name)
        if q is None or self.cache.blocker(pw.info) is not None:
            pw.cluster_queue = None
            self.outside.add(pw.info.key)
            return []
        self.outside.discard(pw.info.key)
        pw.cluster_queue = q.name
        pw.shape = _queue_shape(pw.info, q.strategy)
        if pw.requeue_at > now:
            q.park(pw)
            return []
        return q.enter(pw, was_active=active_in == q.name)

    def refresh(self, now: float) -> None:
        """Re-place every pending workload after queues or LocalQueues changed.

        Each goes into its queue's heap: what was parked may fit now.
        """
        for q in self.queues.values():
            q.forget_shapes()
        for pw in list(self.pending.values()):
            self._detach(pw)
            self._place(pw, now)
        for name in list(self.queues):
            if name not in self.cache.snapshot.cluster_queues:
                del self.queues[name]
        self._by_root = None
        self._backfill = (None, [])

    # The cycle's side ---------------------------------------------------------------------------

    def start_round(self) -> list[names.ClusterQueueName]:
        """Count a new cycle and list the ClusterQueues that may give it a head, in name order.

        The cycle's heads are then popped a group at a time (``heads(among)``): a round of
        cycles, one per group of quota trees that share nothing (``core.cycle_groups``), counts
        as one cycle here, as Kueue's one cycle over every queue would.
        """
        self.cycle += 1
        cqs = self.cache.snapshot.cluster_queues
        return [
            name
            for name in sorted(self.queues)
            if (info := cqs.get(name)) is not None
            and info.active
            and self.queues[name].active_count
        ]

    def heads(self, among: Sequence[names.ClusterQueueName] | None = None) -> list[cycle.Head]:
        """Pop one head from every ClusterQueue that may admit, in ClusterQueue name order.

        With ``among``, from those queues only, in the cycle ``start_round`` counted; without,
        from every queue, counting a new cycle.
        """
        if among is None:
            self.cycle += 1
            among = sorted(self.queues)
        out = []
        cqs = self.cache.snapshot.cluster_queues
        for name in among:
            q = self.queues.get(name)
            if q is None:
                continue
            info = cqs.get(name)
            if info is None or not info.active or q.active_count == 0:
                continue
            key = q.pop()
            if key is None:
                continue
            q.pop_cycle = self.cycle
            pw = self.pending[key]
            q.take(pw)
            out.append(cycle.Head(pw.info, name, pw.progress, pw.preemptor, pw.preempted_for))
        return out

    def requeue(self, decision: cycle.Pending) -> list[Told]:
        """Put a head that was not admitted back, where its queue's strategy says.

        The other workloads parked with it because they have the same shape are told its reason
        and message (``note``); returns those of them that held another reason, or what their
        driver told them itself.
        """
        pw = self.pending.get(decision.info.key)
        if pw is None or pw.cluster_queue is None:
            return []
        q = self.queues.get(pw.cluster_queue)
        if q is None:
            return []
        pw.progress = decision.progress
        reason = decision.requeue
        pw.preemptor = reason == cycle.RequeueReason.PENDING_PREEMPTION
        pw.preempted_for = decision.counts if pw.preemptor else None
        if reason == cycle.RequeueReason.PENDING_PREEMPTION:
            q.sticky = (
                pw.info.key if q.strategy != clusterqueue.QueueingStrategy.STRICT_FIFO else None
            )
        elif q.sticky == pw.info.key and reason in (
            cycle.RequeueReason.NO_FIT,
            cycle.RequeueReason.PREEMPTION_NO_CANDIDATES,
            cycle.RequeueReason.NAMESPACE_MISMATCH,
            cycle.RequeueReason.RESERVATION,
        ):
            q.sticky = None
        if q.strategy == clusterqueue.QueueingStrategy.STRICT_FIFO:
            immediate = reason != cycle.RequeueReason.NAMESPACE_MISMATCH
        else:
            immediate = reason in _IMMEDIATE_BEST_EFFORT
        pending_flavors = pw.progress is not None and any(
            idx != -1 for tried in pw.progress.tried for idx in tried.values()
        )
        if immediate or q.requeue_cycle >= q.pop_cycle or pending_flavors:
            q.push(pw)
            return []
        q.park(pw)
        note = Note(decision.reason, decision.message)
        if q.strategy != clusterqueue.QueueingStrategy.STRICT_FIFO and reason in (
            cycle.RequeueReason.NO_FIT,
            cycle.RequeueReason.PREEMPTION_NO_CANDIDATES,
        ):
            return q.park_same_shape(pw.shape, note)
        if (
            q.strategy == clusterqueue.QueueingStrategy.BACKFILL
            and reason == cycle.RequeueReason.RESERVATION
        ):
            # Its shape holds what its estimate is made from (``_queue_shape``). Held in
            # another queue (while borrowing), others of its shape may be shorter.
            return q.park_same_shape(pw.shape, note, held=True)
        return []

    def note(self, key: names.WorkloadKey) -> Note | None:
        """What a pending workload was last told with its shape.

        None: only what its driver told it itself holds, which is then the newer.
        """
        pw = self.pending.get(key)
        if pw is None:
            return None
        q = None if pw.cluster_queue is None else self.queues.get(pw.cluster_queue)
        shared = None if q is None else q.shared_note(key)
        return pw.note if shared is None else shared

    def told(self, key: names.WorkloadKey) -> None:
        """Its driver told a pending workload something itself: that now holds for it."""
        pw = self.pending.get(key)
        if pw is None:
            return
        pw.note = None
        pw.own_word = True
        if pw.cluster_queue is not None and pw.cluster_queue in self.queues:
            self.queues[pw.cluster_queue].loosen(key)

    def holders(self) -> dict[names.ClusterQueueName, list[workload.WorkloadInfo]]:
        """Each Backfill ClusterQueue's first parked workloads, up to its reservation depth."""
        snap = self.cache.snapshot
        seen, backfill = self._backfill
        if seen is not snap:
            backfill = [
                (q, info.backfill.reservation_depth)
                for name, q in self.queues.items()
                if (info := snap.cluster_queues.get(name)) is not None and info.backfill is not None
            ]
            self._backfill = (snap, backfill)
        return {q.name: [pw.info for pw in q.first_parked(depth)] for q, depth in backfill}

    def admitted(self, key: names.WorkloadKey) -> None:
        """Forget a head that was admitted."""
        pw = self.pending.pop(key, None)
        self.backing_off.discard(key)
        if pw is not None:
            self._detach(pw)

    def requeue_inadmissible(self, root: str, now: float) -> bool:
        """Move inadmissible workloads of every ClusterQueue in quota tree ``root`` back.

        Returns True if any moved.
        """
        moved = False
        for q in self._tree(root):
            q.requeue_cycle = self.cycle
            # Most queues of a large tree have nothing parked: a release costs a glance at each.
            if q.parks_any:
                moved = q.push_parked(now) or moved
        return moved

    def retry_held(self, root: str) -> bool:
        """The holders of quota tree ``root`` changed: its workloads held for a reservation go back.

        The reservations they were held by moved (Backfill); the first of each held shape is
        tried again. Returns True if any moved.
        """
        moved = False
        for q in self._tree(root):
            if q.holds_any:
                moved = q.push_held() or moved
        return moved

    def _tree(self, root: str) -> list[ClusterQueueQueue]:
        """The queues of quota tree ``root``, in name order."""
        if self._by_root is None:
            self._by_root = {}
            for name in sorted(self.queues):
                self._by_root.setdefault(self.cache.root_of(name), []).append(self.queues[name])
        return self._by_root.get(root, [])

    def requeue_all_inadmissible(self, now: float) -> bool:
        """Move every inadmissible workload back (after a change that touches every tree)."""
        roots = {self.cache.root_of(name) for name in self.queues}
        moved = False
        for root in sorted(roots):
            moved = self.requeue_inadmissible(root, now) or moved
        return moved

    def next_backoff_expiry(self, now: float) -> float | None:
        """The earliest future time a backed-off workload may return to its queue.

        A workload held without a time (``requeue_at`` infinite) returns when its holder says.
        """
        times = [
            pw.requeue_at
            for pw in (self.pending[k] for k in self.backing_off)
            if now < pw.requeue_at < math.inf
        ]
        return min(times) if times else None

    # Questions ----------------------------------------------------------------------------------

    def position(self, key: names.WorkloadKey) -> tuple[names.ClusterQueueName, int] | None:
        """Return the workload's ClusterQueue and 0-based position in it, if it is queued."""
        pw = self.pending.get(key)
        if pw is None or pw.cluster_queue is None:
            return None
        q = self.queues[pw.cluster_queue]
        return pw.cluster_queue, q.ordered().index(key)

    def counts(self, cq: names.ClusterQueueName) -> tuple[int, int]:
        """Active and inadmissible pending counts of a ClusterQueue."""
        q = self.queues.get(cq)
        if q is None:
            return 0, 0
        return q.active_count, len(q) - q.active_count
