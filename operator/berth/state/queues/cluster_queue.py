"""The pending workloads of one ClusterQueue: the active heap and the inadmissible set.

Called by ``queues.manager``, which owns one per ClusterQueue.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator

from berth.api import clusterqueue, names
from berth.state.queues.groups import ShapeGroup
from berth.state.queues.pending import Note, Order, PendingWorkload, Told, differs, takes_held
from berth.state.queues.shapes import Shape


class ClusterQueuePending:
    """The pending workloads of one ClusterQueue.

    Active workloads are in a heap by queue order, parked ones in the inadmissible set. A parked
    workload of a scheduling shape stands for every other of that shape, so parking and releasing
    move whole shapes (``ShapeGroup``): a release puts only the first of each parked shape into the
    heap and keeps the others *dormant* (active, but not in the heap). Whenever a workload of a
    shape leaves the heap, the first dormant one of its shape takes its place, so the first in the
    heap is always the first active workload; when the head of a shape is parked again, its
    dormant ones are parked with it at once. A release then costs in proportion to the shapes
    parked, not the workloads.

    Under admission fair sharing (``scoring``) each LocalQueue has a heap of its own, shapes
    are per LocalQueue, and the head is the first of the LocalQueue with the lowest score
    (Kueue's ``queueOrderingFunc``: the score, then the usual order), read at each pop.
    """

    def __init__(
        self, name: names.ClusterQueueName, strategy: clusterqueue.QueueingStrategy
    ) -> None:
        self.name = name
        self.strategy = strategy
        self.scoring: Callable[[names.WorkloadKey], float] | None = None
        """A LocalQueue's admission fair-sharing score (lowest first); None: off."""
        self._heaps: dict[names.WorkloadKey | None, list[tuple[Order, int, names.WorkloadKey]]] = {}
        """One heap (under None), or one per LocalQueue under admission fair sharing."""
        self._active: dict[names.WorkloadKey, Order] = {}
        """The workloads in the heap, with their order."""
        self._in_heap: dict[names.WorkloadKey, Order] = {}
        """The order of an entry each key still has in the heap: pushing a key back with the same
        order adds none, so parking and requeueing a queue over and over leaves no trail of
        stale entries for ``pop`` to wade through."""
        self._active_by_shape: dict[Shape, dict[names.WorkloadKey, PendingWorkload]] = {}
        self._parked: dict[Shape, ShapeGroup] = {}
        self._dormant: dict[Shape, ShapeGroup] = {}
        self._group_of: dict[names.WorkloadKey, ShapeGroup] = {}
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
        told = [Told(pw, pw.note)] if differs(pw.note, note) else []
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

    def _heap_of(self, pw: PendingWorkload) -> names.WorkloadKey | None:
        if self.scoring is None:
            return None
        return names.WorkloadKey(pw.info.key.namespace, pw.info.local_queue or "")

    def set_scoring(self, scoring: Callable[[names.WorkloadKey], float] | None) -> None:
        """Turn admission fair sharing on (a score per LocalQueue) or off; refile the heaps."""
        was_on = self.scoring is not None
        self.scoring = scoring
        if was_on == (scoring is not None):
            return
        self._heaps = {}
        self._in_heap = {}
        for members in self._active_by_shape.values():
            for key, pw in members.items():
                self._in_heap[key] = pw.order
                heap = self._heaps.setdefault(self._heap_of(pw), [])
                heapq.heappush(heap, (pw.order, next(self._seq), key))

    def _activate(self, key: names.WorkloadKey, pw: PendingWorkload) -> None:
        order = pw.order
        self._active[key] = order
        self._active_by_shape.setdefault(pw.shape, {})[key] = pw
        if self._in_heap.get(key) != order:
            self._in_heap[key] = order
            heap = self._heaps.setdefault(self._heap_of(pw), [])
            heapq.heappush(heap, (order, next(self._seq), key))

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

    def push_shape_of(self, key: names.WorkloadKey) -> bool:
        """Release the parked shape ``key`` belongs to; tell if it was parked.

        For a head kept back by a preemption protection or budget that ends: nothing else in
        its quota tree changes then, so only its shape is tried again.
        """
        group = self._group_of.get(key)
        if group is None or not group.parked or self._parked.get(group.shape) is not group:
            return False
        del self._parked[group.shape]
        self._held.pop(group.shape, None)
        self._bulk.pop(group.shape, None)
        self._wake(group)
        self._first_parked = None
        return True

    def _wake(self, group: ShapeGroup) -> None:
        """A parked group joins the dormant workloads of its shape; its first goes into the heap."""
        shape = group.shape
        self._parked_count -= len(group.members)
        self._dormant_count += len(group.members)
        group.parked = False
        self._dormant[shape] = self._merged(self._dormant.get(shape), group)
        self._promote(shape)

    def _merged(self, into: ShapeGroup | None, group: ShapeGroup) -> ShapeGroup:
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
            group = self._parked[pw.shape] = ShapeGroup(pw.shape, parked=True)
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
        news = [pw for pw in active if takes_held(pw, note)] if held else active
        told = [Told(pw, pw.note) for pw in news if differs(pw.note, note)]
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

    def _note_first(self, group: ShapeGroup) -> None:
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
        scoring = self.scoring
        if scoring is None:
            heap = self._heaps.get(None)
            top = None if heap is None else self._top(heap)
            return None if top is None else top[1]
        best: tuple[float, Order] | None = None
        found = None
        for lq, heap in list(self._heaps.items()):
            top = self._top(heap)
            if top is None:
                del self._heaps[lq]
                continue
            rank = (0.0 if lq is None else scoring(lq), top[0])
            if best is None or rank < best:
                best, found = rank, top[1]
        return found

    def _top(
        self, heap: list[tuple[Order, int, names.WorkloadKey]]
    ) -> tuple[Order, names.WorkloadKey] | None:
        """The first active entry of a heap, dropping the stale ones above it."""
        while heap:
            order, _, key = heap[0]
            if self._active.get(key) == order:
                return order, key
            heapq.heappop(heap)
            if self._in_heap.get(key) == order:
                del self._in_heap[key]
        return None

    def take(self, pw: PendingWorkload) -> None:
        """Remove the popped head from the heap while it is being scheduled."""
        self._leave_heap(pw.info.key, pw.shape)

    def ordered(self) -> list[names.WorkloadKey]:
        """Every pending workload in queue order (active first, then inadmissible).

        Under admission fair sharing, by its LocalQueue's score before the usual order.
        """
        active = [pw for members in self._active_by_shape.values() for pw in members.values()]
        for group in self._dormant.values():
            active.extend(group.members.values())
        scoring = self.scoring
        scores: dict[names.WorkloadKey, float] = {}

        def score(pw: PendingWorkload) -> float:
            lq = self._heap_of(pw)
            if scoring is None or lq is None:
                return 0.0
            if lq not in scores:
                scores[lq] = scoring(lq)
            return scores[lq]

        first = sorted(active, key=lambda pw: (pw.info.key != self.sticky, score(pw), pw.order))
        parked = sorted(self.parked(), key=lambda pw: (score(pw), pw.order))
        return [pw.info.key for pw in first + parked]
