"""Fair sharing: dominant resource shares, the admission tournament and fair preemption.

Mirrors Kueue (``pkg/cache/scheduler/fair_sharing.go``, ``pkg/scheduler/fair_sharing_iterator.go``,
``pkg/scheduler/preemption/fairsharing``):

- **DRS** of a node with a parent: per resource, what it borrows above its subtree quota (summed
  over flavors) times 1000 over what its parent could lend (the parent's potential capacity);
  the largest ratio wins, ties to the alphabetically first resource. Divided by the fair-sharing
  weight; a weight of 0 makes any borrowing an infinite share. Roots have share 0.
- **Tournament**: at every cohort, from the leaves up, the child whose share (with its candidate
  admitted) is lowest wins, after (1) being a preemptor that waits for the room it made and (2)
  not borrowing at that level on the flavors it requests, and before (4) higher priority and (5)
  earlier queue-order time.
- **Fair preemption**: candidates come from the preemptor's own queue and from borrowing queues of
  the whole tree; target queues are taken from the root down by highest share; a candidate in
  another queue is preempted when the preemptor, within nominal, reclaims (``InCohortReclamation``)
  or when the configured strategy allows it (``InCohortFairSharing``):
  *LessThanOrEqualToFinalShare* — the preemptor's new share is at most the target's share after
  removal; *LessThanInitialShare* — below the target's share before removal (applied as a second
  pass, one victim per queue). A candidate a rule accepts is skipped while a preemption protection
covers it (``core.protection``). Victims not needed are added back.

Called by ``berth.core.cycle`` when the Configuration enables fair sharing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from berth.api import clusterqueue, conditions, configuration, names
from berth.core import ordering, preemption, protection, quota, resources, snapshot, workload

T = TypeVar("T")
MAX_SHARE = 2**63 - 1
"""The weighted share reported for a zero-weight node that borrows (Kueue's MaxInt64)."""

Strategy = configuration.PreemptionStrategy
_IN_CQ = conditions.PreemptionReason.IN_CLUSTER_QUEUE
_RECLAIM = conditions.PreemptionReason.IN_COHORT_RECLAMATION
_FAIR = conditions.PreemptionReason.IN_COHORT_FAIR_SHARING

DEFAULT_STRATEGIES = (Strategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, Strategy.LESS_THAN_INITIAL_SHARE)
"""Kueue's default ``fairSharing.preemptionStrategies``, tried in this order."""


@dataclasses.dataclass(frozen=True, slots=True)
class DRS:
    """A dominant resource share with what is needed to compare two of them exactly."""

    weight: int
    """Fair-sharing weight in thousandths."""
    ratio: float = 0.0
    """Unweighted: borrowed x 1000 / lendable, of the dominant resource."""
    dominant: str = ""
    borrowed: frozenset[resources.FlavorResource] = frozenset()

    @property
    def borrowing(self) -> bool:
        """Tell whether the node uses more than its subtree quota of anything."""
        return bool(self.borrowed)

    def borrowing_on(self, requested: resources.FlavorResourceAmounts) -> bool:
        """Tell whether the node borrows on any flavor-resource with a positive request."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)

    def zero_weight_borrows(self) -> bool:
        """A zero weight and a non-zero share: an infinite share."""
        return self.weight == 0 and self.ratio != 0

    def precise(self) -> float:
        """The weighted share as a float (inf for zero weight)."""
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio * 1000 / self.weight

    def rounded(self) -> int:
        """The weighted share as reported in status: rounded up, MaxInt64 when infinite."""
        if self.zero_weight_borrows():
            return MAX_SHARE
        return math.ceil(self.precise())


NEGATIVE = DRS(weight=1000, ratio=-1.0)


def compare(a: DRS, b: DRS) -> int:
    """-1 if ``a`` is the fairer (lower) share, 1 if ``b`` is, 0 if equal."""
    a_inf, b_inf = a.zero_weight_borrows(), b.zero_weight_borrows()
    if a_inf and b_inf:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a_inf:
        return 1
    if b_inf:
        return -1
    pa, pb = a.precise(), b.precise()
    return (pa > pb) - (pa < pb)


def weight_of(snap: snapshot.Snapshot, node: quota.QuotaNode) -> int:
    """A node's fair-sharing weight in thousandths."""
    if node.is_cohort:
        return snap.cohort_weights.get(names.CohortName(node.name), 1000)
    return snap.cluster_queues[names.ClusterQueueName(node.name)].fair_weight


def _lendable(parent: quota.QuotaNode) -> dict[str, int]:
    out: dict[str, int] = {}
    for fr in parent.root().subtree_quota:
        out[fr.resource] = out.get(fr.resource, 0) + parent.potential_available(fr)
    return out


def share(
    snap: snapshot.Snapshot,
    node: quota.QuotaNode,
    extra: resources.FlavorResourceAmounts | None = None,
) -> DRS:
    """The node's dominant resource share, optionally with ``extra`` usage added."""
    weight = weight_of(snap, node)
    if node.parent is None:
        return DRS(weight)
    borrowed_per_resource: dict[str, int] = {}
    borrowed: set[resources.FlavorResource] = set()
    for fr, q in node.subtree_quota.items():
        amount = node.usage.get(fr, 0) + (extra.get(fr, 0) if extra else 0) - q
        if amount > 0:
            borrowed_per_resource[fr.resource] = borrowed_per_resource.get(fr.resource, 0) + amount
            borrowed.add(fr)
    if not borrowed:
        return DRS(weight)
    lendable = _lendable(node.parent)
    ratio, dominant = 0.0, ""
    for res in sorted(borrowed_per_resource):
        lend = lendable.get(res, 0)
        if lend > 0:
            r = borrowed_per_resource[res] * 1000.0 / lend
            if r > ratio:
                ratio, dominant = r, res
    return DRS(weight, ratio, dominant, frozenset(borrowed))


# The admission tournament ---------------------------------------------------------------------


def tournament(
    snap: snapshot.Snapshot,
    entries: list[T],
    *,
    cq_of: Callable[[T], names.ClusterQueueName],
    usage_of: Callable[[T], resources.FlavorResourceAmounts],
    info_of: Callable[[T], workload.WorkloadInfo],
    preemptor_of: Callable[[T], bool],
) -> Iterator[T]:
    """Yield entries in fair order; shares are recomputed after each yielded entry is decided."""
    by_cq: dict[str, T] = {cq_of(e): e for e in entries}
    # Shares per queue, kept across pops: deciding an entry changes usage only on its own path,
    # so only queues under the same child of the root can see different shares afterwards.
    shares: dict[tuple[str, str], DRS] = {}
    requested: dict[str, resources.FlavorResourceAmounts] = {}
    known: set[str] = set()
    while by_cq:
        first = min(by_cq)
        node = snap.cq_nodes[names.ClusterQueueName(first)]
        if node.parent is None:
            yield by_cq.pop(first)
            continue
        root = node.root()
        for cq_node in root.subtree_cluster_queues():
            entry = by_cq.get(cq_node.name)
            if entry is None or cq_node.name in known:
                continue
            usage = usage_of(entry)
            requested[cq_node.name] = usage
            known.add(cq_node.name)
            with snap.what_if():
                snap.add_usage(names.ClusterQueueName(cq_node.name), usage)
                current = share(snap, cq_node)
                for ancestor in cq_node.ancestors():
                    shares[(ancestor.name, cq_node.name)] = current
                    current = share(snap, ancestor)
        round_ = _Round(by_cq, shares, requested, info_of, preemptor_of)
        winner = round_.winner(root)
        if winner is None:  # pragma: no cover - a root with entries always yields one
            winner = first
        yield by_cq.pop(winner)
        decided = _top_child(snap.cq_nodes[names.ClusterQueueName(winner)], root)
        known = {
            q
            for q in known
            if _top_child(snap.cq_nodes[names.ClusterQueueName(q)], root) is not decided
        }


def _top_child(node: quota.QuotaNode, root: quota.QuotaNode) -> quota.QuotaNode:
    """The child of ``root`` on ``node``'s path (``node`` itself if the root is its parent)."""
    current = node
    while current.parent is not None and current.parent is not root:
        current = current.parent
    return current


@dataclasses.dataclass(frozen=True, slots=True)
class _Round(Generic[T]):
    """One round of the tournament in a quota tree: the entries and the shares they would make."""

    by_cq: dict[str, T]
    shares: dict[tuple[str, str], DRS]
    """The share of each child of a cohort with its candidate admitted: (cohort, cq) -> DRS."""
    requested: dict[str, resources.FlavorResourceAmounts]
    info_of: Callable[[T], workload.WorkloadInfo]
    preemptor_of: Callable[[T], bool]

    def winner(self, cohort: quota.QuotaNode) -> str | None:
        """Return the ClusterQueue whose entry wins in ``cohort``'s subtree, if it has any."""
        candidates: list[str] = []
        for child in cohort.children:
            if child.is_cohort:
                found = self.winner(child)
                if found is not None:
                    candidates.append(found)
        candidates.extend(
            c.name for c in cohort.children if not c.is_cohort and c.name in self.by_cq
        )
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if self._less(cohort, current, best):
                best = current
        return best

    def _less(self, cohort: quota.QuotaNode, a: str, b: str) -> bool:
        """Whether ``a``'s entry goes before ``b``'s at ``cohort``, by the tournament's criteria."""
        a_pre, b_pre = self.preemptor_of(self.by_cq[a]), self.preemptor_of(self.by_cq[b])
        if a_pre != b_pre:
            return a_pre
        a_drs, b_drs = self.shares[(cohort.name, a)], self.shares[(cohort.name, b)]
        a_borrow = a_drs.borrowing_on(self.requested[a])
        b_borrow = b_drs.borrowing_on(self.requested[b])
        if a_borrow != b_borrow:
            return not a_borrow
        c = compare(a_drs, b_drs)
        if c != 0:
            return c < 0
        ai, bi = self.info_of(self.by_cq[a]), self.info_of(self.by_cq[b])
        if ai.priority != bi.priority:
            return ai.priority > bi.priority
        return ai.order_time < bi.order_time


# Fair preemption --------------------------------------------------------------------------------


class FairPreemptor:
    """Finds preemption targets under fair sharing for one preemptor."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        cq: snapshot.ClusterQueueInfo,
        wl: workload.WorkloadInfo,
        strategies: tuple[Strategy, ...],
        guard: protection.Guard | None = None,
    ) -> None:
        self.snap = snap
        self.guard = guard
        """Leaves out candidates still protected (``core.protection``), after the rules accept
        them."""
        self.cq = cq
        self.node = snap.node(cq.name)
        self.wl = wl
        self.strategies = strategies or DEFAULT_STRATEGIES
        self.ancestors = list(self.node.ancestors())
        self.placement: Callable[[], bool] | None = None
        """As ``preemption.Preemptor.placement``."""

    def _candidates(self, frs: set[resources.FlavorResource]) -> list[snapshot.AdmittedWorkload]:
        pre = self.cq.preemption
        never = clusterqueue.PreemptionPolicy.NEVER
        out: list[snapshot.AdmittedWorkload] = []

        def take(cq: str, policy: clusterqueue.PreemptionPolicy) -> None:
            out.extend(
                adm
                for adm in self.snap.admitted.get(names.ClusterQueueName(cq), {}).values()
                if adm.admission.uses_any(frs)
                and preemption.satisfies_policy(self.wl, adm.info, policy)
                and (cq != self.cq.name or not self._protected(adm, _IN_CQ))
            )

        if pre.within_cluster_queue != never:
            take(self.cq.name, pre.within_cluster_queue)
        if self.node.parent is not None and pre.reclaim_within_cohort != never:
            for other in self.node.root().subtree_cluster_queues():
                if other is self.node or not any(other.borrowing(fr) for fr in frs):
                    continue
                take(other.name, pre.reclaim_within_cohort)
        score = self.snap.candidate_score(self.cq.name)
        out.sort(key=lambda c: ordering.candidate_key(c, self.cq.name, score))
        return out

    def _protected(
        self, victim: snapshot.AdmittedWorkload, reason: conditions.PreemptionReason
    ) -> bool:
        return self.guard is not None and self.guard.protects(victim, reason)

    def _fits(self, usage: resources.FlavorResourceAmounts) -> bool:
        # The preemptor's own usage is simulated while shares are compared; take it out here.
        with self.snap.what_if():
            self.snap.remove_usage(self.cq.name, usage)
            return self._fits_now(usage)

    def _fits_now(self, usage: resources.FlavorResourceAmounts) -> bool:
        if any(amount > self.node.available(fr) for fr, amount in usage.items()):
            return False
        return self.placement is None or self.placement()

    def _within_nominal(self, frs: set[resources.FlavorResource]) -> bool:
        return not any(self.node.borrowing(fr) for fr in frs)

    def _almost_lcas(self, target: quota.QuotaNode) -> tuple[quota.QuotaNode, quota.QuotaNode]:
        lca = next(a for a in target.ancestors() if a in self.ancestors)
        return _almost_lca(self.node, lca), _almost_lca(target, lca)

    def targets(
        self,
        frs: set[resources.FlavorResource],
        usage: resources.FlavorResourceAmounts,
    ) -> list[preemption.Target]:
        """Return victims that let ``usage`` fit fairly, or [] if there are none."""
        candidates = self._candidates(frs)
        if not candidates:
            return []
        snap = self.snap
        with snap.what_if():
            snap.add_usage(self.cq.name, usage)
            fits, targets, retry = self._first_strategy(candidates, frs, usage)
            if not fits and len(self.strategies) > 1:
                fits, targets = self._second_strategy(retry, usage, targets)
        if not fits:
            return []
        with snap.what_if():
            for t in targets:
                snap.remove_admission(t.victim.admission)
            kept = list(targets)
            for i in range(len(kept) - 2, -1, -1):
                victim = kept[i].victim
                snap.add_admission(victim.admission)
                if self._fits_now(usage):
                    kept[i] = kept[-1]
                    kept.pop()
                else:
                    snap.remove_admission(victim.admission)
        return kept

    def _first_strategy(
        self,
        candidates: list[snapshot.AdmittedWorkload],
        frs: set[resources.FlavorResource],
        usage: resources.FlavorResourceAmounts,
    ) -> tuple[bool, list[preemption.Target], list[snapshot.AdmittedWorkload]]:
        snap = self.snap
        order = _TargetOrdering(self, candidates)
        targets: list[preemption.Target] = []
        retry: list[snapshot.AdmittedWorkload] = []
        within_nominal = self._within_nominal(frs)
        first = self.strategies[0]
        for target_node in order:
            if target_node is self.node or within_nominal:
                victim = order.pop(target_node)
                reason = _IN_CQ if target_node is self.node else _RECLAIM
                if reason == _RECLAIM and self._protected(victim, reason):
                    continue  # it would be reclaimed unconditionally but for its protection
                snap.remove_admission(victim.admission)
                targets.append(preemption.Target(victim, reason))
                if self._fits(usage):
                    return True, targets, []
                continue
            preemptor_lca, target_lca = self._almost_lcas(target_node)
            preemptor_new = share(snap, preemptor_lca)
            target_old = share(snap, target_lca)
            if preemptor_new.zero_weight_borrows() and not target_old.zero_weight_borrows():
                retry.extend(order.drain(target_node))
                continue
            while order.has(target_node):
                victim = order.pop(target_node)
                with snap.what_if():
                    snap.remove_admission(victim.admission)
                    target_new = share(snap, target_lca)
                if _passes(first, preemptor_new, target_old, target_new):
                    if self._protected(victim, _FAIR):
                        continue
                    snap.remove_admission(victim.admission)
                    targets.append(preemption.Target(victim, _FAIR))
                    if self._fits(usage):
                        return True, targets, []
                    break  # shares changed: pick the target queue again
                retry.append(victim)
        return False, targets, retry

    def _second_strategy(
        self,
        retry: list[snapshot.AdmittedWorkload],
        usage: resources.FlavorResourceAmounts,
        targets: list[preemption.Target],
    ) -> tuple[bool, list[preemption.Target]]:
        snap = self.snap
        order = _TargetOrdering(self, retry)
        for target_node in order:
            preemptor_lca, target_lca = self._almost_lcas(target_node)
            passed = compare(share(snap, preemptor_lca), share(snap, target_lca)) < 0
            victim = order.pop(target_node)
            if passed and not self._protected(victim, _FAIR):
                snap.remove_admission(victim.admission)
                targets.append(preemption.Target(victim, _FAIR))
                if self._fits(usage):
                    return True, targets
            order.drop(target_node)
        return False, targets


def _passes(strategy: Strategy, preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    if strategy == Strategy.LESS_THAN_INITIAL_SHARE:
        return compare(preemptor_new, target_old) < 0
    return compare(preemptor_new, target_new) <= 0


def _almost_lca(cq: quota.QuotaNode, lca: quota.QuotaNode) -> quota.QuotaNode:
    current = cq
    for ancestor in cq.ancestors():
        if ancestor is lca:
            return current
        current = ancestor
    return current


class _TargetOrdering:
    """Target queues for fair preemption: from the root down, the highest share first."""

    def __init__(self, fp: FairPreemptor, candidates: list[snapshot.AdmittedWorkload]) -> None:
        self.fp = fp
        self.by_cq: dict[str, list[snapshot.AdmittedWorkload]] = {}
        for c in candidates:
            self.by_cq.setdefault(c.cluster_queue, []).append(c)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[str] = set()

    def has(self, node: quota.QuotaNode) -> bool:
        return bool(self.by_cq.get(node.name))

    def pop(self, node: quota.QuotaNode) -> snapshot.AdmittedWorkload:
        return self.by_cq[node.name].pop(0)

    def drain(self, node: quota.QuotaNode) -> list[snapshot.AdmittedWorkload]:
        out = self.by_cq.get(node.name, [])
        self.by_cq[node.name] = []
        return out

    def drop(self, node: quota.QuotaNode) -> None:
        self.pruned_cqs.add(node.name)

    def __iter__(self) -> Iterator[quota.QuotaNode]:
        preemptor = self.fp.node
        if preemptor.parent is None:
            while preemptor.name not in self.pruned_cqs and self.has(preemptor):
                yield preemptor
            return
        root = preemptor.root()
        while root.name not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: quota.QuotaNode) -> quota.QuotaNode | None:
        best_cq, best_cq_drs = self._best_child_queue(cohort)
        best_cohort, best_cohort_drs = self._best_child_cohort(cohort)
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if best_cohort is not None and compare(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        return best_cq

    def _best_child_queue(self, cohort: quota.QuotaNode) -> tuple[quota.QuotaNode | None, DRS]:
        """The child queue with the highest share and its share.

        Queues with no candidates left are pruned, and so are queues that do not borrow, except
        the preemptor's own. Equal shares go to the queue whose first candidate comes first in
        candidate order.
        """
        snap, fp = self.fp.snap, self.fp
        best_cq: quota.QuotaNode | None = None
        best_cq_drs = NEGATIVE
        for child in cohort.children:
            if child.is_cohort:
                continue
            if child.name in self.pruned_cqs:
                continue
            drs = share(snap, child)
            if (not drs.borrowing and child is not fp.node) or not self.has(child):
                self.pruned_cqs.add(child.name)
                continue
            c = compare(drs, best_cq_drs)
            if c == 0 and best_cq is not None:
                score = snap.candidate_score(fp.cq.name)
                new_key = ordering.candidate_key(self.by_cq[child.name][0], fp.cq.name, score)
                old_key = ordering.candidate_key(self.by_cq[best_cq.name][0], fp.cq.name, score)
                if new_key < old_key:
                    best_cq = child
            elif c > 0:
                best_cq, best_cq_drs = child, drs
        return best_cq, best_cq_drs

    def _best_child_cohort(self, cohort: quota.QuotaNode) -> tuple[quota.QuotaNode | None, DRS]:
        """The child cohort with the highest share (the last of equals), pruning non-borrowers.

        A cohort on the preemptor's path is kept even when it does not borrow.
        """
        snap, fp = self.fp.snap, self.fp
        best_cohort: quota.QuotaNode | None = None
        best_cohort_drs = NEGATIVE
        for child in cohort.children:
            if not child.is_cohort or child.name in self.pruned_cohorts:
                continue
            drs = share(snap, child)
            if not drs.borrowing and child not in fp.ancestors:
                self.pruned_cohorts.add(child.name)
            elif compare(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        return best_cohort, best_cohort_drs
