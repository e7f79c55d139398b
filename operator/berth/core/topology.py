"""Topology domains: the tree of a flavor's nodes, a pod set's request, and what is placed.

Mirrors Kueue's Topology Aware Scheduling data (``pkg/cache/scheduler/tas_topology_tree.go``,
KEP 2724):

- A ``Tree`` holds the domains of one ResourceFlavor's nodes, level by level (block, rack,
  host, ...), built from the nodes that match the flavor's ``nodeLabels``, carry every level's
  label, are Ready and schedulable. A leaf's free room is its nodes' allocatable minus what pods
  Berth did not place there (DaemonSets, other schedulers) already request.
- ``Placement`` is a pod set's request: all pods inside one domain of a level (``Required``),
  as few domains as possible starting at a level and going up when it does not fit
  (``Preferred``), or anywhere (``Unconstrained``); optionally in slices of ``slice_size`` pods,
  each slice inside one domain of ``slice_level``.
- An ``Assignment`` is the answer (``core.placement.find``) at the lowest level (only the
  hostname when that is the lowest level), in Kueue's ``topologyAssignment`` shape: ``levels``
  and ``domains[{values, count}]``.

Admitted placements count against leaves as ``Usage`` (what a placement counts is ``Placed``);
the snapshot keeps them in a journal so the cycle's what-ifs roll back exactly. Pure; called by
``core.placement``, ``core.flavors``, ``core.preemption``, ``berth.state.cache`` (building
trees) and ``jobs.framework.pod_placement`` (pods onto their domains).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping

from berth.api import names, pod, quantity
from berth.api import node as api_node
from berth.api import topology as api_topology
from berth.api import workload as api_workload
from berth.core import quota, resources

HOSTNAME = api_topology.HOSTNAME


class Placement(enum.StrEnum):
    """How strictly a pod set's pods must stay together."""

    REQUIRED = "Required"
    PREFERRED = "Preferred"
    UNCONSTRAINED = "Unconstrained"


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """A pod set's placement request."""

    placement: Placement
    level: str | None = None
    """The level (a node label) its pods should share; None for Unconstrained (any host)."""
    slice_level: str | None = None
    """With slices: the level each slice of ``slice_size`` pods must fit inside."""
    slice_size: int = 1
    implied: bool = False
    """Not asked for: the ClusterQueue has only topology flavors, so every pod set is placed
    (Kueue's implied TAS, placed as Unconstrained)."""

    @property
    def unconstrained(self) -> bool:
        """Tell whether it is placed by LeastFreeCapacity (any domains)."""
        return self.placement == Placement.UNCONSTRAINED or self.implied

    def levels_named(self) -> tuple[str, ...]:
        """The levels this request names (each must exist in the flavor's topology)."""
        return tuple(level for level in (self.level, self.slice_level) if level is not None)


def request_of(api: api_topology.PodSetTopologyRequest) -> Request:
    """The core's view of a pod set's ``topologyRequest`` (validated: one mode at most)."""
    slice_level = api.pod_set_slice_required_topology
    slice_size = api.pod_set_slice_size or 1
    if slice_level is None:
        slice_size = 1
    if api.required is not None:
        return Request(Placement.REQUIRED, api.required, slice_level, slice_size)
    if api.preferred is not None:
        return Request(Placement.PREFERRED, api.preferred, slice_level, slice_size)
    # Unconstrained, or slices alone: the pod set may spread, each slice stays in one domain.
    return Request(Placement.UNCONSTRAINED, None, slice_level, slice_size)


@dataclasses.dataclass(frozen=True, slots=True)
class DomainCount:
    """Pods placed in one domain of an assignment's lowest level."""

    values: tuple[str, ...]
    count: int


@dataclasses.dataclass(frozen=True, slots=True)
class Assignment:
    """Where a pod set's pods go: counts per domain of ``levels`` (Kueue's shape)."""

    levels: tuple[str, ...]
    domains: tuple[DomainCount, ...]

    @property
    def count(self) -> int:
        """The pods placed."""
        return sum(d.count for d in self.domains)

    def node_selector(self, domain: DomainCount) -> dict[str, str]:
        """The node labels that pin a pod to ``domain`` (only the hostname when it is a level)."""
        if self.levels and self.levels[-1] == HOSTNAME:
            return {HOSTNAME: domain.values[-1]}
        return dict(zip(self.levels, domain.values, strict=True))


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """What placement reads of a Node."""

    name: str
    labels: Mapping[str, str]
    allocatable: resources.Requests
    taints: tuple[pod.Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class PodConstraints:
    """What restricts a pod set's pods to some hosts (read only when the hostname is a level)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity_terms: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] = ()
    tolerations: tuple[pod.Toleration, ...] = ()


class Domain:
    """A domain of the tree: its values from the top level down, its children, its index."""

    __slots__ = ("children", "index", "leaf", "node", "values")

    def __init__(self, values: tuple[str, ...], index: int) -> None:
        self.values = values
        self.index = index
        self.children: list[Domain] = []
        self.leaf = -1
        """Its position among the leaves, for leaves; -1 above them."""
        self.node: Node | None = None
        """The node, for leaves of a topology whose lowest level is the hostname."""


class Tree:
    """The domains of one flavor's nodes and their free room (allocatable minus others' pods)."""

    def __init__(
        self,
        name: str,
        levels: tuple[str, ...],
        nodes: Iterable[Node],
        other_usage: Mapping[str, resources.Requests] | None = None,
    ) -> None:
        self.name = name
        self.levels = levels
        self.by_host = bool(levels) and levels[-1] == HOSTNAME
        self.per_level: list[dict[tuple[str, ...], Domain]] = [{} for _ in levels]
        self.leaves: list[Domain] = []
        self.free: list[resources.Requests] = []
        self.leaf_of_node: dict[str, int] = {}
        self.leaf_of_host: dict[str, int] = {}
        self._count = 0
        other = other_usage or {}
        for node in sorted(nodes, key=lambda n: n.name):
            leaf = self._add(node)
            self.leaf_of_node[node.name] = leaf.leaf
            room = self.free[leaf.leaf]
            for res, amount in node.allocatable.items():
                room[res] = room.get(res, 0) + amount
            for res, amount in other.get(node.name, {}).items():
                room[res] = room.get(res, 0) - amount
        self.roots = sorted(self.per_level[0].values(), key=lambda d: d.values) if levels else []
        self.domain_count = self._count

    def _domain(self, values: tuple[str, ...]) -> Domain:
        found = self.per_level[len(values) - 1].get(values)
        if found is None:
            found = Domain(values, self._count)
            self._count += 1
            self.per_level[len(values) - 1][values] = found
            if len(values) > 1:
                self._domain(values[:-1]).children.append(found)
        return found

    def _add(self, node: Node) -> Domain:
        leaf = self._domain(tuple(node.labels[level] for level in self.levels))
        if leaf.leaf < 0:
            leaf.leaf = len(self.leaves)
            self.leaves.append(leaf)
            self.free.append({})
            if self.by_host:
                leaf.node = node
                self.leaf_of_host[leaf.values[-1]] = leaf.leaf
        return leaf

    def leaf_index(self, values: tuple[str, ...]) -> int | None:
        """The leaf an assignment's domain names (hostname alone, or values of every level)."""
        if self.by_host and len(values) == 1:
            return self.leaf_of_host.get(values[0])
        leaf = self.per_level[-1].get(values) if self.levels else None
        return None if leaf is None else leaf.leaf


def node_of(node: api_node.Node) -> Node:
    """The core's view of a Kubernetes Node (its pod limit defaults to the kubelet's)."""
    allocatable = dict(node.status.allocatable)
    allocatable.setdefault(quantity.PODS, api_node.DEFAULT_PODS)
    return Node(
        name=node.metadata.name,
        labels=dict(node.metadata.labels),
        allocatable=allocatable,
        taints=tuple(node.spec.taints),
        ready=node.ready,
        unschedulable=node.spec.unschedulable,
    )


def node_matches_flavor(
    node: Node, flavor_labels: Mapping[str, str], levels: Iterable[str]
) -> bool:
    """Tell whether a node belongs to a topology flavor (Kueue's ``NodeMatchesFlavor``).

    It must carry the flavor's node labels and every level's label, and be Ready and schedulable.
    """
    labels = node.labels
    if any(labels.get(k) != v for k, v in flavor_labels.items()):
        return False
    if any(level not in labels for level in levels):
        return False
    return node.ready and not node.unschedulable


class Usage:
    """Placed pods counted per leaf and resource, with every change written to an undo journal.

    The journal is the snapshot's (``berth.core.quota.Journal``), so a what-if that removes
    victims or admits a head rolls placements back with quota.
    """

    __slots__ = ("amounts", "journal")

    def __init__(self, journal: quota.Journal) -> None:
        self.amounts: dict[tuple[int, str], int] = {}
        self.journal = journal

    def add(self, leaf: int, requests: Mapping[str, int], sign: int) -> None:
        """Count (``sign`` 1) or release (-1) ``requests`` on a leaf."""
        amounts, entries = self.amounts, self.journal.entries
        for res, amount in requests.items():
            if not amount:
                continue
            key = (leaf, res)
            old = amounts.get(key, 0)
            entries.append((amounts, key, old))
            new = old + sign * amount
            if new:
                amounts[key] = new
            else:
                amounts.pop(key, None)

    def of(self, leaf: int, res: str) -> int:
        """What placed pods use of ``res`` on a leaf."""
        return self.amounts.get((leaf, res), 0)


@dataclasses.dataclass(frozen=True, slots=True)
class Placed:
    """A pod set's placement in one flavor, as counted: per leaf, the pods' total requests."""

    flavor: names.FlavorName
    leaves: tuple[tuple[tuple[str, ...], tuple[tuple[names.ResourceName, int], ...]], ...]
    """(domain values as in the assignment, sorted (resource, amount) pairs)."""


def placed(flavor: names.FlavorName, assignment: Assignment, per_pod: resources.Requests) -> Placed:
    """What an assignment counts against its flavor's leaves (each pod also takes one ``pods``)."""
    one = dict(per_pod)
    one[quantity.PODS] = 1
    return Placed(
        flavor,
        tuple(
            (d.values, tuple(sorted((res, amount * d.count) for res, amount in one.items())))
            for d in assignment.domains
        ),
    )


def from_status(api: api_workload.TopologyAssignment | None) -> Assignment | None:
    """The core's view of a Workload's ``topologyAssignment``."""
    if api is None:
        return None
    return Assignment(
        tuple(api.levels), tuple(DomainCount(tuple(d.values), d.count) for d in api.domains)
    )
