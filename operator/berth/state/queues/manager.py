"""All pending workloads: one ``ClusterQueuePending`` per ClusterQueue, or waiting outside them.

Called by the operator's scheduler loop, the simulator and ``state.lifecycle``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from berth.api import names
from berth.core import cycle, workload
from berth.state import cache as cache_mod
from berth.state import fair_usage
from berth.state.queues import requeue as requeue_rules
from berth.state.queues.cluster_queue import ClusterQueuePending
from berth.state.queues.pending import Note, PendingWorkload, Told
from berth.state.queues.shapes import queue_shape


class QueueManager:
    """All pending workloads, in per-ClusterQueue queues or waiting outside them."""

    def __init__(self, cache: cache_mod.Cache, usage: fair_usage.UsageLedger | None = None) -> None:
        self.cache = cache
        self.usage = fair_usage.UsageLedger() if usage is None else usage
        """The LocalQueues' decayed usage, for the ClusterQueues under admission fair sharing."""
        self.queues: dict[names.ClusterQueueName, ClusterQueuePending] = {}
        self.pending: dict[names.WorkloadKey, PendingWorkload] = {}
        self.outside: set[names.WorkloadKey] = set()
        """Pending workloads whose LocalQueue or ClusterQueue is missing or stopped."""
        self.backing_off: set[names.WorkloadKey] = set()
        """Pending workloads added with a ``requeue_at`` (a backoff), until added again without."""
        self.cycle = 0
        self._by_root: dict[str, list[ClusterQueuePending]] | None = None
        self._backfill: tuple[object, list[tuple[ClusterQueuePending, int]]] = (None, [])
        """The Backfill queues and their reservation depths, and the snapshot they are of
        (cleared when a queue is added or removed): ``holders`` runs once per cycle, and a
        round runs a cycle per group of quota trees."""

    # Membership ---------------------------------------------------------------------------------

    def add(
        self, info: workload.WorkloadInfo, *, now: float = 0.0, requeue_at: float = 0.0
    ) -> list[Told]:
        """Queue a new (or re-queued) pending workload; it waits out ``requeue_at`` if later.

        Returns it if it joined its shape parked for want of room (``ClusterQueuePending.enter``)
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

    def _queue(self, name: names.ClusterQueueName) -> ClusterQueuePending | None:
        info = self.cache.snapshot.cluster_queues.get(name)
        if info is None:
            return None
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = ClusterQueuePending(name, info.strategy)
            self._by_root = None
            self._backfill = (None, [])
        q.strategy = info.strategy
        q.set_scoring(self.score if info.usage_based and self.usage.enabled else None)
        return q

    def score(self, lq: fair_usage.LocalQueueKey) -> float:
        """A LocalQueue's admission fair-sharing score: its weighted usage per its weight."""
        obj = self.cache.local_queue(lq.namespace, lq.name)
        fair = None if obj is None else obj.spec.fair_sharing
        return self.usage.score(lq, 1.0 if fair is None else fair.weight / 1000)

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
        pw.shape = queue_shape(pw.info, q.strategy, by_local_queue=q.scoring is not None)
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
        where = requeue_rules.decide(
            q.strategy,
            reason,
            requeued_since_popped=q.requeue_cycle >= q.pop_cycle,
            flavors_left=pw.progress is not None
            and any(idx != -1 for tried in pw.progress.tried for idx in tried.values()),
        )
        if where.sticky == requeue_rules.Sticky.BECOME:
            q.sticky = pw.info.key
        elif where.sticky == requeue_rules.Sticky.NONE or (
            where.sticky == requeue_rules.Sticky.RELEASE and q.sticky == pw.info.key
        ):
            q.sticky = None
        if where.back:
            q.push(pw)
            return []
        q.park(pw)
        note = Note(decision.reason, decision.message)
        if where.parked == requeue_rules.Parked.WITH_SHAPE:
            return q.park_same_shape(pw.shape, note)
        if where.parked == requeue_rules.Parked.HELD_WITH_SHAPE:
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

    def requeue_shape_of(self, key: names.WorkloadKey) -> bool:
        """Move the parked shape of pending workload ``key`` back; tell if it was parked."""
        pw = self.pending.get(key)
        if pw is None or pw.cluster_queue is None:
            return False
        return self.queues[pw.cluster_queue].push_shape_of(key)

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

    def _tree(self, root: str) -> list[ClusterQueuePending]:
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
