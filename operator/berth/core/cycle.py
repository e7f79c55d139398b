"""One scheduling cycle: nominate every queue head, order them, and decide each in turn.

``schedule`` mirrors Kueue's ``Scheduler.schedule`` (``pkg/scheduler/scheduler.go``):

1. **Nominate** each head: reject it when its ClusterQueue is missing or inactive or its
   namespace does not match the queue's ``namespaceSelector``; otherwise assign flavors and,
   if it needs preemption, find targets (falling back to partial admission when allowed),
   leaving out candidates a preemption protection or a spent budget keeps (``protection``).
2. **Order** the entries (``ordering.entry_key``; with fair sharing, a tournament instead).
3. **Process** entries in that order against the same snapshot, so later entries see earlier
   decisions: admit what fits, issue preemptions (never picking a victim another entry of this
   cycle already picked, nor more than the budgets left allow), reserve capacity a preemptor
   without targets waits for, and explain every entry left pending with a Kueue reason and a
   message; say when the first protection or budget that held a head back lets it go.

The snapshot is returned unchanged (all tentative usage is rolled back); the caller applies the
decisions. Pure and deterministic: ``now`` and the cycle number are inputs.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from berth.api import clusterqueue, conditions, configuration, names
from berth.api import protection as api_protection
from berth.core import (
    fairsharing,
    flavors,
    ordering,
    partial,
    preemption,
    protection,
    resources,
    snapshot,
    victims,
    workload,
)
from berth.core.backfill import reservations


class RequeueReason(enum.StrEnum):
    """Why a head goes back to its queue; the queue decides where (active or inadmissible)."""

    GENERIC = "Generic"
    NO_FIT = "NoFit"
    PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
    FAILED_AFTER_NOMINATION = "FailedAfterNomination"
    PENDING_PREEMPTION = "PendingPreemption"
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    RESERVATION = "Reservation"
    """It fits but would delay a reservation (Backfill); it waits like a workload that does not
    fit, but alone: others of its shape may end sooner."""


@dataclasses.dataclass(frozen=True, slots=True)
class ScanProgress:
    """Where the flavor scan of a head stopped, so the next attempt can resume after it."""

    tried: tuple[dict[names.ResourceName, int], ...]
    cycle: int
    generation: int


@dataclasses.dataclass(frozen=True, slots=True)
class Head:
    """A pending workload popped from its ClusterQueue for this cycle."""

    info: workload.WorkloadInfo
    cluster_queue: names.ClusterQueueName
    progress: ScanProgress | None = None
    preemptor: bool = False
    """It issued preemptions in an earlier cycle and waits for the room they make."""
    counts: tuple[int, ...] | None = None
    """The reduced pod counts (partial admission) those preemptions made room for."""


@dataclasses.dataclass(frozen=True, slots=True)
class Admit:
    """Admit ``info`` with ``admission``."""

    info: workload.WorkloadInfo
    admission: workload.Admission
    at: float


@dataclasses.dataclass(frozen=True, slots=True)
class Preempt:
    """Evict ``victim`` to make room for ``preemptor``."""

    victim: snapshot.AdmittedWorkload
    preemptor: workload.WorkloadInfo
    reason: conditions.PreemptionReason
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class Pending:
    """Leave ``info`` pending, with a reason a person can act on."""

    info: workload.WorkloadInfo
    cluster_queue: names.ClusterQueueName
    reason: str
    message: str
    requeue: RequeueReason
    progress: ScanProgress | None = None
    counts: tuple[int, ...] | None = None
    """PendingPreemption under partial admission: the pod counts the preemptions were for."""
    estimated_start: float | None = None
    """Backfill: when its reservation starts (it holds one), by the running work's estimates.

    Not in ``message``, which stays the same while it waits: each driver says it in its terms
    (the simulator in virtual time, the operator as a wall-clock time)."""
    protected: protection.Protected | None = None
    """Candidates its preemption would have taken but a protection kept, and when the first
    protection ends: not in ``message`` either (``protection.phrase`` says it)."""
    spent: protection.Spent | None = None
    """The preemption budgets that kept its victims, and when the first lets one more go
    (``protection.budget_phrase``)."""

    @property
    def held_until(self) -> float | None:
        """When the first protection or budget that kept its preemption back lets it go."""
        ends = [x.until for x in (self.protected, self.spent) if x is not None]
        return min(ends, default=None)


@dataclasses.dataclass(slots=True)
class CycleResult:
    """Every decision of one cycle, in the order it was taken."""

    admitted: list[Admit] = dataclasses.field(default_factory=list)
    preempted: list[Preempt] = dataclasses.field(default_factory=list)
    pending: list[Pending] = dataclasses.field(default_factory=list)
    plans: dict[str, reservations.Kept] = dataclasses.field(default_factory=dict)
    """The Backfill plans of the quota trees this cycle left unchanged, by root: the next cycle
    takes them over if nothing they were made from changed meanwhile."""
    starts: dict[names.WorkloadKey, float] = dataclasses.field(default_factory=dict)
    """Where Backfill plans last placed each holder's reservation (the hints the cycle was
    given, updated by its own placements): where the next cycle's placements search first
    (``reservations.Inputs.hints``)."""
    ends: reservations.Ends = dataclasses.field(default_factory=dict)
    """When admitted work gives its quota back, as the cycle was given it and worked it out
    (``reservations.Inputs.ends``)."""
    recheck_at: float | None = None
    """When the first protection or budget that kept a head pending lets it go: nothing else
    changes then, so the driver tries that head's quota tree again at that time (Kueue's proposal
    re-queues the root cohort's workloads on a timer)."""

    @property
    def changed(self) -> bool:
        """Tell whether the cycle admitted or preempted anything."""
        return bool(self.admitted or self.preempted)

    def held(self) -> list[tuple[names.ClusterQueueName, str]]:
        """(ClusterQueue, ``protection`` or ``budget``) of each head whose preemption was held."""
        return [
            (p.cluster_queue, held_by)
            for p in self.pending
            for held_by, why in (("protection", p.protected), ("budget", p.spent))
            if why is not None
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class Policy:
    """Operator-wide settings the core obeys (from the Configuration)."""

    fair_sharing: bool = False
    fair_sharing_strategies: tuple[configuration.PreemptionStrategy, ...] = ()
    """Fair-sharing preemption strategies in order (empty: Kueue's default pair)."""
    block_admission: bool = False
    topology_profile: configuration.TopologyProfile = configuration.TopologyProfile.MIXED
    protection: api_protection.PreemptionProtection | None = None
    """The Configuration's preemption protection windows (a queue's own override them)."""

    @classmethod
    def from_configuration(cls, config: configuration.Configuration) -> Policy:
        """The policy a Configuration sets (fair sharing, ``waitForPodsReady.blockAdmission``)."""
        wfpr = config.wait_for_pods_ready
        strategies = config.fair_sharing.preemption_strategies if config.fair_sharing else []
        return cls(
            fair_sharing=config.fair_sharing is not None,
            fair_sharing_strategies=tuple(strategies),
            block_admission=wfpr is not None and wfpr.block_admission,
            topology_profile=config.topology_profile,
            protection=config.preemption_protection,
        )


@dataclasses.dataclass(slots=True)
class Entry:
    """A nominated head with its flavor assignment and preemption targets."""

    head: Head
    cq: snapshot.ClusterQueueInfo
    assignment: flavors.Assignment
    targets: list[preemption.Target]
    guard: protection.Guard

    @property
    def info(self) -> workload.WorkloadInfo:
        """The workload."""
        return self.head.info


_PENDING = conditions.PendingReason


_BLOCKED = (RequeueReason.NO_FIT, RequeueReason.PREEMPTION_NO_CANDIDATES, RequeueReason.RESERVATION)
"""Decisions after which a Backfill head holds a reservation (if it is among the first)."""


def _progress(entry: Entry, cycle: int, generation: int) -> ScanProgress:
    return ScanProgress(tuple(entry.assignment.last_tried), cycle, generation)


def schedule(
    snap: snapshot.Snapshot,
    heads: list[Head],
    now: float,
    policy: Policy,
    *,
    cycle: int = 0,
    generation: Callable[[names.ClusterQueueName], int] = lambda _cq: 0,
    all_pods_ready: bool = True,
    backfill_inputs: reservations.Inputs | None = None,
    evictions: protection.Evictions | None = None,
) -> CycleResult:
    """Decide what to do with each head; the snapshot is left exactly as it was.

    ``evictions``: when workloads below each preemption budget were preempted before.
    """
    run = _Cycle(
        snap, policy, now, cycle, generation, all_pods_ready=all_pods_ready, evictions=evictions
    )
    if backfill_inputs is not None:
        run.planner = reservations.Planner(snap, now, backfill_inputs, run.preempted, generation)
    with snap.what_if():
        entries = [e for e in (run.nominate(h) for h in heads) if e is not None]
        entries.sort(
            key=lambda e: ordering.entry_key(
                e.head.preemptor, e.assignment.borrowing, e.info, snap.head_score(e.cq.name)
            )
        )
        ordered = (
            fairsharing.tournament(
                snap,
                entries,
                cq_of=lambda e: e.cq.name,
                usage_of=lambda e: e.assignment.usage,
                info_of=lambda e: e.info,
                preemptor_of=lambda e: e.head.preemptor,
            )
            if policy.fair_sharing
            else iter(entries)
        )
        for entry in ordered:
            run.process(entry)
    if run.planner is not None:
        run.result.plans = run.planner.kept()
        run.result.starts = run.planner.starts()
        run.result.ends = run.planner.ends()
    return run.result


def _pending(
    head: Head,
    cq: names.ClusterQueueName,
    reason: str,
    message: str,
    requeue: RequeueReason = RequeueReason.GENERIC,
) -> Pending:
    return Pending(head.info, cq, reason, message, requeue)


class _Cycle:
    """The state of one cycle: the snapshot, the decisions so far, the victims chosen so far."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        policy: Policy,
        now: float,
        cycle: int,
        generation: Callable[[names.ClusterQueueName], int],
        *,
        all_pods_ready: bool,
        evictions: protection.Evictions | None = None,
    ) -> None:
        self.snap = snap
        self.policy = policy
        self.now = now
        self.cycle = cycle
        self.generation = generation
        self.blocked = policy.block_admission and not all_pods_ready
        self.result = CycleResult()
        self.preempted: dict[names.WorkloadKey, snapshot.AdmittedWorkload] = {}
        self.victims = victims.ChosenVictims(snap)
        """The usage of the victims chosen so far, for the check before each entry."""
        self.planner: reservations.Planner | None = None
        self.budgets = protection.Budgets(snap, evictions or {}, now)
        """What is left of each preemption budget, this cycle's preemptions counted."""

    def nominate(self, head: Head) -> Entry | None:
        """Check that a head may be considered at all, then assign flavors and find targets."""
        snap, info, pending = self.snap, head.info, self.result.pending
        cq = snap.cluster_queues.get(head.cluster_queue)
        if cq is None or head.cluster_queue not in snap.cq_nodes:
            pending.append(
                _pending(
                    head,
                    head.cluster_queue,
                    _PENDING.MISCONFIGURED,
                    f"ClusterQueue {head.cluster_queue} not found",
                )
            )
            return None
        if not cq.active:
            pending.append(
                _pending(head, cq.name, _PENDING.SUSPENDED, f"ClusterQueue {cq.name} is inactive")
            )
            return None
        labels = snap.namespace_labels(info.key.namespace)
        if labels is None:
            pending.append(
                _pending(
                    head,
                    cq.name,
                    _PENDING.MISCONFIGURED,
                    f'workload namespace "{info.key.namespace}" does not exist',
                )
            )
            return None
        if cq.namespace_selector is None or not cq.namespace_selector.matches(labels):
            pending.append(
                _pending(
                    head,
                    cq.name,
                    _PENDING.MISCONFIGURED,
                    "workload namespace doesn't match ClusterQueue selector",
                    RequeueReason.NAMESPACE_MISMATCH,
                )
            )
            return None
        start = None
        progress = head.progress
        if progress is not None and (
            self.cycle - progress.cycle <= 1 or progress.generation == self.generation(cq.name)
        ):
            start = list(progress.tried)
        guard = protection.Guard(snap, self.policy.protection, self.now, self.budgets)
        assignment, targets = get_assignment(
            snap, cq, info, self.policy, start=start, counts=head.counts, guard=guard
        )
        return Entry(head, cq, assignment, targets, guard)

    def _pend(
        self,
        entry: Entry,
        reason: str,
        message: str,
        requeue: RequeueReason,
        *,
        keep_progress: bool,
    ) -> None:
        progress = (
            _progress(entry, self.cycle, self.generation(entry.cq.name)) if keep_progress else None
        )
        counts = None
        if requeue == RequeueReason.PENDING_PREEMPTION:
            counts = tuple(ps.count for ps in entry.assignment.pod_sets)
            if counts == tuple(ps.count for ps in entry.info.pod_sets):
                counts = None  # not reduced: nothing to hold it to
        protected = spent = None
        if requeue in (RequeueReason.NO_FIT, RequeueReason.PREEMPTION_NO_CANDIDATES):
            protected, spent = entry.guard.protected(), entry.guard.spent()
        waiting = Pending(
            entry.info,
            entry.cq.name,
            reason,
            message,
            requeue,
            progress,
            counts,
            protected=protected,
            spent=spent,
        )
        until, at = waiting.held_until, self.result.recheck_at
        if until is not None:
            self.result.recheck_at = until if at is None else min(at, until)
        self.result.pending.append(waiting)

    def process(self, entry: Entry) -> None:
        """Decide one nominated entry against the snapshot as earlier entries left it."""
        snap, cq = self.snap, entry.cq
        if not self._placements_still_fit(entry):
            # An earlier entry of this cycle took the domains it was placed in: place it again
            # against the snapshot as it is now (Kueue's
            # TASRecomputeAssignmentWithinSchedulingCycle).
            entry.assignment, entry.targets = get_assignment(
                snap, cq, entry.info, self.policy, guard=entry.guard
            )
        mode = entry.assignment.mode
        message = entry.assignment.message()
        hold = False  # a preemptor without targets holds the capacity it waits for
        if mode == flavors.Mode.NO_FIT:
            self._pend(
                entry,
                entry.assignment.no_fit_reason or _PENDING.WAITING_FOR_QUOTA,
                message,
                RequeueReason.NO_FIT,
                keep_progress=True,
            )
        elif mode == flavors.Mode.PREEMPT and not entry.targets:
            self._pend(
                entry,
                _PENDING.WAITING_FOR_QUOTA,
                message,
                RequeueReason.PREEMPTION_NO_CANDIDATES,
                keep_progress=True,
            )
            hold = True
        elif any(t.victim.info.key in self.preempted for t in entry.targets):
            # Another entry of this cycle already chose some of these victims: the entry is
            # skipped and tried again next cycle, not given victims of its own (Kueue v0.19's
            # default; its alpha gate RecomputeAssignmentUponPreemptionTargetsOverlap
            # recomputes instead, which lets the entry evict more in the same cycle).
            self._pend(
                entry,
                _PENDING.WAITING_FOR_QUOTA,
                "Workload has overlapping preemption targets with another workload",
                RequeueReason.FAILED_AFTER_NOMINATION,
                keep_progress=True,
            )
        elif (spent := self._overspends(entry)) is not None:
            # Each victim fit the budgets left when it was chosen; together, or after the
            # preemptions of earlier entries of this cycle, they do not: wait for the window.
            entry.guard.note(spent)
            self._pend(
                entry,
                _PENDING.WAITING_FOR_QUOTA,
                message,
                RequeueReason.PREEMPTION_NO_CANDIDATES,
                keep_progress=True,
            )
            hold = True
        elif not self._fits_with_victims_gone(entry):
            self._pend(
                entry,
                _PENDING.WAITING_FOR_QUOTA,
                "Workload no longer fits after processing another workload",
                RequeueReason.FAILED_AFTER_NOMINATION,
                keep_progress=True,
            )
        elif (held := self._held_for_reservation(entry)) is not None:
            self._pend(
                entry,
                _PENDING.WAITING_FOR_RESERVATION,
                held,
                RequeueReason.RESERVATION,
                keep_progress=False,
            )
        else:
            self._take(entry, mode, message)
        self._reserve(entry, hold=hold)

    def _reserve(self, entry: Entry, *, hold: bool) -> None:
        """Give a blocked Backfill head its reservation; then let a preemptor hold its room."""
        planner, pending = self.planner, self.result.pending
        if (
            planner is not None
            and pending
            and pending[-1].info is entry.info
            and pending[-1].requeue in _BLOCKED
        ):
            # Before the hold below: its reservation is placed as if it held nothing yet.
            start = planner.blocked(entry.info, entry.cq)
            if start is not None:
                pending[-1] = dataclasses.replace(pending[-1], estimated_start=start)
        if hold and _reserve_for_preemptor(self.snap, entry) and planner is not None:
            planner.changed(entry.cq.name)

    def _held_for_reservation(self, entry: Entry) -> str | None:
        """Why a fitting entry must wait for a reservation ahead of it (Backfill), if it must."""
        planner = self.planner
        if planner is None or entry.assignment.mode != flavors.Mode.FIT:
            return None  # preemption is decided by priority, as in Kueue
        a = entry.assignment
        return planner.held(entry.info, entry.cq.name, a.usage, borrows=a.borrowing > 0)

    def _placements_still_fit(self, entry: Entry) -> bool:
        placed = entry.assignment.placed()
        if not placed:
            return True
        snap = self.snap
        with snap.what_if():
            for t in entry.targets:
                snap.remove_admission(t.victim.admission)
            return snap.placed_fits(placed)

    def _overspends(self, entry: Entry) -> protection.Spent | None:
        """The budgets the entry's victims not chosen yet would overspend, if any."""
        if not entry.targets or self.budgets.none:
            return None
        new = [t.victim for t in entry.targets if t.victim.info.key not in self.preempted]
        return self.budgets.spent(new)

    def _fits_with_victims_gone(self, entry: Entry) -> bool:
        """Tell whether the entry fits once every victim chosen so far and its own are gone."""
        own = {t.victim.info.key: t.victim for t in entry.targets}
        usage = entry.assignment.usage
        room = self.victims.room(entry.cq.name, own.values(), usage)
        return all(amount <= room[fr] for fr, amount in usage.items())

    def _take(self, entry: Entry, mode: flavors.Mode, message: str) -> None:
        """Claim the entry's quota, then admit it or issue its preemptions."""
        snap, info, cq = self.snap, entry.info, entry.cq
        for target in entry.targets:
            victim = target.victim
            if victim.info.key in self.preempted:
                continue
            self.preempted[victim.info.key] = victim
            self.victims.add(victim)
            self.budgets.spend(victim)
        snap.add_usage(cq.name, entry.assignment.usage)
        snap.place(entry.assignment.placed(), 1)
        if mode == flavors.Mode.PREEMPT and self.planner is not None:
            self.planner.started(info, cq.name, entry.assignment.usage)
        if mode == flavors.Mode.PREEMPT:
            preemptor_path = preemption.queue_path(snap, cq.name)
            for target in entry.targets:
                victim_path = preemption.queue_path(snap, target.victim.cluster_queue)
                self.result.preempted.append(
                    Preempt(
                        victim=target.victim,
                        preemptor=info,
                        reason=target.reason,
                        message=preemption.preemption_message(
                            info, target.reason, preemptor_path, victim_path
                        ),
                    )
                )
            self._pend(
                entry,
                _PENDING.WAITING_FOR_PREEMPTED_WORKLOADS,
                f"{message}. Pending the preemption of {len(entry.targets)} workload(s)",
                RequeueReason.PENDING_PREEMPTION,
                keep_progress=False,
            )
        elif self.blocked:
            self._pend(
                entry,
                _PENDING.WAITING_FOR_PODS_READY,
                "waiting for all admitted workloads to be in PodsReady condition",
                RequeueReason.WAITING_FOR_PODS_READY,
                keep_progress=False,
            )
            if self.planner is not None:
                self.planner.changed(cq.name)
        else:
            self.result.admitted.append(
                Admit(info, entry.assignment.to_admission(cq.name), self.now)
            )
            if self.planner is not None:
                self.planner.started(info, cq.name, entry.assignment.usage)
            # A workload just admitted is not ready yet: with blockAdmission the rest wait.
            self.blocked = self.blocked or self.policy.block_admission


def get_assignment(
    snap: snapshot.Snapshot,
    cq: snapshot.ClusterQueueInfo,
    info: workload.WorkloadInfo,
    policy: Policy,
    *,
    start: list[dict[names.ResourceName, int]] | None = None,
    counts: tuple[int, ...] | None = None,
    guard: protection.Guard | None = None,
) -> tuple[flavors.Assignment, list[preemption.Target]]:
    """Assign flavors and find preemption targets, falling back to partial admission.

    ``guard``: leaves out the candidates still protected at its time (none without one).

    ``counts``: a preemptor that preempted for reduced pod counts is first tried at those
    counts, not at its full size (a deliberate difference from Kueue, which starts again from the
    full size: two partially admissible workloads in one cohort could otherwise each preempt the
    other at a reduced size and be admitted at full size, for ever).
    """
    finder = _target_finder(snap, cq, info, policy, guard)
    assigner = flavors.FlavorAssigner(
        snap,
        cq,
        info,
        finder.oracle,
        fair_sharing=policy.fair_sharing,
        start=start,
        profile=policy.topology_profile,
    )

    def judged(
        tried: flavors.Assignment,
    ) -> tuple[flavors.Assignment, list[preemption.Target]] | None:
        """The assignment if it fits, or fits by preempting someone; else None."""
        if tried.mode == flavors.Mode.FIT:
            return tried, []
        if tried.mode == flavors.Mode.PREEMPT:
            found = _placed_targets(snap, assigner, finder, tried)
            if found:
                return tried, found
        return None

    if counts is not None and (held := judged(assigner.assign(counts))) is not None:
        return held
    full = assigner.assign()
    if (done := judged(full)) is not None:
        return done
    if info.can_be_partially_admitted():
        best = partial.search(info.pod_sets, lambda at: judged(assigner.assign(at)))
        if best is not None:
            return best
    return full, []


def _placed_targets(
    snap: snapshot.Snapshot,
    assigner: flavors.FlavorAssigner,
    finder: _TargetFinder,
    tried: flavors.Assignment,
) -> list[preemption.Target]:
    """Victims for an assignment that needs preemption; with topology, its pods must be placed.

    Once found, the placement it will hold when they are gone is recorded on the assignment
    (Kueue's ``updateAssignmentForTAS``).
    """
    frs, usage = tried.frs_needing_preemption(), tried.usage
    if not assigner.places(tried):
        return finder.targets(frs, usage)

    def placement() -> bool:
        return assigner.place(tried, simulate_empty=False, record=False) is None

    found = finder.targets(frs, usage, placement)
    if found:
        with snap.what_if():
            for t in found:
                snap.remove_admission(t.victim.admission)
            assigner.place(tried, simulate_empty=False, record=True)
    return found


_Question = tuple[
    frozenset[resources.FlavorResource], tuple[tuple[resources.FlavorResource, int], ...]
]
"""Which flavor-resources need room, and how much of each."""


class _TargetFinder:
    """The two questions flavor assignment and the cycle ask about preemption."""

    def __init__(
        self, classical: preemption.Preemptor, fair: fairsharing.FairPreemptor | None
    ) -> None:
        self.classical = classical
        self.fair = fair
        self.found: dict[_Question, list[preemption.Target]] = {}
        """Victims by question. One finder serves one workload on one snapshot, and flavor
        assignment's question is often the cycle's own (one pod set, one resource)."""

    def oracle(
        self, fr: resources.FlavorResource, amount: int
    ) -> tuple[flavors.PreemptionMode, int]:
        """Simulate preemption for ``amount`` of ``fr`` alone (flavor assignment's question)."""
        return self.classical.mode_after(fr, amount, self.targets({fr}, {fr: amount}))

    def targets(
        self,
        frs: set[resources.FlavorResource],
        usage: resources.FlavorResourceAmounts,
        placement: Callable[[], bool] | None = None,
    ) -> list[preemption.Target]:
        """Victims that let ``usage`` fit (and, for a topology-aware workload, ``placement``)."""
        if placement is not None:
            # Not cached: the answer depends on where the pods can be placed, not on quota alone.
            searcher = self.fair if self.fair is not None else self.classical
            searcher.placement = placement
            try:
                return searcher.targets(frs, usage)
            finally:
                searcher.placement = None
        key = (frozenset(frs), tuple(sorted(usage.items())))
        found = self.found.get(key)
        if found is None:
            fair = self.fair
            found = (
                fair.targets(frs, usage) if fair is not None else self.classical.targets(frs, usage)
            )
            self.found[key] = found
        return list(found)


def _target_finder(
    snap: snapshot.Snapshot,
    cq: snapshot.ClusterQueueInfo,
    info: workload.WorkloadInfo,
    policy: Policy,
    guard: protection.Guard | None,
) -> _TargetFinder:
    fair = (
        fairsharing.FairPreemptor(snap, cq, info, policy.fair_sharing_strategies, guard)
        if policy.fair_sharing
        else None
    )
    return _TargetFinder(preemption.Preemptor(snap, cq, info, guard), fair)


def _reserve_for_preemptor(snap: snapshot.Snapshot, entry: Entry) -> bool:
    """Hold the capacity a preemptor without targets waits for, so others cannot borrow it.

    Tells whether it held any.
    """
    cq = entry.cq
    if (
        cq.preemption.reclaim_within_cohort == clusterqueue.PreemptionPolicy.ANY
        and entry.guard.until() is None
    ):
        # It can always reclaim what others borrow from it; holding quota would only waste it.
        # Not while a protection keeps what it would reclaim: others must not borrow the rest.
        return False
    node = snap.node(cq.name)
    reserve: resources.FlavorResourceAmounts = {}
    for fr, amount in entry.assignment.usage.items():
        used = node.usage.get(fr, 0)
        nominal = node.nominal(fr)
        if entry.assignment.borrowing > 0:
            limit = node.quotas[fr].borrowing_limit if fr in node.quotas else None
            held = amount if limit is None else min(amount, nominal + limit - used)
        else:
            held = min(amount, nominal - used)
        reserve[fr] = max(0, held)
    snap.add_usage(cq.name, reserve)
    return any(reserve.values())
