"""Status conditions and the Kueue vocabulary of condition types and reasons.

Used by the core to explain decisions and by adapters to write statuses. Names and spellings are
Kueue's, so tools written for Kueue read Berth's statuses unchanged.
"""

from __future__ import annotations

import enum

from berth.api import base


class ConditionStatus(enum.StrEnum):
    """A condition's status."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(base.Model):
    """A Kubernetes status condition."""

    type: str
    """The condition's type, e.g. Admitted."""
    status: ConditionStatus
    """True, False or Unknown."""
    reason: str = ""
    """A CamelCase reason, e.g. Preempted."""
    message: str = ""
    """A human-readable explanation."""
    last_transition_time: str | None = None
    """When the status last changed (RFC 3339)."""
    observed_generation: int | None = None
    """The object's generation the condition was computed from."""


class WorkloadCondition(enum.StrEnum):
    """Workload condition types."""

    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    PODS_READY = "PodsReady"
    EVICTED = "Evicted"
    PREEMPTED = "Preempted"
    REQUEUED = "Requeued"
    FINISHED = "Finished"
    DEACTIVATION_TARGET = "DeactivationTarget"


class PendingReason(enum.StrEnum):
    """Why a workload is not admitted (``QuotaReserved=False`` reasons)."""

    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    MISCONFIGURED = "Misconfigured"
    SUSPENDED = "Suspended"
    PENDING_EVALUATION = "PendingEvaluation"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    INADMISSIBLE = "Inadmissible"
    ON_HOLD = "OnHold"
    TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
    """A topology-aware pod set cannot be placed even with every placed workload gone."""
    WAITING_FOR_RESERVATION = "WaitingForReservation"
    """Berth's Backfill strategy: it fits, but would delay a reservation ahead of it."""


class EvictionReason(enum.StrEnum):
    """Why an admitted workload was evicted (``Evicted=True`` reasons)."""

    PREEMPTED = "Preempted"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    DEACTIVATED = "Deactivated"
    ADMISSION_CHECK = "AdmissionCheck"
    NODE_FAILURES = "NodeFailures"
    JOB_CHANGED = "JobChanged"
    """Berth's own: the running job left its admitted shape past the webhooks (a template, a
    role or a count no hold can undo); it is stopped and queued again at its new shape, as
    Kueue's reconciler stops a job that is no longer ``EquivalentToWorkload``."""


class PreemptionReason(enum.StrEnum):
    """Why a workload was chosen as a preemption victim (``Preempted=True`` reasons)."""

    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


class PodsReadyReason(enum.StrEnum):
    """Reasons of the ``PodsReady`` condition (Kueue's ``generatePodsReadyCondition``).

    False: ``WaitForStart`` until the pods are first ready, ``WaitForRecovery`` once they were
    and are not any more (the recovery timeout runs from that transition). True: ``Started``, or
    ``Recovered`` after a recovery.
    """

    STARTED = "Started"
    RECOVERED = "Recovered"
    WAIT_FOR_START = "WaitForStart"
    WAIT_FOR_RECOVERY = "WaitForRecovery"


class FinishReason(enum.StrEnum):
    """How a workload finished."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class QueueActiveReason(enum.StrEnum):
    """Reasons of the ``Active`` condition of ClusterQueues and LocalQueues."""

    READY = "Ready"
    STOPPED = "Stopped"
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    TERMINATING = "Terminating"
    CLUSTER_QUEUE_IS_INACTIVE = "ClusterQueueIsInactive"
    INVALID_SPEC = "InvalidSpec"
    """Berth: the object was stored without the webhook's check and the validators refuse it."""
    NAMESPACE_NOT_SELECTED = "NamespaceNotSelected"
    """Berth, of a LocalQueue: its ClusterQueue's ``namespaceSelector`` leaves its namespace out,
    so nothing submitted to it is ever admitted (Kueue says so only on each Workload)."""
