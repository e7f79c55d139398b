"""The world as one scheduling cycle sees it: queues, cohorts, flavors, admitted workloads.

``Snapshot`` holds the quota tree (``berth.core.quota``), each ClusterQueue's settings
(``ClusterQueueInfo``), the flavors, the namespaces' labels and every admitted workload per
ClusterQueue. It is mutable: ``berth.state`` keeps one up to date from events and commits each
change; the cycle makes tentative changes inside ``what_if()``, which rolls them back exactly.
Built by ``berth.state.cache``; read and tentatively changed by the cycle and preemption.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator

from berth.api import clusterqueue, names, pod, selector
from berth.api import protection as api_protection
from berth.core import quota, resources, topology, workload


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceGroupInfo:
    """Resources whose flavor is chosen together, and the flavors to try in order."""

    covered: tuple[names.ResourceName, ...]
    flavors: tuple[names.FlavorName, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class FlavorInfo:
    """What pods must accept to run on a flavor, and what it injects into them."""

    name: names.FlavorName
    node_labels: dict[str, str]
    node_taints: tuple[pod.Taint, ...]
    tolerations: tuple[pod.Toleration, ...]
    topology_name: str | None = None
    """The Topology its nodes are placed by, for a topology-aware flavor."""


@dataclasses.dataclass(slots=True)
class FlavorPlacement:
    """A topology-aware flavor's domains and what placed workloads take from them."""

    tree: topology.Tree
    usage: topology.Usage


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterQueueInfo:
    """A ClusterQueue's settings, as the core reads them."""

    name: names.ClusterQueueName
    cohort: names.CohortName | None
    groups: tuple[ResourceGroupInfo, ...]
    group_by_resource: dict[names.ResourceName, ResourceGroupInfo]
    strategy: clusterqueue.QueueingStrategy
    namespace_selector: selector.LabelSelector | None
    fungibility: clusterqueue.FlavorFungibility
    preemption: clusterqueue.ClusterQueuePreemption
    stop_policy: clusterqueue.StopPolicy
    fair_weight: int
    """Fair-sharing weight in thousandths (1000 = weight 1)."""
    topology_only: bool = False
    """Every flavor is topology-aware: pod sets that ask for no placement are placed anyway,
    anywhere (Kueue's implied topology-aware scheduling)."""
    backfill: clusterqueue.Backfill | None = None
    """Reservation and estimate settings when the strategy is Backfill; None otherwise."""
    protection: api_protection.PreemptionProtection | None = None
    """Its own preemption protection windows (``spec.preemptionProtection``), if it sets any."""
    budget: api_protection.PreemptionBudget | None = None
    """How many of its workloads may be preempted per window (``spec.preemptionBudget``)."""
    usage_based: bool = False
    """Its ``admissionScope.admissionMode`` is UsageBasedAdmissionFairSharing: its LocalQueues
    are ordered by decayed usage when the Configuration enables it."""
    inactive_reason: str | None = None
    """Why the queue cannot admit (``FlavorNotFound``, ``Stopped``, a cohort cycle).

    None while the queue is active.
    """
    inactive_message: str = ""

    @property
    def active(self) -> bool:
        """Tell whether the queue may admit workloads."""
        return self.inactive_reason is None


@dataclasses.dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    """A workload counted against a ClusterQueue's quota."""

    info: workload.WorkloadInfo
    admission: workload.Admission
    reserved_at: float
    evicted: bool = False

    @property
    def cluster_queue(self) -> names.ClusterQueueName:
        """The ClusterQueue whose quota it uses."""
        return self.admission.cluster_queue


class Snapshot:
    """Quota tree, queue settings and admitted workloads, with exact rollback of what-ifs."""

    def __init__(self) -> None:
        self.journal = quota.Journal()
        self.cluster_queues: dict[names.ClusterQueueName, ClusterQueueInfo] = {}
        self.cq_nodes: dict[names.ClusterQueueName, quota.QuotaNode] = {}
        self.cohort_nodes: dict[names.CohortName, quota.QuotaNode] = {}
        self.cohort_weights: dict[names.CohortName, int] = {}
        self.cohort_budgets: dict[names.CohortName, api_protection.PreemptionBudget] = {}
        """The cohorts that set ``spec.preemptionBudget``."""
        self.flavors: dict[names.FlavorName, FlavorInfo] = {}
        self.placements: dict[names.FlavorName, FlavorPlacement] = {}
        """Topology-aware flavors whose Topology exists, with their domains."""
        self.namespaces: dict[str, dict[str, str]] = {}
        self.admitted: dict[names.ClusterQueueName, dict[names.WorkloadKey, AdmittedWorkload]] = {}
        self.usage_based_cohorts: set[names.CohortName] = set()
        """Cohorts whose ``admissionScope`` orders their ClusterQueues by decayed usage."""
        self.cluster_queue_score: Callable[[names.ClusterQueueName], float] | None = None
        """A ClusterQueue's decayed usage over its weight, set by the state while admission fair
        sharing is on: it orders the heads of a usage-based root cohort's queues."""
        self.local_queue_score: Callable[[names.WorkloadKey], float] | None = None
        """Admission fair sharing's score of a LocalQueue (``namespace/name``), set by the state
        while it is on: it orders preemption candidates of one ClusterQueue."""

    def head_score(self, cq: names.ClusterQueueName) -> float:
        """What orders ``cq``'s head among its root cohort's heads (0 unless usage-based)."""
        score = self.cluster_queue_score
        node = self.cq_nodes.get(cq)
        if score is None or node is None:
            return 0.0
        root = node.root()
        if not root.is_cohort or names.CohortName(root.name) not in self.usage_based_cohorts:
            return 0.0
        return score(cq)

    def candidate_score(
        self, cq: names.ClusterQueueName
    ) -> Callable[[AdmittedWorkload], float] | None:
        """The score that orders ``cq``'s own preemption candidates, if it uses fair usage."""
        score = self.local_queue_score
        info = self.cluster_queues.get(cq)
        if score is None or info is None or not info.usage_based:
            return None
        return lambda adm: score(
            names.WorkloadKey(adm.info.key.namespace, adm.info.local_queue or "")
        )

    # Usage ------------------------------------------------------------------------------------

    def add_usage(self, cq: names.ClusterQueueName, usage: resources.FlavorResourceAmounts) -> None:
        """Count ``usage`` against ``cq`` (and, beyond its local quota, its cohorts)."""
        node = self.cq_nodes.get(cq)
        if node is None:
            return
        for fr, amount in usage.items():
            if amount:
                node.add_usage(fr, amount)

    def remove_usage(
        self, cq: names.ClusterQueueName, usage: resources.FlavorResourceAmounts
    ) -> None:
        """Stop counting ``usage`` against ``cq``."""
        node = self.cq_nodes.get(cq)
        if node is None:
            return
        for fr, amount in usage.items():
            if amount:
                node.remove_usage(fr, amount)

    def add_admission(self, adm: workload.Admission) -> None:
        """Count an admission: its quota and, in topology-aware flavors, its placements."""
        self.add_usage(adm.cluster_queue, adm.usage)
        self.place(adm.placed, 1)

    def remove_admission(self, adm: workload.Admission) -> None:
        """Stop counting an admission's quota and placements."""
        self.remove_usage(adm.cluster_queue, adm.usage)
        self.place(adm.placed, -1)

    def place(self, placed: tuple[topology.Placed, ...], sign: int) -> None:
        """Count (``sign`` 1) or release (-1) placements in their flavors' domains."""
        for p in placed:
            fp = self.placements.get(p.flavor)
            if fp is None:
                continue
            for values, amounts in p.leaves:
                leaf = fp.tree.leaf_index(values)
                if leaf is not None:  # a node that left counts nowhere
                    fp.usage.add(leaf, dict(amounts), sign)

    def add_workload(self, adm: AdmittedWorkload) -> None:
        """Record an admitted workload and count its usage (a committed change)."""
        self.admitted.setdefault(adm.cluster_queue, {})[adm.info.key] = adm
        self.add_admission(adm.admission)

    def remove_workload(self, key: names.WorkloadKey, cq: names.ClusterQueueName) -> None:
        """Forget an admitted workload and release its usage (a committed change)."""
        adm = self.admitted.get(cq, {}).pop(key, None)
        if adm is not None:
            self.remove_admission(adm.admission)

    def replace_workload(self, adm: AdmittedWorkload) -> None:
        """Replace the record of an admitted workload without changing its usage."""
        self.admitted.setdefault(adm.cluster_queue, {})[adm.info.key] = adm

    @contextlib.contextmanager
    def what_if(self) -> Iterator[None]:
        """Run a block whose usage changes are all undone when it ends."""
        mark = self.journal.checkpoint()
        try:
            yield
        finally:
            self.journal.rollback(mark)

    def commit(self) -> None:
        """Make every usage change so far permanent (drops the undo log)."""
        self.journal.commit()

    # Questions --------------------------------------------------------------------------------

    def node(self, cq: names.ClusterQueueName) -> quota.QuotaNode:
        """Return the quota node of a ClusterQueue."""
        return self.cq_nodes[cq]

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """Return a namespace's labels, or None if it does not exist."""
        return self.namespaces.get(namespace)

    def placed_fits(self, placed: tuple[topology.Placed, ...]) -> bool:
        """Tell whether placements made earlier still have room in their domains."""
        for p in placed:
            fp = self.placements.get(p.flavor)
            if fp is None:
                return False
            for values, amounts in p.leaves:
                leaf = fp.tree.leaf_index(values)
                if leaf is None:
                    return False
                free = fp.tree.free[leaf]
                if any(
                    fp.usage.of(leaf, res) + amount > free.get(res, 0) for res, amount in amounts
                ):
                    return False
        return True

    def usage_of(self, cq: names.ClusterQueueName) -> resources.FlavorResourceAmounts:
        """Return a ClusterQueue's current usage per flavor-resource."""
        node = self.cq_nodes.get(cq)
        return {} if node is None else dict(node.usage)
