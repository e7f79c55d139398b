"""The Backfill strategy inside one scheduling cycle: a ``planning.Plan`` per quota tree.

``core.cycle`` builds a ``Planner`` when some ClusterQueue uses the strategy and asks it three
things about each entry it processes: whether a fitting entry would delay a reservation
(``held``), that an entry took its quota (``started``: it is running work from now on), and when a
blocked entry's own reservation starts (``blocked``: it joins the holders). Heads blocked in this
cycle join the holders and admissions of this cycle join the releases, so later entries see
them: the tree's plan takes either in where it stands (``planning.Plan.add``, ``insert`` and
``started``), and places again only the reservations that may have moved. It is made again after
a preemption or a hold. ``outlook`` answers the same questions for ``berth explain``.

A plan is made from the tree's admitted work and holders, the estimates and ``now``. A cycle that
neither preempted nor held anything in a tree leaves its plan as the next cycle would make it
again (``Kept``): the next cycle takes it over when the tree's generation (counting the
admissions the plan took in, ``planning.Plan.started``), the holders (the same objects; those
parked since are inserted), ``now`` (or a later instant before which no running work was due to
end, ``planning.Plan.moved_to``) and the version of estimates and evictions all agree, and a
tree whose queues only park heads is planned once per change, not once per cycle.

Pure and deterministic; the inputs (``Inputs``) come from ``berth.state``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence

from berth.api import duration, names
from berth.core import flavors, ordering, quota, resources, snapshot, workload
from berth.core.backfill import estimates, planning

Given = dict[tuple[names.ClusterQueueName, names.WorkloadKey], workload.WorkloadInfo]
"""The holders a plan was made with (and given later), by queue and workload."""

Ends = Mapping[names.WorkloadKey, tuple[snapshot.AdmittedWorkload, planning.Release]]
"""When admitted work gives its quota back, by workload, with the admission it was worked out
for."""


@dataclasses.dataclass(frozen=True, slots=True)
class Kept:
    """A tree's plan a cycle left unchanged, and what it was made from."""

    now: float
    generation: int
    version: tuple[int, ...]
    holders: Given
    plan: planning.Plan


@dataclasses.dataclass(frozen=True, slots=True)
class Inputs:
    """What the Backfill strategy needs beyond the snapshot (from ``berth.state``)."""

    holders: Mapping[names.ClusterQueueName, Sequence[workload.WorkloadInfo]]
    """Each Backfill ClusterQueue's blocked workloads in queue order (at most its depth)."""
    estimate: Callable[[workload.WorkloadInfo, names.ClusterQueueName], estimates.Estimate]
    """A workload's expected runtime in a ClusterQueue."""
    version: tuple[int, ...] = ()
    """Changes whenever the estimates or anything else a plan depends on beyond the tree's
    generation changes (what runtimes were learned, evictions marked, namespaces)."""
    kept: Mapping[str, Kept] = dataclasses.field(default_factory=dict)
    """The plans the last cycle left unchanged, by root (``CycleResult.plans``)."""
    hints: Mapping[names.WorkloadKey, float] = dataclasses.field(default_factory=dict)
    """Where earlier cycles placed holders' reservations (``CycleResult.starts``): their
    placements search there first, and find the same start sooner."""
    ends: Ends = dataclasses.field(default_factory=dict)
    """When admitted work gives its quota back, as earlier cycles' plans worked it out at this
    ``version`` of this snapshot (``CycleResult.ends``): the same admission (the same object)
    gives it back then while that time lies ahead (``planning.expected_end``). Every plan made
    afresh lists the tree's admitted work, and most of it is what the plans before it listed."""


class Planner:
    """The plans of one cycle, by quota tree (made on first need)."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        now: float,
        inputs: Inputs,
        preempted: Mapping[names.WorkloadKey, snapshot.AdmittedWorkload],
        generation: Callable[[names.ClusterQueueName], int] = lambda _cq: 0,
    ) -> None:
        self.snap = snap
        self.now = now
        self.inputs = inputs
        self.preempted = preempted
        """Victims chosen in this cycle: they end now."""
        self.generation = generation
        """The change counter of a ClusterQueue's quota tree (``state.cache``)."""
        self.changed_roots: set[str] = set()
        """Trees whose usage this cycle changed otherwise than by admissions their plan took
        in: their plans are not kept."""
        self.made_with: dict[str, Given] = {}
        """The holders each tree's plan was made with (and given later)."""
        self.holders: dict[names.ClusterQueueName, list[workload.WorkloadInfo]] = {
            cq: list(infos) for cq, infos in inputs.holders.items()
        }
        self.started_here: dict[str, list[planning.Release]] = {}
        self.plans: dict[str, planning.Plan | None] = {}
        self._victims_seen: dict[str, int] = {}
        """How many victims the cycle had chosen when each tree's plan was made."""
        self._members: dict[str, list[names.ClusterQueueName]] | None = None
        self._starts: dict[names.WorkloadKey, float] = dict(inputs.hints)
        """Where plans placed holders' reservations, earlier cycles' and then this one's: each
        plan's placements search there first and note what they find (``planning.Plan``)."""
        self._ends: Ends = inputs.ends
        """The ends it was given, then (copied on the first it works out) with this cycle's."""
        self._given: dict[str, Given] = {}
        """Each tree's holders as ``_holders_of`` found them, until a head joins them."""
        self.fits: planning.Fits = functools.partial(_fits_now, snap, {})
        """Its assignment's usage if it fits as the snapshot stands, preemption not considered.
        Bound to the snapshot, not to the planner: a plan the planner keeps must not refer back
        to it, or every cycle under Backfill would leave a reference cycle behind."""

    def root_of(self, cq: names.ClusterQueueName) -> str:
        """The name of the root of the ClusterQueue's quota tree."""
        return self.snap.node(cq).root().name

    def _queues_of(self, root: str) -> list[names.ClusterQueueName]:
        if self._members is None:
            self._members = {}
            for name in sorted(self.snap.cq_nodes):
                self._members.setdefault(self.root_of(name), []).append(name)
        return self._members.get(root, [])

    def _end(self, info: workload.WorkloadInfo, cq: names.ClusterQueueName, since: float) -> float:
        return planning.expected_end(since, self.inputs.estimate(info, cq).seconds, self.now)

    def _holder(self, info: workload.WorkloadInfo, cq: names.ClusterQueueName) -> planning.Holder:
        return planning.Holder(info, cq, self.inputs.estimate(info, cq))

    def plan(self, root: str) -> planning.Plan | None:
        """The tree's plan (None when no queue of the tree holds a reservation)."""
        if root in self.plans:
            return self.plans[root]
        given = self._holders_of(root)
        made = None
        if given:
            made = self._taken_over(root, given)
            if made is None:
                holders = [self._holder(info, cq) for (cq, _), info in given.items()]
                made = self._new_plan(root, holders)
            self.made_with[root] = given
        self.plans[root] = made
        self._victims_seen[root] = len(self.preempted)
        return made

    def _holders_of(self, root: str) -> Given:
        """The tree's holders: each Backfill queue's first blocked workloads, up to its depth."""
        found = self._given.get(root)
        if found is None:
            found = self._given[root] = self._find_holders(root)
        return dict(found)  # callers extend what they are given

    def _find_holders(self, root: str) -> Given:
        given: Given = {}
        for name in self._queues_of(root):
            cq = self.snap.cluster_queues.get(name)
            if cq is not None and cq.backfill is not None:
                waiting = sorted(self.holders.get(name, []), key=ordering.queue_key)
                for info in waiting[: cq.backfill.reservation_depth]:
                    given[(name, info.key)] = info
        return given

    def _generation_of(self, root: str) -> int:
        members = self._queues_of(root)
        return self.generation(members[0]) if members else 0

    def _taken_over(self, root: str, holders: Given) -> planning.Plan | None:
        """The last cycle's plan of the tree, if it is the plan this cycle would make.

        Holders it was not made with join it where they stand (``planning.Plan.insert``): a
        workload the last cycle parked for another reason can be its queue's first parked.
        """
        kept = self.inputs.kept.get(root)
        if (
            kept is None
            or root in self.changed_roots
            or self.started_here.get(root)
            or kept.now > self.now
            or kept.version != self.inputs.version
            or kept.generation != self._generation_of(root)
            or not kept.holders.keys() <= holders.keys()
            or any(holders[k] is not info for k, info in kept.holders.items())
            or (kept.now < self.now and not kept.plan.moved_to(self.now))
        ):
            return None
        plan = kept.plan
        plan.hints = self._starts  # what it places from now on is this cycle's to tell
        for (cq, key), info in holders.items():
            if (cq, key) not in kept.holders:
                plan.insert(self._holder(info, cq))
        return plan

    def kept(self) -> dict[str, Kept]:
        """The plans of the trees this cycle neither preempted nor held in, for the next cycles.

        A plan this cycle made or took over (with the admissions it took in), and one the last
        cycle left that this one never needed: the next cycle checks what each was made from
        before it takes it over.
        """
        left = self.changed_roots | {self.root_of(v.cluster_queue) for v in self.preempted.values()}
        out = {
            root: kept
            for root, kept in self.inputs.kept.items()
            if root not in self.plans and root not in left
        }
        for root, plan in sorted(self.plans.items()):
            given = self.made_with.get(root)
            if plan is not None and given is not None and root not in left:
                # Each admission it took in moves the tree's generation once when applied.
                generation = self._generation_of(root) + len(self.started_here.get(root, ()))
                out[root] = Kept(self.now, generation, self.inputs.version, given, plan)
        return out

    def _new_plan(self, root: str, holders: Sequence[planning.Holder]) -> planning.Plan:
        return planning.Plan(
            self.snap, self.now, self._releases(root), holders, self.fits, hints=self._starts
        )

    def starts(self) -> dict[names.WorkloadKey, float]:
        """Where the plans placed each holder's reservation last, for the next cycle's."""
        return self._starts

    def ends(self) -> Ends:
        """When admitted work gives its quota back, as given and as this cycle worked it out."""
        return self._ends

    def changed(self, cq: names.ClusterQueueName) -> None:
        """The cycle changed the tree's usage otherwise: make its plan again.

        A hold, or quota taken for a workload that does not start (it waits for PodsReady).
        Made again, not answered again: a plan places its holders only as far as a question
        needs, so one kept in use would place those not asked about yet against the new usage
        and those asked about against the old, and decide otherwise than a plan made now.
        """
        root = self.root_of(cq)
        self.plans.pop(root, None)
        self.changed_roots.add(root)

    def _releases(self, root: str) -> list[planning.Release]:
        """When the tree's admitted work, and then what this cycle started, gives its quota back.

        In this order, so that a plan sorts them as one that started those of this cycle one by
        one (``planning.Plan.started``) holds them: the latest last among equal ends.
        """
        releases = []
        worked_out: dict[names.WorkloadKey, tuple[snapshot.AdmittedWorkload, planning.Release]]
        worked_out = {}
        for name in self._queues_of(root):
            for adm in self.snap.admitted.get(name, {}).values():
                key = adm.info.key
                if adm.evicted or key in self.preempted:
                    releases.append(planning.Release(self.now, name, adm.admission.usage))
                    continue
                found = self._ends.get(key)
                if found is None or found[0] is not adm or found[1].end <= self.now:
                    release = planning.Release(
                        self._end(adm.info, name, adm.reserved_at), name, adm.admission.usage
                    )
                    found = worked_out[key] = (adm, release)
                releases.append(found[1])
        if worked_out:
            self._ends = {**self._ends, **worked_out}
        releases += self.started_here.get(root, [])
        return releases

    def held(
        self,
        info: workload.WorkloadInfo,
        cq: names.ClusterQueueName,
        usage: resources.FlavorResourceAmounts,
        *,
        borrows: bool,
    ) -> str | None:
        """Why a workload that fits must wait for a reservation it would delay, if it must."""
        plan = self.plan(self.root_of(cq))
        if plan is None:
            return None
        runtime = self.inputs.estimate(info, cq)
        limit = info.runtime_limit
        bounded = math.inf if limit is None else self.now + limit
        ends = planning.Ends(self.now + runtime.seconds, bounded)
        r = plan.delayed_by(info, cq, usage, ends, borrows=borrows)
        if r is None:
            return None
        which = f"the reservation of {r.holder.info.key} in ClusterQueue {r.holder.cluster_queue}"
        if not plan.by_limit(r):
            estimated = runtime.describe()
            return f"Workload fits, but its estimated runtime of {estimated} would delay {which}"
        if limit is None:
            return (
                f"Workload fits, but it would delay {which}, and that queue lets only a runtime "
                "limit (activeDeadlineSeconds) ending before a reservation run ahead of it; "
                "this workload has none"
            )
        return (
            f"Workload fits, but its runtime limit of {duration.format(limit)} would delay {which}"
        )

    def started(
        self,
        info: workload.WorkloadInfo,
        cq: names.ClusterQueueName,
        usage: resources.FlavorResourceAmounts,
    ) -> None:
        """A workload took its quota in this cycle: it is running work from now on.

        The tree's plan takes it in (``planning.Plan.started``), unless victims were chosen
        since the plan was made (they end now, which a plan cannot take in) or flavors are
        placed by topology (what a release gives back there is more than quota); then the plan
        is made again when next needed.
        """
        root = self.root_of(cq)
        release = planning.Release(self._end(info, cq, self.now), cq, usage)
        self.started_here.setdefault(root, []).append(release)
        plan = self.plans.get(root)
        if (
            plan is not None
            and root not in self.changed_roots
            and self._victims_seen.get(root) == len(self.preempted)
            and not self.snap.placements
        ):
            plan.started(release)
        else:
            self.plans.pop(root, None)
            self.changed_roots.add(root)

    def blocked(self, info: workload.WorkloadInfo, cq: snapshot.ClusterQueueInfo) -> float | None:
        """A Backfill head that waits holds a reservation from now on: when does it start?

        None when its queue does not use the strategy, when enough workloads ahead of it hold
        reservations already, or when waiting cannot make it fit.
        """
        if cq.backfill is None:
            return None
        mine = self.holders.setdefault(cq.name, [])
        key = ordering.queue_key(info)
        ahead = sum(ordering.queue_key(h) < key for h in mine)
        if info in mine or ahead >= cq.backfill.reservation_depth:
            return None
        mine.append(info)
        root = self.root_of(cq.name)
        self._given.pop(root, None)
        plan = self.plans.get(root)
        last = None if plan is None else plan.last_key()
        if plan is not None and (last is None or last < planning.holder_key(info)):
            # Behind every holder placed: the others keep their reservations.
            found = plan.add(self._holder(info, cq.name))
            self.made_with.setdefault(root, {})[(cq.name, info.key)] = info
            return None if found is None else found.start
        given = self.made_with.get(root)
        if plan is not None and given is not None:
            wanted = {**given, (cq.name, info.key): info}
            if self._holders_of(root) == wanted:
                # A plan made again would have the same holders and this one: those ahead of it
                # keep their reservations, and those behind it are placed again.
                plan.insert(self._holder(info, cq.name))
                self.made_with[root] = wanted
                held = plan.reservation_of(info)
                return None if held is None else held.start
        self.plans.pop(root, None)
        return self.start_of(info, cq.name)

    def start_of(self, info: workload.WorkloadInfo, cq: names.ClusterQueueName) -> float | None:
        """When its reservation starts, placed behind the holders if it is none of them."""
        root = self.root_of(cq)
        plan = self.plan(root)
        if plan is not None and any(info.key == h.key for h in self.holders.get(cq, [])):
            held = plan.reservation_of(info)
            return None if held is None else held.start
        if plan is None:
            plan = self._new_plan(root, [])
        placed = plan.add(self._holder(info, cq))
        return None if placed is None else placed.start


_Forced = dict[
    tuple[names.ClusterQueueName, names.WorkloadKey],
    tuple[workload.WorkloadInfo, snapshot.ClusterQueueInfo, resources.FlavorResourceAmounts],
]
"""Usage of assignments that quota alone decides, by queue and workload, with what they were
made for (the same objects, or the entry does not hold)."""


def _fits_now(
    snap: snapshot.Snapshot,
    forced: _Forced,
    name: names.ClusterQueueName,
    info: workload.WorkloadInfo,
) -> resources.FlavorResourceAmounts | None:
    """Its assignment's usage if it fits as the snapshot stands, preemption not considered.

    A plan asks this many times of each holder as it passes releases. When each resource the
    holder was given has a single flavor in its queue and nothing is placed by topology, the
    flavor cannot change and fitting is a quota check of the usage found the first time.
    """
    cq = snap.cluster_queues[name]
    node = snap.node(name)
    known = forced.get((name, info.key))
    if known is not None and known[0] is info and known[1] is cq:
        usage = known[2]
        if all(amount <= node.available(fr) for fr, amount in usage.items()):
            return dict(usage)
        return None
    if not _may_fit(cq, node, info):
        return None

    def no_preemption(
        fr: resources.FlavorResource, amount: int
    ) -> tuple[flavors.PreemptionMode, int]:
        borrow, _ = quota.lowest_fitting_subtree_height(node, fr, amount)
        return flavors.PreemptionMode.NO_CANDIDATES, borrow

    found = flavors.FlavorAssigner(snap, cq, info, no_preemption, fair_sharing=False)
    assignment = found.assign()
    if assignment.mode != flavors.Mode.FIT:
        return None
    if _decided_by_quota(snap, cq, info, assignment.usage):
        forced[(name, info.key)] = (info, cq, dict(assignment.usage))
    return assignment.usage


def _decided_by_quota(
    snap: snapshot.Snapshot,
    cq: snapshot.ClusterQueueInfo,
    info: workload.WorkloadInfo,
    usage: resources.FlavorResourceAmounts,
) -> bool:
    """Tell whether a fitting assignment fits again exactly when its usage fits in quota.

    So it is when its only choices were single flavors and nothing is placed by topology:
    flavor assignment then checks each resource's total against what is available.
    """
    if cq.topology_only or any(ps.topology is not None for ps in info.pod_sets):
        return False
    for fr in usage:
        group = cq.group_by_resource.get(fr.resource)
        if group is None or len(group.flavors) != 1 or fr.flavor in snap.placements:
            return False
    return True


def _may_fit(
    cq: snapshot.ClusterQueueInfo, node: quota.QuotaNode, info: workload.WorkloadInfo
) -> bool:
    """A quick necessary condition: each resource's total fits in its flavors together."""
    totals: dict[names.ResourceName, int] = {}
    for ps in info.pod_sets:
        for res, amount in ps.per_pod.items():
            totals[res] = totals.get(res, 0) + amount * ps.count
    for res, total in totals.items():
        group = cq.group_by_resource.get(res)
        if group is None:
            return True  # flavor assignment explains why it cannot fit
        room = sum(node.available(resources.FlavorResource(f, res)) for f in group.flavors)
        if room < total:
            return False
    return True


def _first_blocked(
    planner: Planner, cq: snapshot.ClusterQueueInfo, order: Sequence[workload.WorkloadInfo]
) -> list[workload.WorkloadInfo]:
    """A queue's holders as its cycles would have parked them.

    The first workloads of its ``order`` that do not fit now, as many as its reservation depth.
    """
    depth = cq.backfill.reservation_depth if cq.backfill is not None else 0
    blocked: list[workload.WorkloadInfo] = []
    for info in order:
        if len(blocked) == depth:
            break
        if planner.fits(cq.name, info) is None:
            blocked.append(info)
    return blocked


def outlook(
    snap: snapshot.Snapshot,
    cq: snapshot.ClusterQueueInfo,
    info: workload.WorkloadInfo,
    assignment: flavors.Assignment,
    *,
    now: float,
    inputs: Inputs,
    ahead: Sequence[workload.WorkloadInfo],
) -> tuple[str | None, float | None]:
    """What the Backfill strategy says of one pending workload, for ``berth explain``.

    The holders of its own queue are the first workloads ``ahead`` of it that do not fit now
    (what the cycles would have parked). Returns why it waits for a reservation although it
    fits, or else when its own reservation would start (placed behind the holders).
    """
    planner = Planner(snap, now, inputs, {})
    if cq.backfill is not None:
        others = [a for a in ahead if a.key != info.key]
        planner.holders[cq.name] = _first_blocked(planner, cq, others)
    if assignment.mode == flavors.Mode.FIT:
        borrows = assignment.borrowing > 0
        return planner.held(info, cq.name, assignment.usage, borrows=borrows), None
    return None, planner.start_of(info, cq.name)


def current(
    snap: snapshot.Snapshot,
    now: float,
    inputs: Inputs,
    order: Mapping[names.ClusterQueueName, Sequence[workload.WorkloadInfo]],
) -> list[planning.Reservation]:
    """Every reservation of the Backfill queues now, for ``berth queues``.

    A queue's holders are the first workloads of its ``order`` that do not fit now (what the
    cycles would have parked), as many as its reservation depth.
    """
    planner = Planner(snap, now, inputs, {})
    for name, infos in sorted(order.items()):
        cq = snap.cluster_queues.get(name)
        if cq is not None and cq.backfill is not None:
            planner.holders[name] = _first_blocked(planner, cq, infos)
    out: list[planning.Reservation] = []
    for root in sorted({planner.root_of(name) for name in planner.holders}):
        plan = planner.plan(root)
        if plan is not None:
            out += plan.placed()
    return out
