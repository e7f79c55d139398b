"""Topology-aware placement: which topology domains a pod set's pods go to, counted at admission.

Mirrors Kueue's Topology Aware Scheduling (``pkg/cache/scheduler/tas_flavor_snapshot.go``
``findTopologyAssignment``, ``pkg/cache/scheduler/tas_topology_tree.go``, KEP 2724):

- A ``Tree`` holds the domains of one ResourceFlavor's nodes, level by level (block, rack,
  host, ...), built from the nodes that match the flavor's ``nodeLabels``, carry every level's
  label, are Ready and schedulable. A leaf's free room is its nodes' allocatable minus what pods
  Berth did not place there (DaemonSets, other schedulers) already request.
- ``Placement`` is a pod set's request: all pods inside one domain of a level (``Required``),
  as few domains as possible starting at a level and going up when it does not fit
  (``Preferred``), or anywhere (``Unconstrained``); optionally in slices of ``slice_size`` pods,
  each slice inside one domain of ``slice_level``.
- ``find`` answers in two phases, as Kueue's: (1) how many pods (and slices) fit in every
  domain, bottom-up; (2) pick the domains at the requested level and descend level by level,
  minimising the number of domains used. Profiles (KEP 2724; the Configuration's
  ``topologyProfile``): ``Mixed``, Kueue's default since 0.15 (``TASProfileMixed``): Required
  and Preferred use **BestFit** (largest domains first, the last one the tightest that still
  fits), Unconstrained uses **LeastFreeCapacity** (fullest domains first), which packs small
  pods into already busy nodes; ``BestFit`` for every pod set; ``MostFreeCapacity`` (largest
  first, no tight fit: spreading, to compare against).
- The result is an ``Assignment`` at the lowest level (only the hostname when that is the lowest
  level), in Kueue's ``topologyAssignment`` shape: ``levels`` and ``domains[{values, count}]``.

Admitted placements count against leaves as ``Usage``; the snapshot keeps them in a journal so
the cycle's what-ifs roll back exactly. Pure; called by ``berth.core.flavors`` (placement of a
pod set in a flavor), ``berth.core.preemption`` (does it fit with these victims gone) and
``berth.state.cache`` (building trees).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping

from berth.api import configuration, names, pod, quantity
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


class _Domain:
    """A domain of the tree: its values from the top level down, its children, its index."""

    __slots__ = ("children", "index", "leaf", "node", "values")

    def __init__(self, values: tuple[str, ...], index: int) -> None:
        self.values = values
        self.index = index
        self.children: list[_Domain] = []
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
        self.per_level: list[dict[tuple[str, ...], _Domain]] = [{} for _ in levels]
        self.leaves: list[_Domain] = []
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

    def _domain(self, values: tuple[str, ...]) -> _Domain:
        found = self.per_level[len(values) - 1].get(values)
        if found is None:
            found = _Domain(values, self._count)
            self._count += 1
            self.per_level[len(values) - 1][values] = found
            if len(values) > 1:
                self._domain(values[:-1]).children.append(found)
        return found

    def _add(self, node: Node) -> _Domain:
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


# Pods onto their domains -------------------------------------------------------------------


def pin(
    assignment: Assignment,
    pinned: Iterable[Mapping[str, str]],
    waiting: Iterable[str],
) -> dict[str, dict[str, str]]:
    """The node selector of each waiting pod that has a domain with room left (Kueue's ungater).

    ``pinned``: the node selectors of the pod set's pods already pinned and still active; each
    takes one place in the domain it names. Waiting pods, in the order given (their completion
    index, then name), fill the domains in the assignment's order, so neighbouring ranks share a
    domain. Pods beyond the assignment's counts stay waiting (a replacement waits for a place).
    """
    left = {d.values: d.count for d in assignment.domains}
    selectors = {d.values: assignment.node_selector(d) for d in assignment.domains}
    for selector in pinned:
        for values, wanted in selectors.items():
            if all(selector.get(k) == v for k, v in wanted.items()):
                left[values] -= 1
                break
    out: dict[str, dict[str, str]] = {}
    queue = iter(waiting)
    for d in assignment.domains:
        for _ in range(max(0, left[d.values])):
            name = next(queue, None)
            if name is None:
                return out
            out[name] = dict(selectors[d.values])
    return out


def gate_patch(pod: Mapping[str, object]) -> list[dict[str, object]]:
    """The JSON patch that holds a new placed pod at Berth's topology gate (none if it has it)."""
    spec = pod.get("spec")
    gates = spec.get("schedulingGates") if isinstance(spec, dict) else None
    gate = {"name": api_topology.GATE}
    if not isinstance(gates, list) or not gates:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [gate]}]
    if any(isinstance(g, dict) and g.get("name") == api_topology.GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": gate}]


def is_gated(pod: Mapping[str, object]) -> bool:
    """Tell whether a pod waits at Berth's topology gate."""
    spec = pod.get("spec")
    gates = spec.get("schedulingGates") if isinstance(spec, dict) else None
    return isinstance(gates, list) and any(
        isinstance(g, dict) and g.get("name") == api_topology.GATE for g in gates
    )


def from_status(api: api_workload.TopologyAssignment | None) -> Assignment | None:
    """The core's view of a Workload's ``topologyAssignment``."""
    if api is None:
        return None
    return Assignment(
        tuple(api.levels), tuple(DomainCount(tuple(d.values), d.count) for d in api.domains)
    )


# Finding an assignment ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Failure:
    """Why no placement was found, in Kueue's words plus the level and the closest domain."""

    message: str


class _State:
    """Per-call counts per domain: pods that fit, and slices that fit (at the slice level)."""

    __slots__ = ("pods", "slices")

    def __init__(self, size: int) -> None:
        self.pods = [0] * size
        self.slices = [0] * size


def count_in(per_pod: resources.Requests, room: Callable[[names.ResourceName], int]) -> int:
    """How many pods requesting ``per_pod`` fit in ``room`` (Kueue's ``CountIn``; never < 0)."""
    fit: int | None = None
    for res, amount in per_pod.items():
        if amount <= 0:
            continue
        n = max(0, room(res) // amount)
        if fit is None or n < fit:
            fit = n
    return fit if fit is not None else 1 << 31


def _feasible(
    node: Node | None, constraints: PodConstraints, flavor_tolerations: tuple[pod.Toleration, ...]
) -> bool:
    """Kubernetes' node filters a placement respects: node selector, affinity, taints."""
    if node is None:
        return True
    labels = node.labels
    if any(labels.get(k) != v for k, v in constraints.node_selector):
        return False
    if constraints.affinity_terms and not any(
        all(expression_matches(op, labels.get(key), values) for key, op, values in term)
        for term in constraints.affinity_terms
    ):
        return False
    tolerations = constraints.tolerations + flavor_tolerations
    for taint in node.taints:
        if taint.effect == pod.TaintEffect.PREFER_NO_SCHEDULE:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return False
    return True


def expression_matches(op: str, value: str | None, values: tuple[str, ...]) -> bool:
    """Evaluate one node-affinity expression against a label value (Kubernetes' operators)."""
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


class _Finder:
    """One call of ``find``: the tree, the counts, the request."""

    def __init__(
        self, tree: Tree, request: Request, count: int, profile: configuration.TopologyProfile
    ) -> None:
        self.tree = tree
        self.request = request
        self.count = count
        self.state = _State(tree.domain_count)
        self.unconstrained = request.unconstrained
        mixed = profile == configuration.TopologyProfile.MIXED
        # Least free first (packing) only for unconstrained pod sets under Kueue's default
        # profile; the tight fit of the last domain under BestFit (and Mixed's other pod sets).
        self.least_free = mixed and self.unconstrained
        self.bestfit = profile == configuration.TopologyProfile.BEST_FIT or (
            mixed and not self.unconstrained
        )
        self.slice_size = request.slice_size if request.slice_level is not None else 1

    # Phase 1 ------------------------------------------------------------------------------

    def fill(self, leaf_pods: list[int], slice_level: int) -> None:
        for root in self.tree.roots:
            self._fill(root, 0, slice_level, leaf_pods)

    def _fill(self, domain: _Domain, level: int, slice_level: int, leaf_pods: list[int]) -> None:
        st, i = self.state, domain.index
        if not domain.children:
            st.pods[i] = leaf_pods[domain.leaf]
            st.slices[i] = st.pods[i] // self.slice_size if level == slice_level else 0
            return
        pods = slices = 0
        for child in domain.children:
            self._fill(child, level + 1, slice_level, leaf_pods)
            pods += st.pods[child.index]
            slices += st.slices[child.index]
        st.pods[i] = pods
        st.slices[i] = pods // self.slice_size if level == slice_level else slices

    # Phase 2 ------------------------------------------------------------------------------

    def sorted(self, domains: Iterable[_Domain]) -> list[_Domain]:
        """BestFit: most slices first; LeastFreeCapacity: fewest first; then fewer pods, values.

        Values compare level by level from the top, which orders sibling hosts by hostname as
        Kueue's comparator does.
        """
        st = self.state
        sign = 1 if self.least_free else -1
        return sorted(
            domains, key=lambda d: (sign * st.slices[d.index], st.pods[d.index], d.values)
        )

    def best_fit(self, domains: list[_Domain], needed: int, *, slices: bool) -> _Domain:
        """The first domain with the fewest units that still holds ``needed``; else the first."""
        counts = self.state.slices if slices else self.state.pods
        best, best_count = domains[0], None
        for d in domains:
            c = counts[d.index]
            if c >= needed and (best_count is None or c < best_count):
                best, best_count = d, c
        return best

    def level_with_fit(self, level: int) -> tuple[int, list[_Domain]] | Failure:
        tree, st = self.tree, self.state
        domains = list(tree.per_level[level].values())
        if not domains:
            return Failure(f"no topology domains at level: {tree.levels[level]}")
        ordered = self.sorted(domains)
        top = ordered[0]
        wanted = self.count // self.slice_size
        if self.bestfit and st.slices[top.index] >= wanted:
            top = self.best_fit(ordered, wanted, slices=True)
        required = self.request.placement == Placement.REQUIRED
        if self.least_free:
            for d in ordered:
                if st.slices[d.index] >= wanted:
                    return level, [d]
            if required:
                return self.not_fit(level, st.pods[ordered[-1].index], wanted)
        if st.slices[top.index] >= wanted:
            return level, [top]
        if required:
            return self.not_fit(level, st.slices[top.index], wanted)
        if level > 0 and not self.unconstrained:
            return self.level_with_fit(level - 1)
        return self.spread(level, ordered, wanted)

    def spread(
        self, level: int, ordered: list[_Domain], wanted: int
    ) -> tuple[int, list[_Domain]] | Failure:
        """Take whole domains of ``level`` in order until they hold ``wanted`` slices."""
        st = self.state
        chosen: list[_Domain] = []
        remaining = wanted
        for i, domain in enumerate(ordered):
            if remaining <= 0:
                break
            taken = domain
            if self.bestfit and st.slices[domain.index] >= remaining:
                taken = self.best_fit(ordered[i:], remaining, slices=True)
            chosen.append(taken)
            remaining -= st.slices[taken.index]
        if remaining > 0:
            return self.not_fit(level, wanted - remaining, wanted)
        return level, chosen

    def to_minimum(
        self, domains: list[_Domain], count: int, size: int, *, slices: bool
    ) -> list[_Domain]:
        """Take ``count`` pods from ``domains`` in order (in slices of ``size`` when ``slices``).

        Marks on each domain taken what it holds (Kueue's ``updateCountsToMinimumGeneric``).
        """
        st = self.state
        counts = st.slices if slices else st.pods
        remaining = count // size if slices else count
        chosen: list[_Domain] = []
        for i, domain in enumerate(domains):
            d = domain
            if self.bestfit and counts[d.index] >= remaining:
                d = self.best_fit(domains[i:], remaining, slices=slices)
            if counts[d.index] >= remaining:
                if slices:
                    st.slices[d.index] = remaining
                st.pods[d.index] = remaining * size if slices else remaining
                chosen.append(d)
                return chosen
            if slices:
                st.pods[d.index] = st.slices[d.index] * size
            remaining -= counts[d.index]
            chosen.append(d)
        raise AssertionError("placement: domains chosen as fitting did not hold the pods")

    def not_fit(self, level: int, fit: int, wanted: int) -> Failure:
        unit = "pod" if self.slice_size == 1 else "slice"
        tree = self.tree
        if fit == 0:
            head = f'topology "{tree.name}" doesn\'t allow to fit any of {wanted} {unit}(s)'
        else:
            head = f'topology "{tree.name}" allows to fit only {fit} out of {wanted} {unit}(s)'
        return Failure(f"{head}{self.closest(level)}")

    def closest(self, level: int) -> str:
        """Name the level asked for and the domain there with the most room."""
        tree, st = self.tree, self.state
        asked = self.request.level
        at = tree.levels.index(asked) if asked in tree.levels else level
        domains = list(tree.per_level[at].values())
        if not domains:
            return ""
        best = min(domains, key=lambda d: (-st.pods[d.index], d.values))
        where = "/".join(best.values)
        return (
            f" at level {tree.levels[at]} (the largest domain, {where}, has room for "
            f"{st.pods[best.index]} pod(s))"
        )

    def build(self, domains: list[_Domain]) -> Assignment:
        tree, st = self.tree, self.state
        start = len(tree.levels) - 1 if tree.by_host else 0
        out = [
            DomainCount(d.values[start:], st.pods[d.index])
            for d in sorted(domains, key=lambda d: d.values)
            if st.pods[d.index] > 0
        ]
        return Assignment(tree.levels[start:], tuple(out))


def _leaf_pods(  # noqa: PLR0917 - private; one call site, every argument a different thing
    tree: Tree,
    usage: Usage | None,
    per_pod: resources.Requests,
    limits: PodConstraints,
    flavor_tolerations: tuple[pod.Toleration, ...],
    assumed: Mapping[int, resources.Requests],
) -> list[int]:
    """How many more pods fit on each leaf (Kueue's phase 1 at the leaves)."""
    one = dict(per_pod)
    one[quantity.PODS] = one.get(quantity.PODS, 0) + 1
    leaf_pods = [0] * len(tree.leaves)
    no_more: resources.Requests = {}
    for leaf in tree.leaves:
        if not _feasible(leaf.node, limits, flavor_tolerations):
            continue
        i = leaf.leaf
        free, taken = tree.free[i], assumed.get(i, no_more)

        def room(
            res: names.ResourceName,
            i: int = i,
            free: resources.Requests = free,
            taken: resources.Requests = taken,
        ) -> int:
            used = 0 if usage is None else usage.of(i, res)
            return free.get(res, 0) - used - taken.get(res, 0)

        leaf_pods[i] = count_in(one, room)
    return leaf_pods


def _levels(tree: Tree, request: Request) -> tuple[int, int] | Failure:
    """The indexes of the requested level and the slice level, or why they are not usable."""
    levels = tree.levels
    if request.level is not None:
        level_key = request.level
    elif request.slice_level is not None and not request.implied:
        level_key = levels[0]
    else:
        level_key = levels[-1]
    if level_key not in levels:
        return Failure(f"no requested topology level: {level_key}")
    slice_key = request.slice_level if request.slice_level is not None else levels[-1]
    if slice_key not in levels:
        return Failure(f"no requested topology level for slices: {slice_key}")
    level, slice_level = levels.index(level_key), levels.index(slice_key)
    if level > slice_level:
        return Failure(
            f"podset slice topology {slice_key} is above the podset topology {level_key}"
        )
    return level, slice_level


def find(
    tree: Tree,
    usage: Usage | None,
    request: Request,
    count: int,
    per_pod: resources.Requests,
    *,
    constraints: PodConstraints | None = None,
    flavor_tolerations: tuple[pod.Toleration, ...] = (),
    assumed: Mapping[int, resources.Requests] | None = None,
    simulate_empty: bool = False,
    profile: configuration.TopologyProfile = configuration.TopologyProfile.MIXED,
) -> Assignment | Failure:
    """Place ``count`` pods of ``per_pod`` in ``tree`` as ``request`` asks, or say why not.

    ``usage``: pods already placed (ignored with ``simulate_empty``, Kueue's check of whether
    the pods could fit once everything placed is gone); ``assumed``: per leaf, what earlier pod
    sets of the same workload take.
    """
    levels = tree.levels
    if not levels:
        return Failure(f'topology "{tree.name}" has no levels')
    indexes = _levels(tree, request)
    if isinstance(indexes, Failure):
        return indexes
    level, slice_level = indexes
    finder = _Finder(tree, request, count, profile)
    if count % finder.slice_size:
        return Failure(
            f"the pod count {count} is not a multiple of the slice size {finder.slice_size}"
        )
    placed = None if simulate_empty else usage
    limits = constraints if constraints is not None else PodConstraints()
    leaf_pods = _leaf_pods(tree, placed, per_pod, limits, flavor_tolerations, assumed or {})
    finder.fill(leaf_pods, slice_level)
    found = finder.level_with_fit(level)
    if isinstance(found, Failure):
        return found
    fit_level, current = found
    size = finder.slice_size
    current = finder.to_minimum(current, count, size, slices=True)
    at = fit_level
    while at < min(len(levels) - 1, slice_level):
        # Above the slice level the lower domains are filled greedily across parents (Kueue).
        lower = finder.sorted(child for d in current for child in d.children)
        current = finder.to_minimum(lower, count, size, slices=True)
        at += 1
    while at < len(levels) - 1:
        nxt: list[_Domain] = []
        for d in current:
            pods = finder.state.pods[d.index]
            nxt.extend(finder.to_minimum(finder.sorted(d.children), pods, 1, slices=False))
        current = nxt
        at += 1
    return finder.build(current)
