"""The part of a Pod template that scheduling reads: requests, node constraints, tolerations.

Owns ``PodTemplateSpec`` as embedded in Workload pod sets and Job templates, and the computation of
one pod's effective requests the way Kubernetes does it (containers summed, init containers as a
maximum, overhead added; limits stand in for missing requests). Fields Berth does not model are
kept untouched, so a template round-trips.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any

import pydantic

from berth.api import base, names, quantity


def _parse_list(value: object) -> dict[names.ResourceName, int]:
    return quantity.parse_list(value)


ResourceList = Annotated[
    dict[names.ResourceName, int],
    pydantic.BeforeValidator(_parse_list),
    pydantic.PlainSerializer(quantity.format_list, return_type=dict[str, str]),
    pydantic.WithJsonSchema({"type": "object", "additionalProperties": quantity.JSON_SCHEMA}),
]
"""A mapping of resource name to quantity, stored in canonical units."""


class TaintEffect(enum.StrEnum):
    """Kubernetes taint effects."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class TolerationOperator(enum.StrEnum):
    """How a toleration matches a taint's value."""

    EXISTS = "Exists"
    EQUAL = "Equal"


class Taint(base.Model):
    """A node taint (on a ResourceFlavor's ``nodeTaints``)."""

    key: str
    """The taint's key."""
    value: str | None = None
    """The taint's value."""
    effect: TaintEffect
    """What the taint does to pods that do not tolerate it."""


class Toleration(base.Model):
    """A pod toleration."""

    key: str | None = None
    """Taint key to tolerate; empty with operator Exists tolerates every taint."""
    operator: TolerationOperator | None = None
    """Equal (the default) matches the value; Exists matches any value."""
    value: str | None = None
    """Taint value to match with operator Equal."""
    effect: TaintEffect | None = None
    """Taint effect to tolerate; empty tolerates every effect."""
    toleration_seconds: int | None = None
    """How long a NoExecute taint is tolerated before eviction; unset means forever."""

    def tolerates(self, taint: Taint) -> bool:
        """Tell whether this toleration tolerates ``taint`` (Kubernetes' ToleratesTaint)."""
        if self.effect is not None and self.effect != taint.effect:
            return False
        if self.key not in {None, "", taint.key}:
            return False
        if self.operator == TolerationOperator.EXISTS:
            return True
        if not self.key and self.operator is None:
            # An empty key with the default operator matches nothing in Kubernetes.
            return False
        return (self.value or "") == (taint.value or "")


class ResourceRequirements(base.OpenModel):
    """A container's ``resources``."""

    requests: ResourceList = pydantic.Field(default_factory=dict)
    limits: ResourceList = pydantic.Field(default_factory=dict)

    def effective_requests(self) -> dict[names.ResourceName, int]:
        """Requests with limits filling in missing requests, as the API server defaults them."""
        merged = dict(self.limits)
        merged.update(self.requests)
        return merged


class Container(base.OpenModel):
    """A container; its resources (and, for init containers, whether it is a sidecar) matter."""

    name: str = ""
    resources: ResourceRequirements = pydantic.Field(default_factory=ResourceRequirements)
    restart_policy: str | None = None
    """``Always`` on an init container makes it a sidecar that runs beside the main containers."""


class NodeSelectorRequirement(base.Model):
    """One expression of a node selector term."""

    key: str
    operator: str
    values: list[str] = pydantic.Field(default_factory=list)


class NodeSelectorTerm(base.OpenModel):
    """A node selector term (its expressions are ANDed)."""

    match_expressions: list[NodeSelectorRequirement] = pydantic.Field(default_factory=list)


class NodeSelector(base.OpenModel):
    """Required node affinity: terms are ORed."""

    node_selector_terms: list[NodeSelectorTerm] = pydantic.Field(default_factory=list)


class NodeAffinity(base.OpenModel):
    """Node affinity; only the required part constrains flavor choice."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None


class Affinity(base.OpenModel):
    """Pod affinity settings."""

    node_affinity: NodeAffinity | None = None


class PodSpec(base.OpenModel):
    """The scheduling-relevant subset of a PodSpec."""

    containers: list[Container] = pydantic.Field(default_factory=list)
    init_containers: list[Container] = pydantic.Field(default_factory=list)
    overhead: ResourceList = pydantic.Field(default_factory=dict)
    node_selector: dict[str, str] = pydantic.Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = pydantic.Field(default_factory=list)
    priority_class_name: str | None = None

    def pod_requests(self) -> dict[names.ResourceName, int]:
        """One pod's requests, computed as Kubernetes does (``resourcehelpers.PodRequests``).

        Main containers are summed. Sidecars (init containers with ``restartPolicy: Always``)
        run beside them, so they add to that sum; each other init container runs alone with the
        sidecars started before it. The pod needs the larger of the two phases, plus overhead.
        """
        total: dict[names.ResourceName, int] = {}
        for container in self.containers:
            _add(total, container.resources.effective_requests())
        sidecars: dict[names.ResourceName, int] = {}
        init_peak: dict[names.ResourceName, int] = {}
        for init in self.init_containers:
            requests = init.resources.effective_requests()
            if init.restart_policy == "Always":
                _add(total, requests)
                _add(sidecars, requests)
                phase = dict(sidecars)
            else:
                phase = dict(requests)
                _add(phase, sidecars)
            for res, amount in phase.items():
                init_peak[res] = max(init_peak.get(res, 0), amount)
        for res, amount in init_peak.items():
            total[res] = max(total.get(res, 0), amount)
        _add(total, self.overhead)
        return total


def _add(target: dict[names.ResourceName, int], other: dict[names.ResourceName, int]) -> None:
    for res, amount in other.items():
        target[res] = target.get(res, 0) + amount


class TemplateMeta(base.OpenModel):
    """Template metadata: labels and annotations."""

    labels: dict[str, str] = pydantic.Field(default_factory=dict)
    annotations: dict[str, str] = pydantic.Field(default_factory=dict)


class PodTemplateSpec(base.OpenModel):
    """A pod template."""

    metadata: TemplateMeta = pydantic.Field(default_factory=TemplateMeta)
    spec: PodSpec = pydantic.Field(default_factory=PodSpec)


def raw_template(template: PodTemplateSpec) -> dict[str, Any]:
    """Dump a template to YAML shape, keeping fields Berth does not model."""
    return template.model_dump(mode="json", by_alias=True, exclude_none=True)
