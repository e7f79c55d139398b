"""The quota tree: ClusterQueues and Cohorts as nodes with quota, usage and limits.

This module owns Kueue's resource-node arithmetic (``pkg/cache/scheduler/resource_node.go``):

- ``subtree_quota``: a ClusterQueue's nominal quota; a Cohort's own quota plus what each child
  lends it (the child's subtree quota minus its ``local_quota``).
- ``local_quota``: what a lending limit hides from the parent (``subtree_quota - lendingLimit``).
- ``usage``: a ClusterQueue's admitted usage; a Cohort's is the sum of its children's usage
  beyond their local quota, so usage bubbles up only past what a node keeps for itself.
- ``available``: what the node could still use now, honouring borrowing limits at every level;
  ``potential_available``: the same assuming no usage at all (the largest admissible request).

Nodes are mutable and record every usage change in a shared journal so that the scheduling
cycle can try "what if" changes and roll them back exactly (``Journal.checkpoint/rollback``).
Built by ``berth.core.snapshot``; read by flavor assignment, preemption and fair sharing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from berth.api import names
from berth.core import resources


@dataclasses.dataclass(frozen=True, slots=True)
class Quota:
    """Declared quota of one flavor-resource: nominal, and optional borrowing/lending limits."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


class Journal:
    """An undo log of usage changes shared by all nodes of a tree."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        # (table, key, old value): quota nodes' usage, and placements' usage per leaf.
        self.entries: list[tuple[dict[Any, int], Any, int]] = []

    def checkpoint(self) -> int:
        """Return a mark to roll back to."""
        return len(self.entries)

    def rollback(self, mark: int) -> None:
        """Undo every usage change made since ``mark``, newest first."""
        entries = self.entries
        while len(entries) > mark:
            table, key, old = entries.pop()
            if old:
                table[key] = old
            else:
                table.pop(key, None)

    def commit(self) -> None:
        """Forget the undo log: changes so far become permanent."""
        self.entries.clear()


class QuotaNode:
    """A ClusterQueue or a Cohort in the quota tree."""

    __slots__ = (
        "_height",
        "children",
        "is_cohort",
        "journal",
        "name",
        "parent",
        "quotas",
        "subtree_quota",
        "usage",
    )

    def __init__(
        self,
        name: str,
        *,
        is_cohort: bool,
        quotas: dict[resources.FlavorResource, Quota],
        journal: Journal,
    ) -> None:
        self.name = name
        self.is_cohort = is_cohort
        self.quotas = quotas
        self.subtree_quota: dict[resources.FlavorResource, int] = {}
        self.usage: dict[resources.FlavorResource, int] = {}
        self.parent: QuotaNode | None = None
        self.children: list[QuotaNode] = []
        self.journal = journal
        self._height: int | None = None

    def __repr__(self) -> str:
        kind = "Cohort" if self.is_cohort else "ClusterQueue"
        return f"<{kind} {self.name}>"

    # Quota arithmetic -------------------------------------------------------------------------

    def local_quota(self, fr: resources.FlavorResource) -> int:
        """Capacity this node keeps from its parent because of a lending limit."""
        quota = self.quotas.get(fr)
        if quota is None or quota.lending_limit is None:
            return 0
        return max(0, self.subtree_quota.get(fr, 0) - quota.lending_limit)

    def local_available(self, fr: resources.FlavorResource) -> int:
        """Guaranteed local capacity not yet used."""
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def raw_available(self, fr: resources.FlavorResource) -> int:
        """Capacity left for this node, possibly negative when over-admitted."""
        parent = self.parent
        if parent is None:
            return self.subtree_quota.get(fr, 0) - self.usage.get(fr, 0)
        parent_available = parent.raw_available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            local = self.local_quota(fr)
            stored_in_parent = self.subtree_quota.get(fr, 0) - local
            used_in_parent = max(0, self.usage.get(fr, 0) - local)
            parent_available = min(
                stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available
            )
        return self.local_available(fr) + parent_available

    def available(self, fr: resources.FlavorResource) -> int:
        """Capacity this node could use now (never negative)."""
        return max(0, self.raw_available(fr))

    def potential_available(self, fr: resources.FlavorResource) -> int:
        """Capacity this node could use if nothing were in use (the largest admissible request)."""
        parent = self.parent
        if parent is None:
            return self.subtree_quota.get(fr, 0)
        avail = self.local_quota(fr) + parent.potential_available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            avail = min(avail, self.subtree_quota.get(fr, 0) + quota.borrowing_limit)
        return avail

    def nominal(self, fr: resources.FlavorResource) -> int:
        """The node's declared nominal quota for ``fr`` (0 if it declares none)."""
        quota = self.quotas.get(fr)
        return 0 if quota is None else quota.nominal

    def borrowing_with(self, fr: resources.FlavorResource, amount: int) -> bool:
        """Tell whether usage plus ``amount`` would exceed this node's subtree quota."""
        return self.subtree_quota.get(fr, 0) < self.usage.get(fr, 0) + amount

    def borrowing(self, fr: resources.FlavorResource) -> bool:
        """Tell whether usage already exceeds this node's subtree quota."""
        return self.borrowing_with(fr, 0)

    def within_nominal(self, frs: set[resources.FlavorResource]) -> bool:
        """Tell whether usage is at most the subtree quota on every one of ``frs``."""
        usage, subtree = self.usage, self.subtree_quota
        for fr in frs:  # noqa: SIM110 - a plain loop: runs for every sibling of every preemptor
            if subtree.get(fr, 0) < usage.get(fr, 0):
                return False
        return True

    def passes_usage_up(self) -> bool:
        """Tell whether no node below this one keeps capacity from its parent.

        Then a node's usage is its own plus all of its children's, so taking usage out of a
        ClusterQueue lowers every ancestor's usage by the same amount (``core.victims`` relies
        on it). A lending limit below the subtree quota breaks that.
        """
        for child in self.children:
            if any(child.local_quota(fr) for fr in child.quotas) or not child.passes_usage_up():
                return False
        return True

    # Usage ------------------------------------------------------------------------------------

    def _set_usage(self, fr: resources.FlavorResource, value: int) -> None:
        usage = self.usage
        self.journal.entries.append((usage, fr, usage.get(fr, 0)))
        if value:
            usage[fr] = value
        else:
            usage.pop(fr, None)

    def shift_usage(self, fr: resources.FlavorResource, delta: int) -> None:
        """Change this node's own usage by ``delta`` and nobody else's (journaled).

        For a what-if view whose caller knows how every node on a path changes together.
        """
        self._set_usage(fr, self.usage.get(fr, 0) + delta)

    def add_usage(self, fr: resources.FlavorResource, amount: int) -> None:
        """Add usage here and bubble the part beyond local quota up to the parent."""
        local_available = self.local_available(fr)
        self._set_usage(fr, self.usage.get(fr, 0) + amount)
        if self.parent is not None and amount > local_available:
            self.parent.add_usage(fr, amount - local_available)

    def remove_usage(self, fr: resources.FlavorResource, amount: int) -> None:
        """Remove usage here and the part of it that was stored in the parent."""
        stored_in_parent = self.usage.get(fr, 0) - self.local_quota(fr)
        self._set_usage(fr, self.usage.get(fr, 0) - amount)
        if stored_in_parent <= 0 or self.parent is None:
            return
        self.parent.remove_usage(fr, min(amount, stored_in_parent))

    # Navigation -------------------------------------------------------------------------------

    def ancestors(self) -> Iterator[QuotaNode]:
        """Yield the parent, its parent, ... up to the root."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        """Return the root of this node's tree (itself if it has no parent)."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def height(self) -> int:
        """Distance to the furthest leaf (a cohort with only ClusterQueues has height 1).

        Read for every head that borrows, so it is kept once known: a tree is linked once when
        the snapshot is built (``state.cache``) and never changes shape afterwards.
        """
        if self._height is None:
            best = 0
            if self.is_cohort:
                best = min(len(self.children), 1)
                for child in self.children:
                    if child.is_cohort:
                        best = max(best, child.height() + 1)
            self._height = best
        return self._height

    def subtree_cluster_queues(self) -> Iterator[QuotaNode]:
        """Yield every ClusterQueue in this node's subtree, depth first in child order."""
        if not self.is_cohort:
            yield self
            return
        for child in self.children:
            yield from child.subtree_cluster_queues()


def build_subtree_quota(node: QuotaNode) -> None:
    """Compute ``subtree_quota`` bottom-up for ``node`` and everything below it."""
    subtree: dict[resources.FlavorResource, int] = {fr: q.nominal for fr, q in node.quotas.items()}
    for child in node.children:
        build_subtree_quota(child)
        for fr, child_quota in child.subtree_quota.items():
            subtree[fr] = subtree.get(fr, 0) + child_quota - child.local_quota(fr)
    node.subtree_quota = subtree


def fits_in_quota(
    node: QuotaNode, requests: resources.FlavorResourceAmounts
) -> tuple[bool, resources.FlavorResourceAmounts]:
    """Tell whether ``requests`` fit in the node's subtree quota; also return what exceeds it.

    The remainder is what the node cannot hold in its local quota, to be checked at the parent.
    """
    fits = True
    remaining: resources.FlavorResourceAmounts = {}
    for fr, amount in requests.items():
        if node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + amount:
            fits = False
        remaining[fr] = max(0, amount - node.local_available(fr))
    return fits, remaining


def lowest_fitting_subtree_height(
    cq: QuotaNode, fr: resources.FlavorResource, amount: int
) -> tuple[int, bool]:
    """Return the borrowing level of ``amount`` more of ``fr`` for ``cq``.

    The level is 0 when it fits in the ClusterQueue's own quota, else the height of the lowest
    cohort whose subtree quota holds it (the whole tree's height if none does). The flag tells
    whether that subtree is smaller than the whole tree, i.e. reclaiming inside it is possible.
    """
    if cq.parent is None or not cq.borrowing_with(fr, amount):
        return 0, cq.parent is not None
    remaining = amount - cq.local_available(fr)
    for node in cq.ancestors():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= node.local_available(fr)
    return cq.root().height(), False


def cohort_names_on_path(cq: QuotaNode) -> list[str]:
    """Return ``/root/.../cq`` path components for messages."""
    parts = [n.name for n in cq.ancestors()]
    parts.reverse()
    parts.append(cq.name)
    return parts


def find_cycles(parents: dict[names.CohortName, names.CohortName | None]) -> set[names.CohortName]:
    """Return every cohort that is on, or hangs below, a cycle of parent references."""
    bad: set[names.CohortName] = set()
    for start in parents:
        seen: list[names.CohortName] = []
        node: names.CohortName | None = start
        while node is not None and node not in seen:
            if node in bad:
                break
            seen.append(node)
            node = parents.get(node)
        if node is not None and (node in seen or node in bad):
            bad.update(seen)
    return bad
