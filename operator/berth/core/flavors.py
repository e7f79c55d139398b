"""Flavor assignment: which flavor each pod set uses for each resource, and at what cost.

Mirrors Kueue's flavor assigner (``pkg/scheduler/flavorassigner``, ``tas_flavorassigner.go``):

- Per pod set and resource group, flavors are tried in the order the ClusterQueue lists them,
  starting after the flavor the previous attempt stopped at (``start``). A flavor is skipped when
  it does not exist, when the pods do not tolerate its ``nodeTaints`` (NoSchedule/NoExecute; the
  flavor's own tolerations count), or when the pods' node selector or required node affinity,
  restricted to the flavor's label keys, contradicts its ``nodeLabels``.
- For each covered resource the request (plus earlier pod sets' use of the same flavor) is
  compared with the ClusterQueue's capacity: above ``potential_available`` it can never fit
  (``ExceedsMaxQuota``); within ``available`` it fits, at the borrowing level of the lowest
  subtree that holds it; otherwise preemption is simulated where policy allows it.
- ``flavorFungibility`` decides whether to stop at a flavor that borrows or needs preemption; when
  every flavor was tried, the best one wins by ``preference``.
- A non-zero request for a resource the ClusterQueue does not cover makes the workload NoFit.
- Topology: a pod set that asks for a placement (or any pod set, when every flavor of the
  ClusterQueue is topology-aware) may only use topology-aware flavors that have the levels it
  names, and other pod sets may not use them. Once quota fits, the pods are placed
  (``berth.core.placement``); no placement makes the pod set Preempt (room may be freed), and if
  it cannot be placed even with every placed workload gone, NoFit (``TopologyPlacementFailed``).

Called by ``berth.core.cycle``; uses ``berth.core.preemption`` as the preemption oracle.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from berth.api import clusterqueue, conditions, configuration, names, pod, quantity
from berth.core import placement, quota, resources, snapshot, topology, workload


class Mode(enum.IntEnum):
    """How a workload (or pod set, or flavor) can be admitted; higher is better."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


class PreemptionMode(enum.IntEnum):
    """The finer mode inside the assigner; higher is better."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    def public(self) -> Mode:
        """Map to the mode the cycle acts on."""
        if self == PreemptionMode.NO_FIT:
            return Mode.NO_FIT
        if self == PreemptionMode.FIT:
            return Mode.FIT
        return Mode.PREEMPT


_SEVERITY = {
    "": 0,
    conditions.PendingReason.WAITING_FOR_QUOTA.value: 2,
    conditions.PendingReason.EXCEEDS_MAX_QUOTA.value: 3,
    conditions.PendingReason.NO_MATCHING_FLAVOR.value: 4,
    conditions.PendingReason.TOPOLOGY_PLACEMENT_FAILED.value: 5,
}


def _most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


@dataclasses.dataclass(frozen=True, slots=True)
class Granular:
    """A flavor's preemption mode and borrowing level (0 = within the ClusterQueue's quota)."""

    mode: PreemptionMode
    borrow: int


_WORST = Granular(PreemptionMode.NO_FIT, 1 << 30)
_BEST = Granular(PreemptionMode.FIT, 0)


def is_preferred(a: Granular, b: Granular, fungibility: clusterqueue.FlavorFungibility) -> bool:
    """Tell whether ``a`` is a better outcome than ``b`` under the fungibility preference."""
    if a.mode == PreemptionMode.NO_FIT:
        return False
    if b.mode == PreemptionMode.NO_FIT:
        return True
    a_none = a.mode == PreemptionMode.NO_CANDIDATES
    b_none = b.mode == PreemptionMode.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == clusterqueue.FungibilityPreference.PREEMPTION_OVER_BORROWING:
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.mode > b.mode
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrow < b.borrow


def should_try_next_flavor(mode: Granular, fungibility: clusterqueue.FlavorFungibility) -> bool:
    """Tell whether the search goes on past a flavor with this outcome."""
    try_next = clusterqueue.FungibilityPolicy.TRY_NEXT_FLAVOR
    if mode.mode in (PreemptionMode.NO_FIT, PreemptionMode.NO_CANDIDATES):
        return True
    if mode.mode in (PreemptionMode.PREEMPT, PreemptionMode.RECLAIM) and (
        fungibility.when_can_preempt == try_next
    ):
        return True
    return mode.borrow > 0 and fungibility.when_can_borrow == try_next


@dataclasses.dataclass(slots=True)
class FlavorChoice:
    """The flavor chosen for one resource of a pod set."""

    flavor: names.FlavorName
    mode: Mode
    borrow: int
    tried_index: int = -1


@dataclasses.dataclass(slots=True)
class PodSetAssignment:
    """Flavors chosen for one pod set, with the reasons any flavor fell short."""

    name: names.PodSetName
    count: int
    requests: resources.Requests
    flavors: dict[names.ResourceName, FlavorChoice]
    reasons: list[str]
    attempts: dict[names.FlavorName, tuple[PreemptionMode, str]]
    per_pod: resources.Requests = dataclasses.field(default_factory=dict)
    topology: topology.Assignment | None = None
    """Where its pods go in its topology-aware flavor (once placed)."""
    topology_flavor: names.FlavorName | None = None

    @property
    def mode(self) -> Mode:
        """The worst mode among its flavors (Fit when nothing fell short)."""
        if not self.reasons:
            return Mode.FIT
        if not self.flavors:
            return Mode.NO_FIT
        return min((c.mode for c in self.flavors.values()), default=Mode.FIT)


@dataclasses.dataclass(slots=True)
class Assignment:
    """The outcome of flavor assignment for a whole workload."""

    pod_sets: list[PodSetAssignment] = dataclasses.field(default_factory=list)
    usage: resources.FlavorResourceAmounts = dataclasses.field(default_factory=dict)
    borrowing: int = 0
    no_fit_reason: str = ""
    forced_mode: Mode | None = None
    last_tried: list[dict[names.ResourceName, int]] = dataclasses.field(default_factory=list)

    @property
    def mode(self) -> Mode:
        """The worst mode among the pod sets (NoFit if none was assigned)."""
        if self.forced_mode is not None:
            return self.forced_mode
        if not self.pod_sets:
            return Mode.NO_FIT
        return min(ps.mode for ps in self.pod_sets)

    def message(self) -> str:
        """Say why the workload cannot be admitted as it is, pod set by pod set."""
        parts = [
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}"
            for ps in self.pod_sets
            if ps.reasons
        ]
        return "; ".join(parts)

    def frs_needing_preemption(self) -> set[resources.FlavorResource]:
        """Flavor-resources whose chosen flavor needs preemption."""
        return {
            resources.FlavorResource(choice.flavor, res)
            for ps in self.pod_sets
            for res, choice in ps.flavors.items()
            if choice.mode == Mode.PREEMPT
        }

    def to_admission(self, cq: names.ClusterQueueName) -> workload.Admission:
        """Describe this assignment as an admission into ``cq``."""
        return workload.Admission(
            cluster_queue=cq,
            pod_sets=tuple(
                workload.PodSetAdmission(
                    name=ps.name,
                    count=ps.count,
                    flavors={res: c.flavor for res, c in sorted(ps.flavors.items())},
                    requests=dict(ps.requests),
                    topology=ps.topology,
                )
                for ps in self.pod_sets
            ),
            usage=dict(self.usage),
            placed=self.placed(),
        )

    def placed(self) -> tuple[topology.Placed, ...]:
        """What the pod sets' placements take from their flavors' domains."""
        return tuple(
            topology.placed(ps.topology_flavor, ps.topology, ps.per_pod)
            for ps in self.pod_sets
            if ps.topology is not None and ps.topology_flavor is not None
        )


def _set_mode(psa: PodSetAssignment, mode: Mode) -> None:
    for choice in psa.flavors.values():
        choice.mode = mode


_IMPLIED = topology.Request(topology.Placement.UNCONSTRAINED, implied=True)

PreemptionOracle = Callable[[resources.FlavorResource, int], tuple[PreemptionMode, int]]
"""Simulate preemption for ``amount`` of one flavor-resource: the mode and borrowing level after."""


def _taint_str(taint: pod.Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect.value}"


def flavor_mismatch(flavor: snapshot.FlavorInfo, ps: workload.PodSetInfo) -> str | None:
    """Say why pods of ``ps`` cannot run on ``flavor``, or None if they can."""
    tolerations = ps.tolerations + flavor.tolerations
    for taint in flavor.node_taints:
        if taint.effect not in (pod.TaintEffect.NO_SCHEDULE, pod.TaintEffect.NO_EXECUTE):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return f"untolerated taint {_taint_str(taint)} in flavor {flavor.name}"
    labels = flavor.node_labels
    # Only the flavor's own label keys are compared: other keys are for kube-scheduler.
    for key, value in ps.node_selector:
        if key in labels and labels[key] != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    terms: list[list[tuple[str, str, tuple[str, ...]]]] = []
    for term in ps.affinity_terms:
        kept = [expr for expr in term if expr[0] in labels]
        if not kept:
            # A term with no relevant key matches any flavor; terms are ORed.
            terms = []
            break
        terms.append(kept)
    if terms and not any(
        all(placement.expression_matches(op, labels.get(key), values) for key, op, values in term)
        for term in terms
    ):
        return f"flavor {flavor.name} doesn't match node affinity"
    return None


class FlavorAssigner:
    """Assigns flavors to one workload in one ClusterQueue against one snapshot."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        cq: snapshot.ClusterQueueInfo,
        wl: workload.WorkloadInfo,
        oracle: PreemptionOracle,
        *,
        fair_sharing: bool,
        start: list[dict[names.ResourceName, int]] | None = None,
        profile: configuration.TopologyProfile = configuration.TopologyProfile.MIXED,
    ) -> None:
        self.snap = snap
        self.cq = cq
        self.node = snap.node(cq.name)
        self.wl = wl
        self.oracle = oracle
        self.fair_sharing = fair_sharing
        self.start = start
        self.profile = profile

    def assign(self, counts: tuple[int, ...] | None = None) -> Assignment:
        """Assign flavors to every pod set at the given pod counts (all pods by default)."""
        cq = self.cq
        covers_pods = quantity.PODS in cq.group_by_resource
        out = Assignment()
        for index, ps in enumerate(self.wl.pod_sets):
            count = ps.count if counts is None else counts[index]
            requests = ps.total(count)
            if covers_pods:
                requests[quantity.PODS] = count
            psa = PodSetAssignment(
                name=ps.name,
                count=count,
                requests=requests,
                flavors={},
                reasons=[],
                attempts={},
                per_pod=dict(ps.per_pod),
            )
            failed = self._assign_pod_set(index, ps, psa, out.usage)
            out.pod_sets.append(psa)
            tried: dict[names.ResourceName, int] = {}
            for res, choice in psa.flavors.items():
                out.borrowing = max(out.borrowing, choice.borrow)
                fr = resources.FlavorResource(choice.flavor, res)
                out.usage[fr] = out.usage.get(fr, 0) + requests.get(res, 0)
                tried[res] = choice.tried_index
            out.last_tried.append(tried)
            if failed:
                out.no_fit_reason = self._no_fit_reason(out)
                return out
        if out.mode != Mode.NO_FIT:
            self._place_pod_sets(out)
        if out.mode == Mode.NO_FIT:
            out.no_fit_reason = self._no_fit_reason(out)
        return out

    # Topology -------------------------------------------------------------------------------

    def request_of(self, ps: workload.PodSetInfo) -> topology.Request | None:
        """The placement a pod set asks for (implied anywhere in a topology-only queue)."""
        if ps.topology is not None:
            return ps.topology
        return _IMPLIED if self.cq.topology_only else None

    def places(self, out: Assignment) -> bool:
        """Tell whether some pod set of this assignment is placed by topology."""
        return any(
            self.request_of(ps) is not None and psa.count > 0
            for ps, psa in zip(self.wl.pod_sets, out.pod_sets, strict=False)
        )

    def place(
        self, out: Assignment, *, simulate_empty: bool, record: bool
    ) -> tuple[int, str] | None:
        """Place every pod set that asks for it; the first that cannot be placed, and why.

        ``record`` keeps the placements on the pod sets; ``simulate_empty`` places as if nothing
        were placed yet (Kueue's check of whether preemption could ever make room).
        """
        assumed: dict[names.FlavorName, dict[int, resources.Requests]] = {}
        for i, (ps, psa) in enumerate(zip(self.wl.pod_sets, out.pod_sets, strict=False)):
            request = self.request_of(ps)
            if request is None or psa.count == 0 or not psa.flavors:
                continue
            placed = sorted({c.flavor for c in psa.flavors.values()} & set(self.snap.placements))
            if len(placed) != 1:
                if not placed and request.implied:
                    continue
                what = ", ".join(placed) or "none"
                return i, f"exactly one topology-aware flavor must be assigned (got {what})"
            flavor = placed[0]
            fp = self.snap.placements[flavor]
            got = placement.find(
                fp.tree,
                fp.usage,
                request,
                psa.count,
                ps.per_pod,
                constraints=topology.PodConstraints(
                    ps.node_selector, ps.affinity_terms, ps.tolerations
                ),
                flavor_tolerations=self.snap.flavors[flavor].tolerations,
                assumed=assumed.get(flavor),
                simulate_empty=simulate_empty,
                profile=self.profile,
            )
            if isinstance(got, placement.Failure):
                return i, got.message
            if record:
                psa.topology, psa.topology_flavor = got, flavor
            taken = assumed.setdefault(flavor, {})
            for values, amounts in topology.placed(flavor, got, ps.per_pod).leaves:
                leaf = fp.tree.leaf_index(values)
                if leaf is None:
                    continue
                room = taken.setdefault(leaf, {})
                for res, amount in amounts:
                    room[res] = room.get(res, 0) + amount
        return None

    def _place_pod_sets(self, out: Assignment) -> None:
        """Place pod sets once quota is decided (Kueue's step after flavor assignment)."""
        if not self.places(out):
            return
        fit_message = ""
        if out.mode == Mode.FIT:
            failed = self.place(out, simulate_empty=False, record=True)
            if failed is None:
                return
            # Room may be freed by preemption: the pod set now needs it.
            index, fit_message = failed
            out.pod_sets[index].reasons.append(fit_message)
            _set_mode(out.pod_sets[index], Mode.PREEMPT)
        if out.mode == Mode.PREEMPT:
            failed = self.place(out, simulate_empty=True, record=False)
            if failed is not None:
                index, message = failed
                psa = out.pod_sets[index]
                # Say why it can never fit, not also why it does not fit now.
                psa.reasons = [r for r in psa.reasons if r != fit_message] + [message]
                _set_mode(psa, Mode.NO_FIT)
                reason = conditions.PendingReason.TOPOLOGY_PLACEMENT_FAILED.value
                for choice in psa.flavors.values():
                    psa.attempts[choice.flavor] = (PreemptionMode.NO_FIT, reason)
                return
            self._needs_room(out)

    def _needs_room(self, out: Assignment) -> None:
        """Mark placed pod sets as needing preemption in their topology-aware flavors.

        Quota may fit while the domains are fragmented: room is made there by preemption.
        """
        for ps, psa in zip(self.wl.pod_sets, out.pod_sets, strict=False):
            psa.topology = psa.topology_flavor = None
            if self.request_of(ps) is None:
                continue
            for choice in psa.flavors.values():
                if choice.flavor in self.snap.placements and choice.mode == Mode.FIT:
                    choice.mode = Mode.PREEMPT

    def _assign_pod_set(
        self,
        index: int,
        ps: workload.PodSetInfo,
        psa: PodSetAssignment,
        assigned: resources.FlavorResourceAmounts,
    ) -> bool:
        """Fill ``psa``; return True when some requested resource got no flavor at all."""
        chosen: dict[names.ResourceName, FlavorChoice] = {}
        reasons: list[str] = []
        # Undeclared resources are checked before any flavor is tried, so the verdict does not
        # depend on the order resources are visited in (Kueue visits them in map order).
        for res in sorted(psa.requests):
            if psa.requests[res] and res not in self.cq.group_by_resource:
                psa.reasons = [f"resource {res} unavailable in ClusterQueue"]
                psa.flavors = {}
                return True
        for res in sorted(psa.requests):
            group = self.cq.group_by_resource.get(res)
            if group is None or res in chosen:
                continue
            flavors, group_reasons, fit = self._find_flavor(index, ps, group, psa, assigned)
            if not flavors:
                psa.reasons = group_reasons
                psa.flavors = {}
                return True
            chosen.update(flavors)
            if not fit:
                reasons.extend(group_reasons)
        psa.flavors = chosen
        psa.reasons = reasons
        return False

    def _find_flavor(
        self,
        index: int,
        ps: workload.PodSetInfo,
        group: snapshot.ResourceGroupInfo,
        psa: PodSetAssignment,
        assigned: resources.FlavorResourceAmounts,
    ) -> tuple[dict[names.ResourceName, FlavorChoice], list[str], bool]:
        requests = {r: psa.requests[r] for r in group.covered if r in psa.requests}
        fungibility = self.cq.fungibility
        reasons: list[str] = []
        best: dict[names.ResourceName, FlavorChoice] = {}
        best_mode = _WORST
        first_res = min(requests) if requests else None
        start = 0
        if self.start is not None and first_res is not None and index < len(self.start):
            start = self.start[index].get(first_res, -1) + 1
        attempted = -1
        flavor_list = group.flavors
        for idx in range(start, len(flavor_list)):
            attempted = idx
            fname = flavor_list[idx]
            flavor = self.snap.flavors.get(fname)
            mismatch = (
                f"flavor {fname} not found"
                if flavor is None
                else flavor_mismatch(flavor, ps) or self._topology_mismatch(flavor, ps, group)
            )
            if mismatch is not None:
                reasons.append(mismatch)
                psa.attempts[fname] = (
                    PreemptionMode.NO_FIT,
                    conditions.PendingReason.NO_MATCHING_FLAVOR.value,
                )
                continue
            choices: dict[names.ResourceName, FlavorChoice] = {}
            representative = _BEST
            flavor_reason = ""
            for res in sorted(requests):
                fr = resources.FlavorResource(fname, res)
                mode, borrow, msgs, no_fit = self._fits_quota(
                    fr, assigned.get(fr, 0), requests[res]
                )
                reasons.extend(msgs)
                flavor_reason = _most_severe(flavor_reason, no_fit)
                granular = Granular(mode, borrow)
                if is_preferred(representative, granular, fungibility):
                    representative = granular
                if representative.mode == PreemptionMode.NO_FIT:
                    # The flavor is out, but the other resources still explain themselves.
                    continue
                choices[res] = FlavorChoice(fname, mode.public(), borrow)
            psa.attempts[fname] = (representative.mode, flavor_reason)
            if not should_try_next_flavor(representative, fungibility):
                best, best_mode = choices, representative
                break
            if is_preferred(representative, best_mode, fungibility):
                best, best_mode = choices, representative
        tried = -1 if attempted == len(flavor_list) - 1 else attempted
        for choice in best.values():
            choice.tried_index = tried
        return best, reasons, best_mode.mode == PreemptionMode.FIT

    def _topology_mismatch(
        self,
        flavor: snapshot.FlavorInfo,
        ps: workload.PodSetInfo,
        group: snapshot.ResourceGroupInfo,
    ) -> str | None:
        """Why a flavor does not suit the pod set's placement (Kueue's TAS flavor match)."""
        request = self.request_of(ps)
        if request is None:
            if flavor.topology_name is not None:
                return f'flavor "{flavor.name}" supports only topology-aware scheduling'
            return None
        if request.implied:
            return None  # every flavor of the queue is topology-aware
        if flavor.topology_name is None:
            if not any(ps.per_pod.get(res) for res in group.covered):
                return None  # quota-only resources may come from a plain flavor
            return f'flavor "{flavor.name}" does not support topology-aware scheduling'
        fp = self.snap.placements.get(flavor.name)
        if fp is None:
            return f'flavor "{flavor.name}": its Topology "{flavor.topology_name}" is not known'
        missing = [level for level in request.levels_named() if level not in fp.tree.levels]
        if missing:
            return (
                f'flavor "{flavor.name}" does not contain the requested level '
                f"{', '.join(missing)} (Topology {flavor.topology_name} has "
                f"{', '.join(fp.tree.levels)})"
            )
        return None

    def _fits_quota(
        self, fr: resources.FlavorResource, assumed: int, request: int
    ) -> tuple[PreemptionMode, int, list[str], str]:
        node = self.node
        available = node.available(fr)
        max_capacity = node.potential_available(fr)
        val = assumed + request
        res = fr.resource
        if val > max_capacity:
            return (
                PreemptionMode.NO_FIT,
                0,
                [
                    (
                        f"insufficient quota for {res} in flavor {fr.flavor}, previously "
                        f"considered podsets requests ({resources.fmt(res, assumed)}) + current "
                        f"podset request ({resources.fmt(res, request)}) > maximum capacity "
                        f"({resources.fmt(res, max_capacity)})"
                    )
                ],
                conditions.PendingReason.EXCEEDS_MAX_QUOTA.value,
            )
        borrow, may_reclaim = quota.lowest_fitting_subtree_height(node, fr, val)
        if val <= available:
            return PreemptionMode.FIT, borrow, [], ""
        msgs = [
            (
                f"insufficient unused quota for {res} in flavor {fr.flavor}, "
                f"{resources.fmt(res, val - available)} more needed"
            )
        ]
        if node.nominal(fr) >= val or may_reclaim or self._can_preempt_while_borrowing():
            mode, borrow_after = self.oracle(fr, val)
            return mode, borrow_after, msgs, ""
        return (
            PreemptionMode.NO_FIT,
            borrow,
            msgs,
            conditions.PendingReason.WAITING_FOR_QUOTA.value,
        )

    def _can_preempt_while_borrowing(self) -> bool:
        never = clusterqueue.PreemptionPolicy.NEVER
        pre = self.cq.preemption
        return pre.borrow_within_cohort.policy != never or (
            self.fair_sharing and pre.reclaim_within_cohort != never
        )

    def _no_fit_reason(self, assignment: Assignment) -> str:
        overall = ""
        for psa in assignment.pod_sets:
            if psa.mode != Mode.NO_FIT:
                continue
            if not psa.attempts:
                overall = _most_severe(overall, conditions.PendingReason.NO_MATCHING_FLAVOR.value)
                continue
            # Within a resource group any flavor may do, so the mildest blocker counts;
            # across groups all are needed, so the most severe group decides.
            per_group: dict[int, str] = {}
            for fname, (mode, reason) in psa.attempts.items():
                if mode != PreemptionMode.NO_FIT:
                    continue
                for gi, group in enumerate(self.cq.groups):
                    if fname in group.flavors:
                        old = per_group.get(gi)
                        if old is None or _SEVERITY.get(reason, 0) < _SEVERITY.get(old, 0):
                            per_group[gi] = reason
            pod_set_reason = ""
            for reason in per_group.values():
                pod_set_reason = _most_severe(pod_set_reason, reason)
            overall = _most_severe(overall, pod_set_reason)
        return overall
