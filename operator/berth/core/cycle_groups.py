"""Which ClusterQueues' heads may be decided in cycles of their own: groups that share nothing.

A cycle decides each head against its own quota tree only: its quota and what it may borrow,
its victims (a preemptor's candidates come from its own tree), fair sharing (shares compare the
queues under one root) and Backfill plans (one per root). So the heads of two trees that share
nothing else get the same decisions in two cycles, one per tree, as in one cycle over both;
only the order of the decisions across trees differs, and nothing reads that order. Splitting
bounds what one cycle costs by the size of a tree rather than of the cluster, so a large cohort
cannot hold up the admissions of every other (issue: one cycle over 1,000 ClusterQueues cost
about four times the 50 ms a cycle may take).

Two things do reach across trees, and join them into one group:

1. **Topology-aware flavors.** Every queue whose flavor is placed on a Topology takes from the
   same nodes, and the order of a cycle decides who gets them; the trees of all queues placed on
   one Topology form one group.
2. **waitForPodsReady with blockAdmission.** One admission anywhere holds back every other until
   its pods are ready, and the cycle's order across all trees decides which goes first: then
   there is one group.

Pure; called by ``berth.state.lifecycle``, which runs one cycle per group.
"""

from __future__ import annotations

from collections.abc import Iterable

from berth.api import names
from berth.core import snapshot


class Partition:
    """Each ClusterQueue's group in one snapshot, worked out once for all its rounds.

    A snapshot's queues, cohorts and flavors never change (the cache builds a new snapshot
    when they do), so the driver keeps one ``Partition`` per snapshot.
    """

    def __init__(self, snap: snapshot.Snapshot) -> None:
        self.snap = snap
        joined = _Joined()
        known = sorted(snap.cluster_queues.keys() | snap.cq_nodes.keys())
        for cq in known:
            # Keys are prefixed so that a tree's root and a Topology of the same name stay apart.
            node = snap.cq_nodes.get(cq)
            tree = f"tree/{cq if node is None else node.root().name}"
            joined.join(f"queue/{cq}", tree)
            for topology in _topologies(snap, cq):
                joined.join(tree, f"topology/{topology}")
        self._group_of = {cq: joined.find(f"queue/{cq}") for cq in known}

    def split(
        self, cluster_queues: Iterable[names.ClusterQueueName], *, one_group: bool = False
    ) -> list[tuple[names.ClusterQueueName, ...]]:
        """Split ``cluster_queues`` into groups whose cycles cannot change each other's decisions.

        Each group lists its queues in name order; the groups come in the order of their first
        queue's name. A queue the snapshot does not know is a group of its own; ``one_group``
        (blockAdmission) keeps them all together.
        """
        queues = sorted(set(cluster_queues))
        if one_group or len(queues) <= 1:
            return [tuple(queues)] if queues else []
        members: dict[str, list[names.ClusterQueueName]] = {}
        for cq in queues:
            members.setdefault(self._group_of.get(cq, f"queue/{cq}"), []).append(cq)
        return sorted((tuple(m) for m in members.values()), key=lambda m: m[0])


def _topologies(snap: snapshot.Snapshot, cq: names.ClusterQueueName) -> set[str]:
    """The Topologies the flavors of ``cq`` are placed on."""
    info = snap.cluster_queues.get(cq)
    if info is None:
        return set()
    out = set()
    for group in info.groups:
        for flavor in group.flavors:
            placed = snap.flavors.get(flavor)
            if placed is not None and placed.topology_name is not None:
                out.add(placed.topology_name)
    return out


class _Joined:
    """Keys joined into sets (union-find); each set is named by its smallest key."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        """The name of the set ``key`` is in."""
        while (up := self._parent.setdefault(key, key)) != key:
            self._parent[key] = self._parent.setdefault(up, up)  # halve the path as it is walked
            key = up
        return key

    def join(self, a: str, b: str) -> None:
        """Put ``a`` and ``b`` in one set."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._parent[max(ra, rb)] = min(ra, rb)
