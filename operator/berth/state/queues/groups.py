"""Workloads of one shape that move together, and the note they share.

A ``ShapeGroup`` holds the workloads of one shape that are parked, or released but not yet in
the heap (dormant); its members share one ``Note`` except the loose ones, which hold their own.
Called by ``queues.cluster_queue``.
"""

from __future__ import annotations

import heapq

from berth.api import names
from berth.state.queues.pending import Note, Order, PendingWorkload, Told, differs, takes_held
from berth.state.queues.shapes import Shape


class ShapeGroup:
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
        told = [t for t in told if differs(t.before, note)]
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
            if takes_held(pw, note):
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
