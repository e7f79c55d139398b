"""The victims a scheduling cycle has chosen so far, and the room there would be without them.

Before the cycle admits an entry or issues its preemptions, Kueue checks that the entry still
fits with every workload chosen for preemption so far in this cycle, and the entry's own
targets, taken out of the snapshot (``fits`` in ``pkg/scheduler/scheduler.go``, v0.19). Taking
them all out again for each entry is quadratic where every head preempts (at 1,000 ClusterQueues,
the slowest cycle of Kueue's large-scale shape). ``ChosenVictims`` sums their usage per quota node
over its subtree as they are chosen, and answers in one of two ways:

- in a tree that passes all usage up to the root (``quota.QuotaNode.passes_usage_up``), a
  node's usage is its own plus its children's, so with the victims gone each node on the
  entry's path counts exactly the victims below it less, and only those nodes decide what the
  entry's queue could use;
- in a tree where a lending limit keeps capacity back, the sums of its ClusterQueues are taken
  out of the snapshot, once per queue: what a node passes to its parent depends only on its
  total (``quota.QuotaNode.remove_usage``), so that is exact in every tree.

Called by ``berth.core.cycle``; reads and tentatively changes the ``snapshot``, rolling back.
"""

from __future__ import annotations

from collections.abc import Iterable

from berth.api import names
from berth.core import quota, resources, snapshot


class ChosenVictims:
    """The usage of the victims a cycle chose so far, summed per quota node."""

    def __init__(self, snap: snapshot.Snapshot) -> None:
        self.snap = snap
        self._below: dict[quota.QuotaNode, resources.FlavorResourceAmounts] = {}
        """Per quota node: the usage of the victims in its subtree (for a ClusterQueue, its own
        victims; a root is here once its tree lost any)."""
        self._passes_up: dict[quota.QuotaNode, bool] = {}
        """Per root: whether its tree passes all usage up (read once per cycle)."""

    def add(self, victim: snapshot.AdmittedWorkload) -> None:
        """Count a victim just chosen (once: the cycle never chooses one twice)."""
        adm = victim.admission
        node = self.snap.cq_nodes.get(adm.cluster_queue)
        if node is None:
            return  # its queue is gone from the tree: it makes room nowhere
        for n in (node, *node.ancestors()):
            _add(self._below.setdefault(n, {}), adm.usage)

    def room(
        self,
        cq: names.ClusterQueueName,
        own: Iterable[snapshot.AdmittedWorkload],
        frs: Iterable[resources.FlavorResource],
    ) -> dict[resources.FlavorResource, int]:
        """What ``cq`` could use of each of ``frs`` with the victims so far and ``own`` gone.

        ``own`` are the entry's targets, none of them chosen yet.
        """
        snap = self.snap
        node = snap.node(cq)
        root = node.root()
        own = list(own)
        if not own and root not in self._below:
            return {fr: node.available(fr) for fr in frs}  # nothing to take out
        passes_up = self._passes_up.get(root)
        if passes_up is None:
            passes_up = self._passes_up[root] = root.passes_usage_up()
        wanted = list(frs)
        with snap.what_if():
            if passes_up:
                self._lower_path(node, own, wanted)
            else:
                for n, summed in self._below.items():
                    if not n.is_cohort and n.root() is root:
                        snap.remove_usage(names.ClusterQueueName(n.name), summed)
                for victim in own:
                    snap.remove_usage(victim.admission.cluster_queue, victim.admission.usage)
            return {fr: node.available(fr) for fr in wanted}

    def _lower_path(
        self,
        node: quota.QuotaNode,
        own: Iterable[snapshot.AdmittedWorkload],
        frs: list[resources.FlavorResource],
    ) -> None:
        """Lower ``node`` and each ancestor by the victims below it, on ``frs`` only."""
        drops = {n: dict(self._below.get(n, {})) for n in (node, *node.ancestors())}
        for victim in own:
            vnode = self.snap.cq_nodes.get(victim.admission.cluster_queue)
            for n in () if vnode is None else (vnode, *vnode.ancestors()):
                drop = drops.get(n)
                if drop is not None:
                    _add(drop, victim.admission.usage)
        for n, drop in drops.items():
            for fr in frs:
                amount = drop.get(fr, 0)
                if amount:
                    n.shift_usage(fr, -amount)


def _add(into: resources.FlavorResourceAmounts, usage: resources.FlavorResourceAmounts) -> None:
    for fr, amount in usage.items():
        into[fr] = into.get(fr, 0) + amount
