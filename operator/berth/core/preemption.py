"""Classical preemption: which admitted workloads to evict so that a preemptor fits.

Mirrors Kueue's classical preemptor (``pkg/scheduler/preemption``, ``classical/``):

- Candidates use a flavor-resource the preemptor needs preempted and satisfy the policy:
  ``withinClusterQueue`` for the preemptor's own queue; ``reclaimWithinCohort`` for other queues,
  which are candidates only while they borrow on those flavor-resources (and, in nested cohorts,
  while every cohort between them and the common ancestor is above its subtree quota).
- Three pools: *hierarchy* candidates (the request fits in the quota of a subtree containing the
  preemptor: reclaimed regardless of borrowing, ``InCohortReclamation``), *priority* candidates in
  other queues (``InCohortReclaimWhileBorrowing`` when ``borrowWithinCohort`` allows the preemptor
  to keep borrowing, else usable only if the preemptor ends within nominal:
  ``InCohortReclamation``), and *same-queue* candidates (``InClusterQueue``).
- Each pool is sorted by ``ordering.candidate_key``; evicted ones of all pools come first.
- A candidate the policy accepts is left out while a preemption protection covers it
  (``core.protection``, KEP-9876).
- Candidates are removed greedily until the preemptor fits (with or without borrowing, in the
  order Kueue tries them); then victims are added back, newest removal first, while it still fits.

Called by ``berth.core.cycle`` and, through ``oracle``, by ``berth.core.flavors``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from berth.api import clusterqueue, conditions, names
from berth.core import flavors, ordering, protection, quota, resources, snapshot, workload

_HUMAN_REASON = {
    conditions.PreemptionReason.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    conditions.PreemptionReason.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    conditions.PreemptionReason.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    conditions.PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING: (
        "reclamation within the cohort while borrowing"
    ),
}


class Variant(enum.IntEnum):
    """How a candidate may be preempted."""

    NEVER = 0
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4

    def reason(self) -> conditions.PreemptionReason:
        """The Preempted condition reason for a victim of this variant."""
        if self == Variant.WITHIN_CQ:
            return conditions.PreemptionReason.IN_CLUSTER_QUEUE
        if self == Variant.RECLAIM_WHILE_BORROWING:
            return conditions.PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING
        return conditions.PreemptionReason.IN_COHORT_RECLAMATION


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """A workload to evict, and why."""

    victim: snapshot.AdmittedWorkload
    reason: conditions.PreemptionReason


@dataclasses.dataclass(slots=True)
class _Candidate:
    adm: snapshot.AdmittedWorkload
    lca: quota.QuotaNode | None
    variant: Variant


def satisfies_policy(
    preemptor: workload.WorkloadInfo,
    candidate: workload.WorkloadInfo,
    policy: clusterqueue.PreemptionPolicy,
) -> bool:
    """Tell whether ``policy`` lets ``preemptor`` preempt ``candidate``."""
    lower = preemptor.priority > candidate.priority
    if policy == clusterqueue.PreemptionPolicy.LOWER_PRIORITY:
        return lower
    if policy == clusterqueue.PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        newer_equal = (
            preemptor.priority == candidate.priority and preemptor.order_time < candidate.order_time
        )
        return lower or newer_equal
    return policy == clusterqueue.PreemptionPolicy.ANY


def preemption_message(
    preemptor: workload.WorkloadInfo,
    reason: conditions.PreemptionReason,
    preemptor_path: str,
    preemptee_path: str,
) -> str:
    """The message of a victim's Preempted condition, naming the preemptor."""
    return (
        f"Preempted to accommodate a workload ({preemptor.key}, UID: {preemptor.uid}) due to "
        f"{_HUMAN_REASON[reason]}; preemptor path: {preemptor_path}; "
        f"preemptee path: {preemptee_path}"
    )


def queue_path(snap: snapshot.Snapshot, cq: names.ClusterQueueName) -> str:
    """``/root-cohort/.../cq`` for messages."""
    node = snap.cq_nodes.get(cq)
    if node is None:
        return f"/{cq}"
    return "/" + "/".join(quota.cohort_names_on_path(node))


class Preemptor:
    """Finds preemption targets for one preemptor against one snapshot."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        cq: snapshot.ClusterQueueInfo,
        wl: workload.WorkloadInfo,
        guard: protection.Guard | None = None,
    ) -> None:
        self.snap = snap
        self.cq = cq
        self.guard = guard
        """Leaves out candidates still protected (``core.protection``), after the policy accepts
        them."""
        self.node = snap.node(cq.name)
        self.wl = wl
        self.placement: Callable[[], bool] | None = None
        """For a topology-aware preemptor, set by the cycle while it searches: whether its pods
        can be placed once the victims so far are gone (Kueue checks it beside quota)."""

    # The oracle used by flavor assignment ------------------------------------------------------

    def mode_after(
        self, fr: resources.FlavorResource, amount: int, targets: list[Target]
    ) -> tuple[flavors.PreemptionMode, int]:
        """Classify a simulated preemption for ``amount`` of ``fr``: mode and borrowing level.

        No targets means preemption cannot help now; targets only in other queues mean a
        reclaim; any target in the preemptor's own queue means priority preemption.
        """
        if not targets:
            borrow, _ = quota.lowest_fitting_subtree_height(self.node, fr, amount)
            return flavors.PreemptionMode.NO_CANDIDATES, borrow
        with self.snap.what_if():
            for t in targets:
                self.snap.remove_admission(t.victim.admission)
            borrow, _ = quota.lowest_fitting_subtree_height(self.node, fr, amount)
        if any(t.victim.cluster_queue == self.cq.name for t in targets):
            return flavors.PreemptionMode.PREEMPT, borrow
        return flavors.PreemptionMode.RECLAIM, borrow

    # Target search ------------------------------------------------------------------------------

    def targets(
        self,
        frs: set[resources.FlavorResource],
        usage: resources.FlavorResourceAmounts,
    ) -> list[Target]:
        """Return a minimal-ish set of victims that lets ``usage`` fit, or [] if none does."""
        same = self._same_queue_candidates(frs)
        forbidden, _ = self._borrow_within_cohort()
        # Without borrowing within the cohort, candidates taken by priority may be reclaimed
        # only by an attempt without borrowing. Kueue makes none for a queue at its nominal
        # quota. Nor can one succeed when the preemptor would borrow even with all of its own
        # queue's candidates gone (evicting other queues' work never lowers its own usage): then
        # those candidates are never chosen, and the search skips them (the same victims, and
        # for a queue that only waits for quota to come back, no search over the cohort).
        borrows_anyway = forbidden and (
            not self._under_nominal(frs) or self._borrows_without(same, usage)
        )
        hierarchy, priority = self._cohort_candidates(frs, usage, skip_priority=borrows_anyway)
        if not (same or hierarchy or priority):
            return []
        key = self._sort_key
        same.sort(key=key)
        hierarchy.sort(key=key)
        priority.sort(key=key)
        ordered = (
            [c for c in hierarchy if c.adm.evicted]
            + [c for c in priority if c.adm.evicted]
            + [c for c in same if c.adm.evicted]
            + [c for c in hierarchy if not c.adm.evicted]
            + [c for c in priority if not c.adm.evicted]
            + [c for c in same if not c.adm.evicted]
        )
        if (not hierarchy and not priority) or borrows_anyway:
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            found = self._attempt(ordered, frs, usage, allow_borrowing=allow_borrowing)
            if found:
                return found
        return []

    def _sort_key(self, c: _Candidate) -> tuple[bool, bool, float, int, float, str]:
        return ordering.candidate_key(c.adm, self.cq.name, self.snap.candidate_score(self.cq.name))

    def _attempt(
        self,
        ordered: list[_Candidate],
        frs: set[resources.FlavorResource],
        usage: resources.FlavorResourceAmounts,
        *,
        allow_borrowing: bool,
    ) -> list[Target]:
        snap = self.snap
        with snap.what_if():
            removed: list[_Candidate] = []
            for cand in ordered:
                if not self._valid(cand, frs, allow_borrowing=allow_borrowing):
                    continue
                snap.remove_admission(cand.adm.admission)
                removed.append(cand)
                if self._fits(usage, allow_borrowing=allow_borrowing):
                    return self._fill_back(removed, usage, allow_borrowing=allow_borrowing)
        return []

    def _fill_back(
        self,
        removed: list[_Candidate],
        usage: resources.FlavorResourceAmounts,
        *,
        allow_borrowing: bool,
    ) -> list[Target]:
        # Same removal order as Kueue (swap with the last), so the victim list reads the same.
        targets = list(removed)
        for i in range(len(targets) - 2, -1, -1):
            cand = targets[i]
            self.snap.add_admission(cand.adm.admission)
            if self._fits(usage, allow_borrowing=allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.snap.remove_admission(cand.adm.admission)
        return [Target(c.adm, c.variant.reason()) for c in targets]

    def _fits(self, usage: resources.FlavorResourceAmounts, *, allow_borrowing: bool) -> bool:
        node = self.node
        for fr, amount in usage.items():
            if not allow_borrowing and node.borrowing_with(fr, amount):
                return False
            if amount > node.available(fr):
                return False
        return self.placement is None or self.placement()

    def _valid(
        self, cand: _Candidate, frs: set[resources.FlavorResource], *, allow_borrowing: bool
    ) -> bool:
        if cand.adm.cluster_queue == self.cq.name:
            return True
        if allow_borrowing and cand.variant == Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        node = self.snap.cq_nodes.get(cand.adm.cluster_queue)
        if node is None or node.within_nominal(frs):
            return False
        for ancestor in node.ancestors():
            if ancestor is cand.lca:
                break
            if ancestor.within_nominal(frs):
                return False
        return True

    # Candidate collection -----------------------------------------------------------------------

    def _borrow_within_cohort(self) -> tuple[bool, int | None]:
        bwc = self.cq.preemption.borrow_within_cohort
        if bwc.policy == clusterqueue.PreemptionPolicy.NEVER:
            return True, None
        return False, bwc.max_priority_threshold

    def _under_nominal(self, frs: set[resources.FlavorResource]) -> bool:
        node = self.node
        return all(node.nominal(fr) > node.usage.get(fr, 0) for fr in frs)

    def _borrows_without(
        self, own: list[_Candidate], usage: resources.FlavorResourceAmounts
    ) -> bool:
        """Tell whether ``usage`` would borrow even with every one of ``own`` evicted."""
        node = self.node
        for fr, amount in usage.items():
            freed = sum(c.adm.admission.usage.get(fr, 0) for c in own)
            if node.borrowing_with(fr, amount - freed):
                return True
        return False

    def _classify(
        self,
        adm: snapshot.AdmittedWorkload,
        frs: set[resources.FlavorResource],
        *,
        advantage: bool,
    ) -> Variant:
        if not adm.admission.uses_any(frs):
            return Variant.NEVER
        same_queue = adm.cluster_queue == self.cq.name
        pre = self.cq.preemption
        policy = pre.within_cluster_queue if same_queue else pre.reclaim_within_cohort
        if not satisfies_policy(self.wl, adm.info, policy):
            return Variant.NEVER
        variant = self._variant(adm, same_queue=same_queue, advantage=advantage)
        if self.guard is not None and self.guard.protects(adm, variant.reason()):
            return Variant.NEVER
        return variant

    def _variant(
        self, adm: snapshot.AdmittedWorkload, *, same_queue: bool, advantage: bool
    ) -> Variant:
        """How a candidate the policy accepts may be preempted."""
        if same_queue:
            return Variant.WITHIN_CQ
        if advantage:
            return Variant.HIERARCHICAL_RECLAIM
        forbidden, threshold = self._borrow_within_cohort()
        if forbidden:
            return Variant.RECLAIM_WITHOUT_BORROWING
        cand_priority = adm.info.priority
        if cand_priority >= self.wl.priority or (
            threshold is not None and cand_priority > threshold
        ):
            return Variant.RECLAIM_WITHOUT_BORROWING
        return Variant.RECLAIM_WHILE_BORROWING

    def _candidates_in(
        self,
        cq: names.ClusterQueueName,
        lca: quota.QuotaNode | None,
        frs: set[resources.FlavorResource],
        *,
        advantage: bool,
    ) -> list[_Candidate]:
        out = []
        for adm in self.snap.admitted.get(cq, {}).values():
            variant = self._classify(adm, frs, advantage=advantage)
            if variant != Variant.NEVER:
                out.append(_Candidate(adm, lca, variant))
        return out

    def _same_queue_candidates(self, frs: set[resources.FlavorResource]) -> list[_Candidate]:
        if self.cq.preemption.within_cluster_queue == clusterqueue.PreemptionPolicy.NEVER:
            return []
        return self._candidates_in(self.cq.name, None, frs, advantage=False)

    def _cohort_candidates(
        self,
        frs: set[resources.FlavorResource],
        usage: resources.FlavorResourceAmounts,
        *,
        skip_priority: bool,
    ) -> tuple[list[_Candidate], list[_Candidate]]:
        """Candidates in other queues: taken by hierarchy, and by priority unless skipped."""
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        node = self.node
        if (
            node.parent is None
            or self.cq.preemption.reclaim_within_cohort == clusterqueue.PreemptionPolicy.NEVER
        ):
            return hierarchy, priority
        advantage, remaining = quota.fits_in_quota(node, usage)
        previous: quota.QuotaNode | None = None
        for subtree_root in node.ancestors():
            if advantage or not skip_priority:
                target = hierarchy if advantage else priority
                self._collect_subtree(
                    subtree_root, subtree_root, previous, frs, target, advantage=advantage
                )
            fits, remaining = quota.fits_in_quota(subtree_root, remaining)
            # Once a subtree holds the request, the preemptor keeps its advantage above it.
            advantage = advantage or fits
            previous = subtree_root
        return hierarchy, priority

    def _collect_subtree(
        self,
        current: quota.QuotaNode,
        subtree_root: quota.QuotaNode,
        skip: quota.QuotaNode | None,
        frs: set[resources.FlavorResource],
        out: list[_Candidate],
        *,
        advantage: bool,
    ) -> None:
        for child in current.children:
            if child.is_cohort:
                if child is skip or child.within_nominal(frs):
                    continue
                self._collect_subtree(child, subtree_root, skip, frs, out, advantage=advantage)
            elif child is not self.node and not child.within_nominal(frs):
                out.extend(
                    self._candidates_in(
                        names.ClusterQueueName(child.name), subtree_root, frs, advantage=advantage
                    )
                )
