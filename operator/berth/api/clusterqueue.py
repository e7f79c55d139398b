"""The ClusterQueue kind: quota per flavor and resource, cohort, queueing and preemption policy.

The core reads its spec through ``berth.state``; its status is written by the operator.
"""

from __future__ import annotations

import enum
from typing import ClassVar

import pydantic

from berth.api import base, duration, names, protection, quota, selector
from berth.api import conditions as cond


class QueueingStrategy(enum.StrEnum):
    """How a ClusterQueue orders and blocks its pending workloads."""

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"
    BACKFILL = "Backfill"
    """Berth's own: BestEffortFIFO whose first blocked heads hold reservations (spec.backfill)."""


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
    """When flavor assignment stops at a flavor that is not a perfect fit."""

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    """MayStopSearch: take the first flavor that fits by borrowing; TryNextFlavor: look for a
    flavor that fits without borrowing first."""
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    """MayStopSearch: take the first flavor that fits by preempting; TryNextFlavor: look for a
    flavor that fits without preemption first."""
    preference: FungibilityPreference | None = None
    """Which imperfect flavor wins when no flavor fits perfectly; only allowed when both
    policies are TryNextFlavor."""


class PreemptionPolicy(enum.StrEnum):
    """Which workloads may be preempted (``withinClusterQueue``, ``reclaimWithinCohort``, ...)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class BorrowWithinCohort(base.Model):
    """Preemption of other queues' workloads while the preemptor itself borrows."""

    policy: PreemptionPolicy = pydantic.Field(
        default=PreemptionPolicy.NEVER, json_schema_extra={"enum": ["Never", "LowerPriority"]}
    )
    """Never, or LowerPriority: while borrowing, preempt lower-priority workloads of other
    queues in the cohort. Requires reclaimWithinCohort other than Never."""
    max_priority_threshold: int | None = None
    """Only workloads at or below this priority may be preempted this way; unset means any
    lower priority."""


class ClusterQueuePreemption(base.Model):
    """A ClusterQueue's preemption policy."""

    reclaim_within_cohort: PreemptionPolicy = pydantic.Field(
        default=PreemptionPolicy.NEVER,
        json_schema_extra={"enum": ["Never", "LowerPriority", "Any"]},
    )
    """Whether a workload that fits in this queue's nominal quota may preempt workloads of
    other queues that borrow it: Never, LowerPriority (only lower-priority ones) or Any."""
    within_cluster_queue: PreemptionPolicy = pydantic.Field(
        default=PreemptionPolicy.NEVER,
        json_schema_extra={"enum": ["Never", "LowerPriority", "LowerOrNewerEqualPriority"]},
    )
    """Whether a workload that does not fit may preempt workloads of this queue: Never,
    LowerPriority, or LowerOrNewerEqualPriority (also newer ones of equal priority)."""
    borrow_within_cohort: BorrowWithinCohort = pydantic.Field(default_factory=BorrowWithinCohort)
    """Preemption in other queues while the preemptor borrows."""


class AheadOfReservations(enum.StrEnum):
    """What lets a workload run before a reservation it would otherwise delay."""

    ESTIMATE = "Estimate"
    """Its estimate ends before the reservation starts (an annotation or a learned runtime,
    neither enforced: a job that runs longer delays the reservation)."""
    RUNTIME_LIMIT = "RuntimeLimit"
    """Only its runtime limit, enforced by its controller (``activeDeadlineSeconds``), ends
    before the reservation starts (Slurm's rule: backfill goes by time limits)."""


class Backfill(base.Model):
    """Reservations for blocked heads and backfill around them (``queueingStrategy: Backfill``)."""

    reservation_depth: int = pydantic.Field(default=1, ge=1, le=16)
    """How many blocked workloads, in queue order, hold a reservation at their earliest start:
    1 is EASY backfill, more is conservative backfill."""
    default_runtime: duration.Duration = 3600.0
    """The runtime assumed for a workload with no limit, no berth.dev/expected-runtime
    annotation and too little history in its LocalQueue."""
    learned_percentile: int = pydantic.Field(default=90, ge=1, le=100)
    """The percentile of the recent runtimes of similar finished workloads in the same LocalQueue
    taken as the estimate."""
    ahead_of_reservations: AheadOfReservations = AheadOfReservations.ESTIMATE
    """What lets a workload start before one of this queue's reservations that it would delay
    (it must end before the reservation starts): its Estimate, or only its RuntimeLimit
    (activeDeadlineSeconds), so that no understated berth.dev/expected-runtime jumps a
    reservation. Either way a workload may run beside a reservation that keeps its room."""

    _durations = pydantic.field_validator("default_runtime", mode="before")(duration.field_parser)

    @pydantic.field_serializer("default_runtime")
    def _print_duration(self, value: float) -> str:
        return duration.format(value)


class AdmissionMode(enum.StrEnum):
    """How a ClusterQueue orders the workloads of its LocalQueues (Kueue's AdmissionMode)."""

    USAGE_BASED = "UsageBasedAdmissionFairSharing"
    """The LocalQueue with the least decayed usage per weight first (the Configuration's
    ``admissionFairSharing``), then priority and time."""
    NONE = "NoAdmissionFairSharing"
    """By priority and time alone, whatever LocalQueue a workload came from."""


class AdmissionScope(base.Model):
    """Admission fair sharing among this queue's LocalQueues (Kueue's ``admissionScope``)."""

    admission_mode: AdmissionMode
    """UsageBasedAdmissionFairSharing or NoAdmissionFairSharing."""


class ClusterQueueSpec(base.Model):
    """Quotas, cohort and policies of a ClusterQueue (Kueue v1beta2 names and defaults)."""

    resource_groups: list[quota.ResourceGroup] = pydantic.Field(default_factory=list, max_length=16)
    """Quota per flavor and resource, in groups of resources whose flavor is chosen together
    (at most 256 flavors over all groups)."""
    cohort_name: names.CohortName | None = None
    """The cohort this queue borrows from and lends to; a cohort named only here exists
    implicitly."""
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    """StrictFIFO: the head blocks the queue until it is admitted; BestEffortFIFO: a head that
    cannot be admitted steps aside until something changes in the cohort; Backfill (Berth's
    own): as BestEffortFIFO, but the first blocked heads hold reservations at their estimated
    start and a later workload is admitted only if it does not delay them."""
    backfill: Backfill | None = None
    """Reservation depth and runtime estimates of the Backfill strategy (its defaults when
    unset); only allowed with queueingStrategy Backfill."""
    namespace_selector: selector.LabelSelector | None = None
    """Namespaces whose LocalQueues may submit to this queue; {} selects every namespace and
    an unset selector selects none."""
    flavor_fungibility: FlavorFungibility = pydantic.Field(default_factory=FlavorFungibility)
    """Whether flavor assignment stops at a flavor that needs borrowing or preemption."""
    preemption: ClusterQueuePreemption = pydantic.Field(default_factory=ClusterQueuePreemption)
    """Which workloads a pending workload may preempt."""
    preemption_protection: protection.PreemptionProtection | None = None
    """How long after admission this queue's workloads cannot be preempted, per kind of
    preemption; each window set here replaces the Configuration's for them."""
    preemption_budget: protection.PreemptionBudget | None = None
    """At most this many of this queue's workloads preempted per window (any reason); a
    preemptor whose victims would exceed it waits until the window lets one more go."""
    fair_sharing: quota.FairSharing | None = None
    """This queue's weight when fair sharing is enabled."""
    admission_scope: AdmissionScope | None = None
    """Order its LocalQueues' workloads by their decayed usage (needs the Configuration's
    admissionFairSharing); unset: NoAdmissionFairSharing."""
    stop_policy: StopPolicy = StopPolicy.NONE
    """None; Hold: admit nothing new; HoldAndDrain: also evict admitted workloads."""


class ClusterQueueFairSharingStatus(base.Model):
    """Status: the weighted dominant resource share."""

    weighted_share: int = 0
    """Largest ratio, over all resources, of usage above nominal quota to the capacity the
    cohort can lend, in thousandths and divided by the weight; 0 within nominal quota."""


class ClusterQueueStatus(base.Model):
    """Status of a ClusterQueue, as Kueue reports it."""

    conditions: list[cond.Condition] = pydantic.Field(default_factory=list)
    """Conditions; Active tells whether the queue can admit workloads."""
    flavors_reservation: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    """Quota reserved by workloads with QuotaReserved, per flavor and resource."""
    flavors_usage: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    """Quota used by admitted workloads, per flavor and resource."""
    pending_workloads: int = 0
    """Workloads waiting for admission."""
    reserving_workloads: int = 0
    """Workloads holding a quota reservation."""
    admitted_workloads: int = 0
    """Admitted workloads that have not finished."""
    fair_sharing: ClusterQueueFairSharingStatus | None = None
    """Fair-sharing state."""


class ClusterQueue(base.Object):
    """A pool of quota per flavor and resource that admits workloads from its LocalQueues."""

    KIND: ClassVar[str] = "ClusterQueue"

    spec: ClusterQueueSpec = pydantic.Field(default_factory=ClusterQueueSpec)
    """Quotas, cohort and policies."""
    status: ClusterQueueStatus | None = None
    """Usage and counts, written by the operator."""
