"""Why a workload is not admitted, computed by running the core on the current snapshot.

``explain`` answers, for one pending workload: the blocker before any quota is looked at
(missing or inactive ClusterQueue, a namespace the queue's ``namespaceSelector`` rejects), its
place in its LocalQueue and ClusterQueue and, under StrictFIFO, the head it waits behind; what
would have to free up (per flavor and resource, the amount beyond what is available now, or that
the request exceeds what the queue could ever get); and which admitted workloads the core's own
preemption search would evict for it under the ClusterQueue's policy, or which of them a
preemption protection keeps, and until when it keeps enough of them that the workload cannot
preempt. It runs flavor assignment and the preemption search inside ``Snapshot.what_if``, so the
snapshot is left unchanged.

Pure: the operator (against its live state) and ``berth explain --scenario`` (against a
simulated state) both call it through ``berth.state.explain``.
"""

from __future__ import annotations

import dataclasses
import functools

from berth.api import clusterqueue, conditions, names
from berth.core import cycle, flavors, preemption, protection, resources, snapshot, workload
from berth.core.backfill import reservations

_PENDING = conditions.PendingReason


@dataclasses.dataclass(frozen=True, slots=True)
class Shortfall:
    """What must free up in one flavor-resource for the workload to fit there."""

    flavor: str
    resource: str
    requested: int
    available: int
    """What the ClusterQueue could use there now (own quota and borrowable)."""
    maximum: int
    """What it could use if nothing else ran (nominal plus what it may borrow)."""

    @property
    def needed(self) -> int:
        """How much must free up."""
        return max(0, self.requested - self.available)

    @property
    def never_fits(self) -> bool:
        """The request exceeds what the ClusterQueue could ever get there."""
        return self.requested > self.maximum


@dataclasses.dataclass(frozen=True, slots=True)
class Victim:
    """An admitted workload the preemption search would evict, and why."""

    workload: str
    cluster_queue: str
    priority: int
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Explanation:
    """Everything ``berth explain`` says about one workload."""

    workload: str
    cluster_queue: str | None
    local_queue: str | None
    reason: str
    """The core's reason (Kueue's vocabulary: WaitingForQuota, NoMatchingFlavor, ...)."""
    message: str
    blocker: str
    """Which of the checks stopped it: queue, namespace, head-of-line, quota, flavor,
    reservation (Backfill), none."""
    position_in_cluster_queue: int | None = None
    position_in_local_queue: int | None = None
    ahead: tuple[str, ...] = ()
    """Workloads before it in its ClusterQueue, in order."""
    head: str | None = None
    """Under StrictFIFO, the blocked head it waits behind."""
    head_reason: str = ""
    head_message: str = ""
    shortfalls: tuple[Shortfall, ...] = ()
    victims: tuple[Victim, ...] = ()
    preemption_policy: str = ""
    """The ClusterQueue's preemption settings, as a person reads them."""
    details: tuple[str, ...] = ()
    """Further facts a person can act on (selectors, labels, missing flavors)."""
    estimated_start: float | None = None
    """Backfill: when its reservation starts (or would, if it were the next to hold one); or,
    for a preemptor that waits only for protections to end, when they let it preempt."""
    protected: protection.Protected | None = None
    """Workloads it could preempt that are protected now, and when the first protection ends."""
    spent: protection.Spent | None = None
    """Preemption budgets spent now that its victims count against, and when the first lets one
    more go."""


@dataclasses.dataclass(frozen=True, slots=True)
class Queued:
    """Where the workload waits: its ClusterQueue's pending workloads in queue order."""

    order: tuple[workload.WorkloadInfo, ...]
    strategy: clusterqueue.QueueingStrategy


def _policy_text(cq: snapshot.ClusterQueueInfo) -> str:
    p = cq.preemption
    return (
        f"withinClusterQueue={p.within_cluster_queue.value}, "
        f"reclaimWithinCohort={p.reclaim_within_cohort.value}, "
        f"borrowWithinCohort={p.borrow_within_cohort.policy.value}"
    )


def _selector_text(cq: snapshot.ClusterQueueInfo) -> str:
    sel = cq.namespace_selector
    if sel is None:
        return "none (matches no namespace)"
    parts = [f"{k}={v}" for k, v in sorted(sel.match_labels.items())]
    parts.extend(
        f"{e.key} {e.operator.value} ({', '.join(e.values)})" for e in sel.match_expressions
    )
    return ", ".join(parts) or "{} (matches every namespace)"


def _shortfalls(
    snap: snapshot.Snapshot, cq: snapshot.ClusterQueueInfo, assignment: flavors.Assignment
) -> list[Shortfall]:
    node = snap.node(cq.name)
    out: list[Shortfall] = []
    for ps in assignment.pod_sets:
        for res in sorted(ps.requests):
            group = cq.group_by_resource.get(res)
            amount = ps.requests[res]
            if group is None or not amount:
                continue
            for flavor in group.flavors:
                if flavor not in snap.flavors:
                    continue
                attempt = ps.attempts.get(flavor)
                if attempt is not None and attempt[1] == _PENDING.NO_MATCHING_FLAVOR.value:
                    continue
                fr = resources.FlavorResource(flavor, res)
                available = node.available(fr)
                if amount > available:
                    out.append(
                        Shortfall(flavor, res, amount, available, node.potential_available(fr))
                    )
    return out


def _position(
    info: workload.WorkloadInfo, queued: Queued | None
) -> tuple[int | None, int | None, tuple[str, ...]]:
    if queued is None:
        return None, None, ()
    keys = [w.key for w in queued.order]
    if info.key not in keys:
        return None, None, ()
    at = keys.index(info.key)
    same_lq = [
        w.key
        for w in queued.order
        if w.local_queue == info.local_queue and w.key.namespace == info.key.namespace
    ]
    return at, same_lq.index(info.key), tuple(str(k) for k in keys[:at])


def _verdict(
    assignment: flavors.Assignment,
    victims: tuple[Victim, ...],
    waits_for: str | None,
    held: bool,
) -> tuple[str, str, str]:
    """Reason, message and blocker of a workload its queue's order does not hold back."""
    mode = assignment.mode
    if mode == flavors.Mode.FIT and waits_for is not None:
        return _PENDING.WAITING_FOR_RESERVATION, waits_for, "reservation"
    if mode == flavors.Mode.FIT:
        return "", "it fits now; it will be admitted in the next cycle", "none"
    if mode == flavors.Mode.PREEMPT and victims:
        message = f"{assignment.message()}. Fits after preempting {len(victims)} workload(s)"
        return _PENDING.WAITING_FOR_PREEMPTED_WORKLOADS, message, "quota"
    if held:
        return _PENDING.WAITING_FOR_QUOTA, assignment.message(), "protection"
    reason = assignment.no_fit_reason or _PENDING.WAITING_FOR_QUOTA
    blocker = "flavor" if reason == _PENDING.NO_MATCHING_FLAVOR else "quota"
    return reason, assignment.message(), blocker


def explain(
    snap: snapshot.Snapshot,
    info: workload.WorkloadInfo,
    cluster_queue: names.ClusterQueueName | None,
    policy: cycle.Policy,
    *,
    queued: Queued | None = None,
    held: tuple[str, str] | None = None,
    backfill: reservations.Inputs | None = None,
    now: float = 0.0,
    evictions: protection.Evictions | None = None,
) -> Explanation:
    """Explain why ``info`` is not admitted in ``cluster_queue`` on this snapshot.

    ``held`` is the reason and message of a queue-level hold the snapshot does not show (a
    stopped LocalQueue), from the state. ``backfill``: the estimates (and other queues'
    holders) a Backfill queue plans with at ``now``. ``evictions``: the state's record for
    the preemption budgets (``protection.Budgets``).
    """
    made = functools.partial(Explanation, str(info.key), cluster_queue, info.local_queue)
    if cluster_queue is None:
        return made(
            reason=_PENDING.MISCONFIGURED,
            message=f"LocalQueue {info.local_queue} doesn't exist",
            blocker="queue",
            details=(f"create LocalQueue {info.key.namespace}/{info.local_queue}",),
        )
    cq = snap.cluster_queues.get(cluster_queue)
    if cq is None or cluster_queue not in snap.cq_nodes:
        return made(
            reason=_PENDING.MISCONFIGURED,
            message=f"ClusterQueue {cluster_queue} doesn't exist",
            blocker="queue",
        )
    policy_text = _policy_text(cq)
    if not cq.active:
        missing = cq.inactive_reason == conditions.QueueActiveReason.FLAVOR_NOT_FOUND
        return made(
            reason=_PENDING.SUSPENDED,
            message=f"ClusterQueue {cq.name} is inactive: {cq.inactive_message}",
            blocker="flavor" if missing else "queue",
            preemption_policy=policy_text,
            details=(f"{cq.inactive_reason}: {cq.inactive_message}",),
        )
    if held is not None:
        return made(reason=held[0], message=held[1], blocker="queue", preemption_policy=policy_text)
    labels = snap.namespace_labels(info.key.namespace)
    if labels is None or cq.namespace_selector is None or not cq.namespace_selector.matches(labels):
        shown = ", ".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "none"
        return made(
            reason=_PENDING.MISCONFIGURED,
            message="workload namespace doesn't match ClusterQueue selector",
            blocker="namespace",
            preemption_policy=policy_text,
            details=(
                f"ClusterQueue {cq.name} namespaceSelector: {_selector_text(cq)}",
                f"namespace {info.key.namespace} labels: {shown}",
            ),
        )
    cq_pos, lq_pos, ahead = _position(info, queued)
    guard = protection.Guard(
        snap, policy.protection, now, protection.Budgets(snap, evictions or {}, now)
    )
    with snap.what_if():
        assignment, targets, protected, spent = _search(snap, cq, info, policy, guard)
        shortfalls = _shortfalls(snap, cq, assignment)
        head_info = None
        if (
            queued is not None
            and queued.strategy == clusterqueue.QueueingStrategy.STRICT_FIFO
            and cq_pos
        ):
            head_info = queued.order[0]
            head_assignment, _ = cycle.get_assignment(snap, cq, head_info, policy)
        waits_for, start = None, None
        if backfill is not None and cq.backfill is not None:
            ahead_infos = queued.order[: cq_pos or 0] if queued is not None else ()
            waits_for, start = reservations.outlook(
                snap, cq, info, assignment, now=now, inputs=backfill, ahead=ahead_infos
            )
        if start is None and (protected is not None or spent is not None):
            start = _unprotected_start(
                snap, cq, info, policy=policy, guard=guard, evictions=evictions or {}
            )
    victims = tuple(
        Victim(str(t.victim.info.key), t.victim.cluster_queue, t.victim.info.priority, t.reason)
        for t in targets
    )
    kept = protected is not None or spent is not None
    reason, message, blocker = _verdict(assignment, victims, waits_for, kept)
    if head_info is not None:
        head_reason = head_assignment.no_fit_reason or _PENDING.WAITING_FOR_QUOTA
        return made(
            reason=_PENDING.PENDING_EVALUATION,
            message=(
                f"StrictFIFO: waits behind the head of ClusterQueue {cq.name}, "
                f"{head_info.key}, which cannot be admitted"
            ),
            blocker="head-of-line",
            position_in_cluster_queue=cq_pos,
            position_in_local_queue=lq_pos,
            ahead=ahead,
            head=str(head_info.key),
            head_reason=head_reason,
            head_message=head_assignment.message(),
            shortfalls=tuple(shortfalls),
            victims=victims,
            preemption_policy=policy_text,
            details=(f"on its own: {reason or 'fits'}: {message}",),
            estimated_start=start,
            protected=protected,
            spent=spent,
        )
    return made(
        reason=reason,
        message=message,
        blocker=blocker,
        position_in_cluster_queue=cq_pos,
        position_in_local_queue=lq_pos,
        ahead=ahead,
        shortfalls=tuple(shortfalls),
        victims=victims,
        preemption_policy=policy_text,
        estimated_start=start,
        protected=protected,
        spent=spent,
    )


def _search(
    snap: snapshot.Snapshot,
    cq: snapshot.ClusterQueueInfo,
    info: workload.WorkloadInfo,
    policy: cycle.Policy,
    guard: protection.Guard,
) -> tuple[
    flavors.Assignment,
    list[preemption.Target],
    protection.Protected | None,
    protection.Spent | None,
]:
    """The cycle's search, and what protections and budgets kept back when it found no victims.

    Victims that together would overspend a budget are no victims: the cycle keeps the
    preemptor waiting for that budget (``cycle._Cycle._overspends``).
    """
    assignment, targets = cycle.get_assignment(snap, cq, info, policy, guard=guard)
    if targets and guard.budgets is not None:
        over = guard.budgets.spent(t.victim for t in targets)
        if over is not None:
            guard.note(over)
            targets = []
    if targets:
        return assignment, targets, None, None
    return assignment, targets, guard.protected(), guard.spent()


_PROTECTION_STEPS = 16
"""How many protection ends ``_unprotected_start`` looks past, at most, before it gives up."""


def _unprotected_start(
    snap: snapshot.Snapshot,
    cq: snapshot.ClusterQueueInfo,
    info: workload.WorkloadInfo,
    *,
    policy: cycle.Policy,
    guard: protection.Guard,
    evictions: protection.Evictions,
) -> float | None:
    """When protections and budgets let ``info`` preempt, if nothing else changes.

    The search runs again at the end of each protection or budget hold in turn, the first
    first, until it finds victims; None when it finds none within ``_PROTECTION_STEPS`` ends.
    """
    at = guard.until()
    for _ in range(_PROTECTION_STEPS):
        if at is None:
            return None
        later = protection.Guard(
            snap, policy.protection, at, protection.Budgets(snap, evictions, at)
        )
        _, targets, _, _ = _search(snap, cq, info, policy, later)
        if targets:
            return at
        at = later.until()
    return None
