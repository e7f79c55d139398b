"""Finding a topology placement: which domains of a flavor's tree a pod set's pods go to.

Mirrors Kueue's ``findTopologyAssignment`` (``pkg/cache/scheduler/tas_flavor_snapshot.go``, KEP
2724). ``find`` answers in two phases, as Kueue's: (1) how many pods (and slices) fit in every
domain of a ``topology.Tree``, bottom-up, respecting the pods' node selector, affinity and
tolerations; (2) pick the domains at the requested level and descend level by level, minimising
the number of domains used. Profiles (the Configuration's ``topologyProfile``): ``Mixed``,
Kueue's default since 0.15 (``TASProfileMixed``): Required and Preferred use **BestFit**
(largest domains first, the last one the tightest that still fits), Unconstrained uses
**LeastFreeCapacity** (fullest domains first), which packs small pods into already busy nodes;
``BestFit`` for every pod set; ``MostFreeCapacity`` (largest first, no tight fit: spreading, to
compare against). The result is a ``topology.Assignment`` at the lowest level, or a ``Failure``
in Kueue's words. Pure; called by ``core.flavors`` (placement of a pod set in a flavor) and
``core.preemption`` (does it fit with these victims gone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from berth.api import configuration, names, pod, quantity
from berth.core import resources, topology


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
    node: topology.Node | None,
    constraints: topology.PodConstraints,
    flavor_tolerations: tuple[pod.Toleration, ...],
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
        self,
        tree: topology.Tree,
        request: topology.Request,
        count: int,
        profile: configuration.TopologyProfile,
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

    def _fill(
        self, domain: topology.Domain, level: int, slice_level: int, leaf_pods: list[int]
    ) -> None:
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

    def sorted(self, domains: Iterable[topology.Domain]) -> list[topology.Domain]:
        """BestFit: most slices first; LeastFreeCapacity: fewest first; then fewer pods, values.

        Values compare level by level from the top, which orders sibling hosts by hostname as
        Kueue's comparator does.
        """
        st = self.state
        sign = 1 if self.least_free else -1
        return sorted(
            domains, key=lambda d: (sign * st.slices[d.index], st.pods[d.index], d.values)
        )

    def best_fit(
        self, domains: list[topology.Domain], needed: int, *, slices: bool
    ) -> topology.Domain:
        """The first domain with the fewest units that still holds ``needed``; else the first."""
        counts = self.state.slices if slices else self.state.pods
        best, best_count = domains[0], None
        for d in domains:
            c = counts[d.index]
            if c >= needed and (best_count is None or c < best_count):
                best, best_count = d, c
        return best

    def level_with_fit(self, level: int) -> tuple[int, list[topology.Domain]] | Failure:
        tree, st = self.tree, self.state
        domains = list(tree.per_level[level].values())
        if not domains:
            return Failure(f"no topology domains at level: {tree.levels[level]}")
        ordered = self.sorted(domains)
        top = ordered[0]
        wanted = self.count // self.slice_size
        if self.bestfit and st.slices[top.index] >= wanted:
            top = self.best_fit(ordered, wanted, slices=True)
        required = self.request.placement == topology.Placement.REQUIRED
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
        self, level: int, ordered: list[topology.Domain], wanted: int
    ) -> tuple[int, list[topology.Domain]] | Failure:
        """Take whole domains of ``level`` in order until they hold ``wanted`` slices."""
        st = self.state
        chosen: list[topology.Domain] = []
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
        self, domains: list[topology.Domain], count: int, size: int, *, slices: bool
    ) -> list[topology.Domain]:
        """Take ``count`` pods from ``domains`` in order (in slices of ``size`` when ``slices``).

        Marks on each domain taken what it holds (Kueue's ``updateCountsToMinimumGeneric``).
        """
        st = self.state
        counts = st.slices if slices else st.pods
        remaining = count // size if slices else count
        chosen: list[topology.Domain] = []
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

    def build(self, domains: list[topology.Domain]) -> topology.Assignment:
        tree, st = self.tree, self.state
        start = len(tree.levels) - 1 if tree.by_host else 0
        out = [
            topology.DomainCount(d.values[start:], st.pods[d.index])
            for d in sorted(domains, key=lambda d: d.values)
            if st.pods[d.index] > 0
        ]
        return topology.Assignment(tree.levels[start:], tuple(out))


def _leaf_pods(  # noqa: PLR0917 - private; one call site, every argument a different thing
    tree: topology.Tree,
    usage: topology.Usage | None,
    per_pod: resources.Requests,
    limits: topology.PodConstraints,
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


def _levels(tree: topology.Tree, request: topology.Request) -> tuple[int, int] | Failure:
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
    tree: topology.Tree,
    usage: topology.Usage | None,
    request: topology.Request,
    count: int,
    per_pod: resources.Requests,
    *,
    constraints: topology.PodConstraints | None = None,
    flavor_tolerations: tuple[pod.Toleration, ...] = (),
    assumed: Mapping[int, resources.Requests] | None = None,
    simulate_empty: bool = False,
    profile: configuration.TopologyProfile = configuration.TopologyProfile.MIXED,
) -> topology.Assignment | Failure:
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
    limits = constraints if constraints is not None else topology.PodConstraints()
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
        nxt: list[topology.Domain] = []
        for d in current:
            pods = finder.state.pods[d.index]
            nxt.extend(finder.to_minimum(finder.sorted(d.children), pods, 1, slices=False))
        current = nxt
        at += 1
    return finder.build(current)
