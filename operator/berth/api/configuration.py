"""The operator's Configuration: fair sharing, waitForPodsReady, managed jobs, resources.

Field names and defaults are Kueue's v1beta2 Configuration's (see KUEUE-REFERENCE.md section 2).
Durations are Go-style in YAML and float seconds in Python. Read once at start by the composition
root (operator) or from a scenario (simulator), then passed down as a value.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import pydantic

from berth.api import base, duration, pod, selector


def _parse_duration(value: object) -> object:
    try:
        return duration.parse(value)
    except duration.DurationError as err:
        raise ValueError(str(err)) from err


class RequeueTimestamp(enum.StrEnum):
    """Which timestamp orders a workload requeued after a pods-ready timeout."""

    EVICTION = "Eviction"
    CREATION = "Creation"


class RequeuingStrategy(base.Model):
    """Backoff and ordering of workloads requeued after a pods-ready timeout."""

    timestamp: RequeueTimestamp = RequeueTimestamp.EVICTION
    backoff_limit_count: int | None = pydantic.Field(default=None, ge=0)
    backoff_base_seconds: int = pydantic.Field(default=60, ge=0)
    backoff_max_seconds: int = pydantic.Field(default=3600, ge=0)


class WaitForPodsReady(base.Model):
    """Gang readiness: evict an admitted workload whose pods are not ready in time."""

    timeout: float = 1800.0
    block_admission: bool = False
    recovery_timeout: float | None = None
    requeuing_strategy: RequeuingStrategy = pydantic.Field(default_factory=RequeuingStrategy)

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


class TransformationStrategy(enum.StrEnum):
    """Whether a transformed input resource still counts against quota."""

    RETAIN = "Retain"
    REPLACE = "Replace"


class Transformation(base.Model):
    """Convert one requested resource into others before quota is checked."""

    input: str
    strategy: TransformationStrategy = TransformationStrategy.RETAIN
    outputs: pod.ResourceList = pydantic.Field(default_factory=dict)
    """What one unit of ``input`` turns into, in canonical units of each output resource."""


class ResourcesConfig(base.Model):
    """Which requested resources count against quota."""

    exclude_resource_prefixes: list[str] = pydantic.Field(default_factory=list)
    transformations: list[Transformation] = pydantic.Field(default_factory=list)


class Integrations(base.Model):
    """Which job frameworks the operator manages."""

    frameworks: list[str] = pydantic.Field(default_factory=lambda: ["batch/job"])


class Configuration(base.Object):
    """The operator's configuration (``berth.dev/v1beta1`` Configuration)."""

    KIND: ClassVar[str] = "Configuration"

    namespace: str = "berth-system"
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: selector.LabelSelector | None = None
    wait_for_pods_ready: WaitForPodsReady | None = pydantic.Field(default_factory=WaitForPodsReady)
    """On by default, as in Kueue v1beta2; ``waitForPodsReady: null`` turns it off."""
    fair_sharing: FairSharingConfig | None = None
    resources: ResourcesConfig = pydantic.Field(default_factory=ResourcesConfig)
    integrations: Integrations = pydantic.Field(default_factory=Integrations)
    honor_kueue_labels: bool = False
    """Also read ``kueue.x-k8s.io/queue-name``; off so two operators never manage one Job."""

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
