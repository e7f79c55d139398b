"""The ClusterQueue kind: quota per flavor and resource, cohort, queueing and preemption policy.

The core reads its spec through ``berth.state``; its status is written by the operator.
"""

from __future__ import annotations

import enum
from typing import ClassVar

import pydantic

from berth.api import base, names, quota, selector
from berth.api import conditions as cond


class QueueingStrategy(enum.StrEnum):
    """How a ClusterQueue orders and blocks its pending workloads."""

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class StopPolicy(enum.StrEnum):
    """Whether a queue admits new work, and whether it drains admitted work."""

    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class FungibilityPolicy(enum.StrEnum):
    """Whether flavor assignment may stop at a flavor that borrows or needs preemption."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FungibilityPreference(enum.StrEnum):
    """Which imperfect flavor wins when every flavor was tried."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class FlavorFungibility(base.Model):
    """Flavor fungibility: ``whenCanBorrow``, ``whenCanPreempt`` and ``preference``."""

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference | None = None


class PreemptionPolicy(enum.StrEnum):
    """Which workloads may be preempted (``withinClusterQueue``, ``reclaimWithinCohort``, ...)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class BorrowWithinCohort(base.Model):
    """Preemption of other queues' workloads while the preemptor itself borrows."""

    policy: PreemptionPolicy = PreemptionPolicy.NEVER
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(base.Model):
    """A ClusterQueue's preemption policy."""

    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: BorrowWithinCohort = pydantic.Field(default_factory=BorrowWithinCohort)


class ClusterQueueSpec(base.Model):
    """The spec of a ClusterQueue, with Kueue v1beta2 names and defaults."""

    resource_groups: list[quota.ResourceGroup] = pydantic.Field(default_factory=list, max_length=16)
    cohort_name: names.CohortName | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    namespace_selector: selector.LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = pydantic.Field(default_factory=FlavorFungibility)
    preemption: ClusterQueuePreemption = pydantic.Field(default_factory=ClusterQueuePreemption)
    fair_sharing: quota.FairSharing | None = None
    stop_policy: StopPolicy = StopPolicy.NONE


class ClusterQueueFairSharingStatus(base.Model):
    """Status: the weighted dominant resource share."""

    weighted_share: int = 0


class ClusterQueueStatus(base.Model):
    """Status of a ClusterQueue, as Kueue reports it."""

    conditions: list[cond.Condition] = pydantic.Field(default_factory=list)
    flavors_reservation: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    flavors_usage: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    fair_sharing: ClusterQueueFairSharingStatus | None = None


class ClusterQueue(base.Object):
    """A ClusterQueue (cluster-scoped; short name ``cq``)."""

    KIND: ClassVar[str] = "ClusterQueue"

    spec: ClusterQueueSpec = pydantic.Field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus | None = None
