"""The operator's Configuration: fair sharing, waitForPodsReady, managed jobs, resources.

Field names and defaults are Kueue's v1beta2 Configuration's (see KUEUE-REFERENCE.md section 2).
Durations are Go-style in YAML and float seconds in Python. Read once at start by the composition
root (operator) or from a scenario (simulator), then passed down as a value.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import pydantic

from berth.api import base, duration, names, pod, protection, selector

Duration = duration.Duration
_parse_duration = duration.field_parser


class RequeueTimestamp(enum.StrEnum):
    """Which timestamp orders a workload requeued after a pods-ready timeout."""

    EVICTION = "Eviction"
    CREATION = "Creation"


class RequeuingStrategy(base.Model):
    """Backoff and ordering of workloads requeued after a pods-ready timeout."""

    timestamp: RequeueTimestamp = RequeueTimestamp.EVICTION
    """Eviction: a requeued workload queues by its eviction time; Creation: by its creation
    time (it keeps its place)."""
    backoff_limit_count: int | None = pydantic.Field(default=None, ge=0)
    """Evictions after which the workload is deactivated; unset means it is requeued forever."""
    backoff_base_seconds: int = pydantic.Field(default=60, ge=0)
    """First backoff; the n-th requeue waits base * 2^(n-1) seconds."""
    backoff_max_seconds: int = pydantic.Field(default=3600, ge=0)
    """Longest backoff."""


class WaitForPodsReady(base.Model):
    """Gang readiness: evict an admitted workload whose pods are not ready in time."""

    timeout: Duration = 1800.0
    """How long after admission every pod must be ready, or the workload is evicted."""
    block_admission: bool = False
    """Admit nothing else while an admitted workload's pods are not all ready."""
    recovery_timeout: Duration | None = None
    """How long pods that were ready may stay not ready; unset means timeout, 0s disables."""
    requeuing_strategy: RequeuingStrategy = pydantic.Field(default_factory=RequeuingStrategy)
    """How evicted workloads are requeued."""

    _durations = pydantic.field_validator("timeout", "recovery_timeout", mode="before")(
        _parse_duration
    )

    @pydantic.field_serializer("timeout", "recovery_timeout")
    def _print_duration(self, value: float | None) -> str | None:
        return None if value is None else duration.format(value)

    @property
    def effective_recovery_timeout(self) -> float:
        """The recovery timeout; it defaults to ``timeout``, and ``0s`` disables recovery."""
        return self.timeout if self.recovery_timeout is None else self.recovery_timeout


class PreemptionStrategy(enum.StrEnum):
    """Fair-sharing preemption strategies."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


class FairSharingConfig(base.Model):
    """Fair sharing across ClusterQueues and Cohorts; present means enabled."""

    preemption_strategies: list[PreemptionStrategy] = pydantic.Field(
        default_factory=lambda: [
            PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
            PreemptionStrategy.LESS_THAN_INITIAL_SHARE,
        ]
    )
    """Rules a fair-sharing preemption must satisfy, tried in order: [LessThanOrEqualToFinalShare],
    [LessThanInitialShare] or both in that order."""


DEFAULT_WEIGHT_SETTERS = ("system:masters",)
"""Who may give a LocalQueue a weight when the Configuration names nobody: cluster admins."""


class AdmissionFairSharing(base.Model):
    """Usage-based admission fair sharing (Kueue's ``admissionFairSharing``, KEP-4136).

    In a ClusterQueue whose ``admissionScope.admissionMode`` is
    ``UsageBasedAdmissionFairSharing``, the LocalQueue with the least decayed usage per unit of
    its ``fairSharing.weight`` gives the queue its next head.
    """

    usage_half_life_time: Duration = 7 * 24 * 3600.0
    """How long until a LocalQueue's past usage counts half (default 168h). Kueue has no
    default (0s); 0s forgets usage at every sample, so the order is by priority and time."""
    usage_sampling_interval: Duration = 300.0
    """How often each LocalQueue's usage is sampled into its decayed usage (default 5m)."""
    resource_weights: dict[names.ResourceName, float] = pydantic.Field(default_factory=dict)
    """Weight of each resource in a LocalQueue's usage; unlisted resources weigh 1 and 0 leaves
    one out. cpu counts in cores and memory in bytes, as in Kueue: weigh memory low (or 0)."""

    weight_setters: list[str] = pydantic.Field(default_factory=lambda: list(DEFAULT_WEIGHT_SETTERS))
    """Users or groups whose requests may give a LocalQueue a fairSharing.weight other than 1,
    or change it (Berth's own: namespace admins manage their LocalQueues and would weigh their
    own team up). Default: system:masters."""

    _durations = pydantic.field_validator(
        "usage_half_life_time", "usage_sampling_interval", mode="before"
    )(_parse_duration)

    @pydantic.field_serializer("usage_half_life_time", "usage_sampling_interval")
    def _print_duration(self, value: float) -> str:
        return duration.format(value)


class TransformationStrategy(enum.StrEnum):
    """Whether a transformed input resource still counts against quota."""

    RETAIN = "Retain"
    REPLACE = "Replace"


class Transformation(base.Model):
    """Convert one requested resource into others before quota is checked."""

    input: str
    """The requested resource to transform."""
    strategy: TransformationStrategy = TransformationStrategy.RETAIN
    """Retain: the input still counts against quota; Replace: only the outputs do."""
    outputs: pod.ResourceList = pydantic.Field(default_factory=dict)
    """What one unit of ``input`` turns into."""


class ResourcesConfig(base.Model):
    """Which requested resources count against quota."""

    exclude_resource_prefixes: list[str] = pydantic.Field(default_factory=list)
    """Requested resources whose names start with one of these are not counted."""
    transformations: list[Transformation] = pydantic.Field(default_factory=list)
    """Resources converted into others before quota is checked."""


class Framework(enum.StrEnum):
    """A job framework Berth integrates, by Kueue's name for it (``integrations.frameworks``)."""

    BATCH_JOB = "batch/job"
    JOBSET = "jobset.x-k8s.io/jobset"
    PYTORCHJOB = "kubeflow.org/pytorchjob"
    TFJOB = "kubeflow.org/tfjob"
    PADDLEJOB = "kubeflow.org/paddlejob"
    XGBOOSTJOB = "kubeflow.org/xgboostjob"
    JAXJOB = "kubeflow.org/jaxjob"
    RAYJOB = "ray.io/rayjob"
    RAYCLUSTER = "ray.io/raycluster"
    TRAINJOB = "trainer.kubeflow.org/trainjob"
    POD = "pod"


class Integrations(base.Model):
    """Which job frameworks the operator manages."""

    frameworks: list[Framework] = pydantic.Field(default_factory=lambda: [Framework.BATCH_JOB])
    """Job kinds the operator manages; ``batch/job`` is always managed."""

    @pydantic.model_validator(mode="after")
    def _trainjob_needs_jobset(self) -> Integrations:
        # A TrainJob runs as a JobSet: without the JobSet integration its JobSet's Jobs would be
        # children of a kind Berth does not integrate, held suspended for good.
        if Framework.TRAINJOB in self.frameworks and Framework.JOBSET not in self.frameworks:
            msg = (
                f"{Framework.TRAINJOB.value} runs its TrainJobs as JobSets; add "
                f"{Framework.JOBSET.value} to integrations.frameworks too"
            )
            raise ValueError(msg)
        return self


class TopologyProfile(enum.StrEnum):
    """How topology-aware placement chooses among domains that fit (Kueue's TAS profiles)."""

    MIXED = "Mixed"
    """Kueue's default (``TASProfileMixed``): BestFit for pod sets that require or prefer a
    level, LeastFreeCapacity (pack the fullest domains) for unconstrained ones."""
    BEST_FIT = "BestFit"
    """BestFit for every pod set: the most free domains first, the last the tightest fit."""
    MOST_FREE_CAPACITY = "MostFreeCapacity"
    """Spread: the most free domains first and no tight fit (``TASProfileMostFreeCapacity``);
    fragments the nodes, kept to compare against."""


class PriorityBoostConfig(base.Model):
    """Who may set ``berth.dev/priority-boost`` on Workloads (KEP-7990's trusted controllers)."""

    setters: list[str] = pydantic.Field(default_factory=list)
    """Usernames or groups whose requests may set, change or remove a Workload's boost, e.g.
    ``system:serviceaccount:ml-platform:checkpoint-booster``. Empty (the default): nobody."""


class Configuration(base.Object):
    """The operator's configuration (``berth.dev/v1beta1`` Configuration)."""

    KIND: ClassVar[str] = "Configuration"

    namespace: str = "berth-system"
    """Namespace the operator runs in."""
    manage_jobs_without_queue_name: bool = False
    """Also hold back jobs that name no LocalQueue (they are never admitted until they do)."""
    managed_jobs_namespace_selector: selector.LabelSelector | None = None
    """Namespaces whose jobs the operator manages (with manageJobsWithoutQueueName)."""
    wait_for_pods_ready: WaitForPodsReady | None = pydantic.Field(default_factory=WaitForPodsReady)
    """On by default, as in Kueue v1beta2; ``waitForPodsReady: null`` turns it off."""
    fair_sharing: FairSharingConfig | None = None
    """Fair sharing between queues of a cohort; present means on."""
    resources: ResourcesConfig = pydantic.Field(default_factory=ResourcesConfig)
    """Which requested resources count against quota."""
    integrations: Integrations = pydantic.Field(default_factory=Integrations)
    """Job frameworks the operator manages."""
    honor_kueue_labels: bool = False
    """Also read ``kueue.x-k8s.io/queue-name``; off so two operators never manage one Job."""
    topology_profile: TopologyProfile = TopologyProfile.MIXED
    """How topology-aware placement picks among domains that fit."""
    admission_fair_sharing: AdmissionFairSharing | None = None
    """Usage-based ordering of the LocalQueues of a ClusterQueue (for the ClusterQueues that ask
    for it in ``admissionScope``); unset: off."""
    priority_boost: PriorityBoostConfig = pydantic.Field(default_factory=PriorityBoostConfig)
    """Who may set a Workload's ``berth.dev/priority-boost`` (KEP-7990), checked by the webhook."""
    preemption_protection: protection.PreemptionProtection | None = None
    """How long after admission a workload cannot be preempted, per kind of preemption (Kueue's
    KEP-9876 ``fairSharing`` and ``reclaimWithinCohort``, and ``withinClusterQueue``); a
    ClusterQueue's ``spec.preemptionProtection`` overrides it for its workloads. Unset: none."""

    def to_yaml_dict(self) -> dict[str, Any]:
        """Dump like every model, but keep an explicit ``waitForPodsReady: null`` (it disables)."""
        out = super().to_yaml_dict()
        if self.wait_for_pods_ready is None and "wait_for_pods_ready" in self.model_fields_set:
            out["waitForPodsReady"] = None
        return out

    def to_full_dict(self) -> dict[str, Any]:
        """Dump with every default filled in; a disabled ``waitForPodsReady`` prints as null."""
        out = super().to_full_dict()
        if self.wait_for_pods_ready is None:
            out["waitForPodsReady"] = None
        return out
