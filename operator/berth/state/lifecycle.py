"""Every transition of a workload's life in state, written once for both drivers.

``Lifecycle`` owns the cache and the queues and is the only place that moves a workload between
them: applying a cycle's result (assume each admission, mark each victim, put each head back
where its queue's strategy says, and tell whether another cycle could decide differently),
releasing an admission and requeueing the inadmissible workloads of its quota tree, charging an
admission to its LocalQueue's usage and sampling that usage (admission fair sharing), trying the
workloads held for a Backfill reservation again once the cycles settle where their tree's holders
changed, ending a backoff, taking in a changed priority, activity or queue, and withdrawing a
workload from its queue. What must be evicted now is decided by ``state.evictions``.

The two drivers differ only in what a decision costs. The simulator (``berth.sim``) makes every
write take effect at once: a victim is released and requeued while the cycle's result is
applied. The operator (``berth.operator``) writes each decision to the API and releases a
victim when its job has stopped. Each driver passes a ``CycleEffects`` to ``apply_cycle``,
which is told of each decision in the order the state takes it. ``tests/worlds.py`` drives the
same code.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from berth.api import clusterqueue, configuration, names
from berth.core import cycle, cycle_groups, protection, resources, snapshot, workload
from berth.core import fair_usage as core_fair_usage
from berth.core.backfill import reservations
from berth.state import cache as cache_mod
from berth.state import fair_usage, runtimes
from berth.state.queues import manager, pending


class CycleEffects(Protocol):
    """What a driver does about each decision of a cycle, as ``apply_cycle`` takes it."""

    def evicting(self, decision: cycle.Preempt) -> None:
        """A victim was marked evicted (still counted until it is released)."""

    def admitted(self, decision: cycle.Admit) -> None:
        """A head's admission was assumed in the cache and it left its queue."""

    def parked(self, decision: cycle.Pending, same_shape: list[pending.Told]) -> None:
        """A head was put back; ``same_shape`` were parked with it (the same answer holds)."""


@dataclasses.dataclass(slots=True)
class _Scans:
    """The scan states one head's attempts ended in against one version of its quota tree."""

    version: tuple[int, int]
    snap: snapshot.Snapshot
    seen: set[tuple[tuple[tuple[names.ResourceName, int], ...], ...]]


class Lifecycle:
    """The cache and the queues, and the transitions between them."""

    def __init__(self, cache: cache_mod.Cache | None = None) -> None:
        self.cache = cache_mod.Cache() if cache is None else cache
        self.usage = fair_usage.UsageLedger()
        """Each LocalQueue's decayed usage under admission fair sharing."""
        self.queues = manager.QueueManager(self.cache, self.usage)
        self.runtimes = runtimes.RuntimeHistory()
        self.estimate = runtimes.estimator(self.cache, self.runtimes)
        """Runtime estimates (``core.backfill.estimates``), with what finished workloads taught."""
        self.kept: Mapping[str, reservations.Kept] = {}
        """The Backfill plans the last cycle left, for the next cycles to take over if nothing
        they were made from changed, at this instant or a later one (``reservations``)."""
        self.starts: dict[names.WorkloadKey, float] = {}
        """Where cycles last placed each holder's reservation: where the next plans search
        first (``reservations.Inputs.hints``). Kept while the workload is pending."""
        self._ends: reservations.Ends = {}
        """When admitted work gives its quota back (``reservations.Inputs.ends``), worked out at
        ``_ends_for``: what estimates were learned, the cache's revision and its snapshot (the
        object itself: a rebuilt one may hold other queue settings)."""
        self._ends_for: tuple[tuple[int, int], snapshot.Snapshot | None] = ((-1, -1), None)
        self._settled: dict[str, tuple[names.WorkloadKey, ...]] = {}
        """Each quota tree's holders when the cycles last settled."""
        self._partition: cycle_groups.Partition | None = None
        """The groups of the snapshot's queues (``round``), worked out once per snapshot."""
        self._scans: dict[names.WorkloadKey, _Scans] = {}
        """The scan states each head's attempts ended in while its quota tree stayed the same
        (``_may_progress``)."""
        self._rechecks: dict[names.WorkloadKey, float] = {}
        """Heads a preemption protection or budget kept pending, and when the first that held
        each lets it go (``cycle.Pending.held_until``); nothing else would try them then."""
        self.evictions: dict[protection.Owner, list[float]] = {}
        """When the workloads below each preemption budget were preempted, within its window
        (``core.protection.Budgets``). Kept in memory, as Kueue keeps its PreemptionLimit's
        counts: a restart starts every budget afresh."""

    # Cycles -------------------------------------------------------------------------------------

    def apply_cycle(
        self,
        result: cycle.CycleResult,
        now: float,
        effects: CycleEffects,
        *,
        settle: bool = True,
    ) -> bool:
        """Apply a cycle's decisions; tell whether another cycle could decide differently.

        A cycle progressed when it marked a victim or admitted a head, when a head it tried was
        parked (the next workload of its queue becomes the head), or when a head has flavors
        left to try. A victim already on its way out is not marked twice. A cycle that did
        not progress tries held workloads again (``_retry_held``), unless it was one of a
        round (``settle`` False): the round does, once it is over (``end_round``).
        """
        progressed = False
        for p in result.preempted:
            key = p.victim.info.key
            held = self.cache.admitted.get(key)
            if held is None or held.evicted:
                continue  # already on its way out (or listed twice)
            self.cache.mark_evicted(key)
            progressed = True
            self._count_eviction(p.victim.cluster_queue, now)
            effects.evicting(p)
        for a in result.admitted:
            self._scans.pop(a.info.key, None)
            self.cache.assume(a.info, a.admission, now)
            self._charge(a, now)
            self.queues.admitted(a.info.key)
            progressed = True
            effects.admitted(a)
        for waiting in result.pending:
            same = self.queues.requeue(waiting)
            effects.parked(waiting, same)
            if self._may_progress(waiting):
                progressed = True
            until = waiting.held_until
            if until is not None:
                self._rechecks[waiting.info.key] = until
        if not progressed and settle:
            progressed = self._retry_held()
        return progressed

    # Admission fair sharing ---------------------------------------------------------------------

    def configure_fair_usage(
        self, config: configuration.AdmissionFairSharing | None, now: float
    ) -> None:
        """Turn admission fair sharing on or off with the Configuration's settings."""
        self.usage.configure(config)
        self.queues_changed(now)

    def fair_local_queues(self) -> list[fair_usage.LocalQueueKey]:
        """The LocalQueues whose ClusterQueue orders them by usage (none while it is off)."""
        if not self.usage.enabled:
            return []
        return sorted(
            fair_usage.LocalQueueKey(ns, name)
            for (ns, name), lq in self.cache.local_queues.items()
            if self._tracked(lq.spec.cluster_queue)
        )

    def _tracked(self, cq: names.ClusterQueueName) -> bool:
        """Tell whether ``cq``'s LocalQueues' usage counts: it or its root cohort is usage-based."""
        snap = self.cache.snapshot
        info = snap.cluster_queues.get(cq)
        if info is None:
            return False
        if info.usage_based:
            return True
        node = snap.cq_nodes.get(cq)
        root = None if node is None else node.root()
        return (
            root is not None
            and root.is_cohort
            and names.CohortName(root.name) in snap.usage_based_cohorts
        )

    def cluster_queue_score(self, cq: names.ClusterQueueName) -> float:
        """A ClusterQueue's decayed usage: its LocalQueues' weighted usage, over its weight."""
        total = sum(
            self.usage.score(fair_usage.LocalQueueKey(ns, name), 1.0)
            for (ns, name), lq in self.cache.local_queues.items()
            if lq.spec.cluster_queue == cq
        )
        info = self.cache.snapshot.cluster_queues.get(cq)
        weight = 1.0 if info is None else info.fair_weight / 1000
        return core_fair_usage.score({names.ResourceName("usage"): total}, {}, weight)

    def held_usage(self) -> dict[fair_usage.LocalQueueKey, core_fair_usage.Usage]:
        """What each LocalQueue's admitted workloads hold now, per resource (Kueue's sample)."""
        by_lq: dict[fair_usage.LocalQueueKey, list[resources.FlavorResourceAmounts]] = {}
        for key, adm in self.cache.admitted.items():
            lq = fair_usage.LocalQueueKey(key.namespace, adm.info.local_queue or "")
            by_lq.setdefault(lq, []).append(adm.admission.usage)
        return {lq: core_fair_usage.flat(usages) for lq, usages in by_lq.items()}

    def sample_usage(self, now: float) -> list[fair_usage.LocalQueueKey]:
        """Sample every tracked LocalQueue when a sample is due; returns those sampled.

        Their scores changed, so which LocalQueue gives its ClusterQueue the next head may
        have too (``reorders`` tells whether a cycle could make anything of it).
        """
        self.usage.track(self.fair_local_queues(), now)
        if not self.usage.due(now):
            return []
        return self.usage.sample(now, self.held_usage())

    def reorders(self, sampled: Sequence[fair_usage.LocalQueueKey]) -> bool:
        """Tell whether a cycle could decide anything new after a sample of ``sampled``.

        A sample changes only which LocalQueue gives a ClusterQueue its head. A settled
        BestEffortFIFO or Backfill queue holds only heads that did not fit, parked, and they come
        back on the events that free quota; a StrictFIFO queue's blocked head may give way to
        another LocalQueue's, which may fit.
        """
        strict = clusterqueue.QueueingStrategy.STRICT_FIFO
        cqs = self.cache.snapshot.cluster_queues
        for lq in sampled:
            obj = self.cache.local_queue(lq.namespace, lq.name)
            info = None if obj is None else cqs.get(obj.spec.cluster_queue)
            if info is not None and info.strategy == strict:
                return True
        return False

    def _charge(self, a: cycle.Admit, now: float) -> None:
        """Charge an admission to its LocalQueue's usage, with its entry penalty."""
        if not self.usage.enabled:
            return
        if not self._tracked(a.admission.cluster_queue):
            return
        lq = fair_usage.LocalQueueKey(a.info.key.namespace, a.info.local_queue or "")
        self.usage.track([*self.usage.entries, lq], now)
        # Only the admission's own ClusterQueue holds workloads of its LocalQueue.
        same_queue = self.cache.snapshot.admitted.get(a.admission.cluster_queue, {})
        held = core_fair_usage.flat(
            adm.admission.usage
            for key, adm in same_queue.items()
            if key.namespace == lq.namespace and adm.info.local_queue == lq.name
        )
        self.usage.charge(lq, held, core_fair_usage.flat([a.admission.usage]), now)

    def _count_eviction(self, cq: names.ClusterQueueName, now: float) -> None:
        """Count a preemption against the budgets of the victim's queue and cohorts."""
        for owner, budget in protection.budget_owners(self.cache.snapshot, cq):
            times = self.evictions.setdefault(owner, [])
            # Older ones no longer count against any window of this budget.
            cut = bisect.bisect_right(times, now - budget.limit_window_duration)
            del times[:cut]
            times.append(now)

    def round(self, policy: cycle.Policy) -> list[tuple[names.ClusterQueueName, ...]]:
        """Start a round of cycles: the groups of ClusterQueues to run one cycle each for.

        The groups share nothing a cycle decides with (``core.cycle_groups``), so a cycle per
        group decides what one cycle over all of them would, and none costs more than its own
        quota trees. Run each with ``schedule(among=group)`` and apply it with ``settle``
        False, then ``end_round``. Empty when no queue has a head, after the workloads held
        for a reservation whose tree's holders changed went back.
        """
        ready = self.queues.start_round()
        if not ready and self._retry_held():
            ready = self.queues.start_round()
        if not ready:
            return []
        snap = self.cache.snapshot
        if self._partition is None or self._partition.snap is not snap:
            self._partition = cycle_groups.Partition(snap)
        return self._partition.split(ready, one_group=policy.block_admission)

    def end_round(self, progressed: bool) -> bool:
        """Close a round; tell whether another could decide differently (see ``apply_cycle``)."""
        return progressed or self._retry_held()

    def _retry_held(self) -> bool:
        """Once the cycles settle, try held workloads again where their tree's holders changed.

        A held workload stands for the others of its shape while its tree's reservations
        stand. A release sends every parked workload back; where the tree's holders changed
        since the cycles last settled (a holder admitted, gone, or a new one ahead), the first
        of each held shape is tried again. A round that leaves the holders as they were ends it.
        An admission alone does not send them back (``docs/scheduling.md`` says why). Tells
        whether any went back.
        """
        holders: dict[str, tuple[names.WorkloadKey, ...]] = {}
        for cq, infos in sorted(self.queues.holders().items()):
            root = self.cache.root_of(cq)
            holders[root] = holders.get(root, ()) + tuple(i.key for i in infos)
        moved = False
        for root, keys in sorted(holders.items()):
            if self._settled.get(root) != keys:
                self._settled[root] = keys
                moved = self.queues.retry_held(root) or moved
        return moved

    def _may_progress(self, pending: cycle.Pending) -> bool:
        pw = self.queues.pending.get(pending.info.key)
        if pw is None or pw.cluster_queue is None:
            return False
        if self.queues.queues[pw.cluster_queue].is_parked(pending.info.key):
            return True  # the next workload of the queue becomes its head
        progress = pending.progress
        if progress is None or all(idx == -1 for tried in progress.tried for idx in tried.values()):
            return False
        # More flavors to try next cycle, as Kueue's ``PendingFlavors`` says; but with two pod
        # sets each resuming where the other stopped, the attempts can go round in a circle of
        # states that decide nothing new (Kueue retries such a head for ever, rewriting its
        # message at each attempt). A state seen again while the tree is unchanged is no
        # progress: the head stays in its queue and is tried again at the next change.
        version = (progress.generation, self.cache.revision)
        snap = self.cache.snapshot
        scans = self._scans.get(pending.info.key)
        if scans is None or scans.version != version or scans.snap is not snap:
            scans = self._scans[pending.info.key] = _Scans(version, snap, set())
        state = tuple(tuple(sorted(tried.items())) for tried in progress.tried)
        if state in scans.seen:
            return False
        scans.seen.add(state)
        return True

    def schedule(
        self,
        now: float,
        policy: cycle.Policy,
        *,
        all_pods_ready: bool = True,
        among: Sequence[names.ClusterQueueName] | None = None,
    ) -> cycle.CycleResult | None:
        """Run one cycle over the queue heads (None when no queue has a head).

        With ``among``, over the heads of those queues only, a group of the round ``round``
        started. Without, over every group of a new round at once.
        """
        if among is None:
            among = sorted(cq for group in self.round(policy) for cq in group)
        heads = self.queues.heads(among)
        if not heads:
            return None
        holders = self.queues.holders()
        inputs = None
        if holders:
            version = (self.runtimes.version, self.cache.revision)
            pending = self.queues.pending
            self.starts = {k: t for k, t in self.starts.items() if k in pending}
            snap = self.cache.snapshot
            same = version == self._ends_for[0] and snap is self._ends_for[1]
            if not same or len(self._ends) > 2 * len(self.cache.admitted) + 64:
                # Estimates or queue settings may have changed, or finished work piled up.
                self._ends, self._ends_for = {}, (version, snap)
            inputs = reservations.Inputs(
                holders, self.estimate, version, self.kept, self.starts, self._ends
            )
        snap = self.cache.snapshot
        on = self.usage.enabled
        snap.local_queue_score = self.queues.score if on else None
        snap.cluster_queue_score = (
            self.cluster_queue_score if on and snap.usage_based_cohorts else None
        )
        result = cycle.schedule(
            self.cache.snapshot,
            heads,
            now,
            policy,
            cycle=self.queues.cycle,
            generation=self.cache.generation,
            all_pods_ready=all_pods_ready,
            backfill_inputs=inputs,
            evictions=self.evictions,
        )
        self.kept = result.plans
        if result.starts:  # the hints it was given, updated: a copy of them would do it twice
            self.starts = result.starts
        if result.ends:  # the ends it was given, with those it worked out
            self._ends = result.ends
        return result

    # Admissions ---------------------------------------------------------------------------------

    def recall(
        self,
        info: workload.WorkloadInfo,
        stored: Callable[[], tuple[workload.Admission, float]],
        *,
        evicted: bool,
    ) -> None:
        """Count an admission already stored, not one this process's cycle made.

        Read on a watch: after a restart, or another replica's write. ``evicted``: it is on its
        way out. ``stored`` reads the admission and when its quota was reserved from the stored
        status, only when it is not counted yet (the watch repeats every admitted workload's
        changes).
        """
        self.queues.delete(info.key)
        if info.key not in self.cache.admitted:
            self.cache.assume(info, *stored())
        if evicted:
            self.cache.mark_evicted(info.key)

    def undo_eviction(self, key: names.WorkloadKey) -> None:
        """An eviction whose write failed: the workload counts as admitted again, not leaving."""
        adm = self.cache.forget(key)
        if adm is not None:
            self.cache.assume(adm.info, adm.admission, adm.reserved_at)

    def release(
        self, key: names.WorkloadKey, now: float, *, succeeded: bool = False
    ) -> snapshot.AdmittedWorkload | None:
        """Stop counting an admission; requeue the inadmissible workloads of its quota tree.

        A workload that ``succeeded`` adds its runtime to what estimates are learned from.
        Returns what was released (None when the workload held nothing).
        """
        adm = self.cache.forget(key)
        if adm is not None:
            if succeeded:
                self.runtimes.record(adm.info, now - adm.reserved_at)
            self.queues.requeue_inadmissible(self.cache.root_of(adm.cluster_queue), now)
        return adm

    # Queues -------------------------------------------------------------------------------------

    def enqueue(
        self, info: workload.WorkloadInfo, now: float, *, requeue_at: float = 0.0
    ) -> list[pending.Told]:
        """Queue a pending workload (after ``requeue_at`` when it backs off).

        Returns it if it joined its shape parked for want of room and now waits for another
        reason (``queues.note``), as ``CycleEffects.parked``'s ``same_shape``.
        """
        return self.queues.add(info, now=now, requeue_at=requeue_at)

    def withdraw(self, key: names.WorkloadKey) -> None:
        """Take a workload out of its queue (finished, deactivated, deleted or admitted)."""
        self._scans.pop(key, None)
        self.queues.delete(key)

    def next_recheck(self) -> float | None:
        """When the first preemption protection that keeps a head pending ends, if one does."""
        return min(self._rechecks.values(), default=None)

    def end_protections(self, now: float) -> bool:
        """Requeue each head whose protection or budget hold ended by ``now``, with its shape.

        Their end changes nothing a queue watches, so each such head is tried again then. Only
        they: an end frees no quota and no other head's search left out a candidate it covered,
        so every other head is retried on the events that retry it without protection (Kueue's
        proposal requeues the whole root cohort instead; on months-deep queues that costs a
        cycle over every parked head at every end). A StrictFIFO head, never parked, is tried
        by the cycle the driver runs then. Tells whether any workload moved.
        """
        moved = False
        due = sorted(k for k, at in self._rechecks.items() if at <= now)
        for key in due:
            del self._rechecks[key]
            moved = self.queues.requeue_shape_of(key) or moved
        return moved

    def due_backoffs(self, now: float) -> list[names.WorkloadKey]:
        """Workloads whose backoff is over by ``now``, in key order."""
        q = self.queues
        return sorted(k for k in q.backing_off if 0 < q.pending[k].requeue_at <= now)

    def end_backoff(self, key: names.WorkloadKey, now: float) -> list[pending.Told] | None:
        """Return a backed-off workload to its queue (None: it was not waiting there).

        Returns it if it joined its shape parked and now waits for another reason (``enqueue``).
        """
        pw = self.queues.pending.get(key)
        if pw is None:
            return None
        pw.requeue_at = 0.0
        return self.queues.add(pw.info, now=now)

    def change_info(self, info: workload.WorkloadInfo, now: float) -> list[pending.Told]:
        """Take in a workload's changed priority, checkpoint or activity where it stands.

        An admitted workload counts with its new priority in preemption; a pending one is
        re-sorted in its queue and keeps its backoff. Returns it if it joined its (new) shape
        parked and now waits for another reason (``enqueue``).
        """
        key = info.key
        if key in self.cache.admitted:
            self.cache.update_info(info)
        pw = self.queues.pending.get(key)
        if pw is not None and info.active:
            return self.queues.add(info, now=now, requeue_at=pw.requeue_at)
        return []

    def queues_changed(self, now: float) -> None:
        """After queue objects, flavors, cohorts or namespaces changed: place and requeue all."""
        self.queues.refresh(now)
        self.queues.requeue_all_inadmissible(now)
