"""The Workload kind: the unit Berth queues and admits, built from a job's pod sets.

Status carries the admission (ClusterQueue and the flavor chosen per pod set and resource) and
Kueue's conditions. Written by the operator, read by job integrations, ``berth explain`` and tests.
"""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base, names, pod
from berth.api import conditions as cond

DEFAULT_POD_SET = names.PodSetName("main")


class PodSet(base.Model):
    """A group of identical pods: ``count`` of them; at least ``minCount`` if partially admitted."""

    name: names.PodSetName = DEFAULT_POD_SET
    count: int = pydantic.Field(default=1, ge=0)
    min_count: int | None = pydantic.Field(default=None, ge=0)
    template: pod.PodTemplateSpec = pydantic.Field(default_factory=pod.PodTemplateSpec)


class PriorityClassRef(base.Model):
    """Which priority class set the workload's priority."""

    group: str = "berth.dev"
    kind: str = "WorkloadPriorityClass"
    name: names.PriorityClassName


class WorkloadSpec(base.Model):
    """The spec of a Workload."""

    pod_sets: list[PodSet] = pydantic.Field(min_length=1, max_length=18)
    queue_name: names.LocalQueueName | None = None
    priority_class_ref: PriorityClassRef | None = None
    priority: int | None = None
    active: bool = True
    maximum_execution_time_seconds: int | None = pydantic.Field(default=None, ge=1)


class PodSetAssignment(base.Model):
    """The admitted shape of one pod set: flavor per resource, usage and count."""

    name: names.PodSetName
    flavors: dict[names.ResourceName, names.FlavorName] = pydantic.Field(default_factory=dict)
    resource_usage: pod.ResourceList = pydantic.Field(default_factory=dict)
    count: int | None = None


class Admission(base.Model):
    """Where a workload was admitted and with which flavors."""

    cluster_queue: names.ClusterQueueName
    pod_set_assignments: list[PodSetAssignment] = pydantic.Field(default_factory=list)


class RequeueState(base.Model):
    """How often a workload was requeued after a pods-ready timeout, and when it may return."""

    count: int | None = None
    requeue_at: str | None = None


class ReclaimablePod(base.Model):
    """Pods of a pod set that finished and whose quota may be released early."""

    name: names.PodSetName
    count: int


class WorkloadStatus(base.Model):
    """Status of a Workload."""

    conditions: list[cond.Condition] = pydantic.Field(default_factory=list)
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: list[ReclaimablePod] = pydantic.Field(default_factory=list)

    def condition(self, kind: str) -> cond.Condition | None:
        """Return the condition of this type, if present."""
        for c in self.conditions:
            if c.type == kind:
                return c
        return None

    def is_true(self, kind: str) -> bool:
        """Tell whether the condition of this type is present and True."""
        found = self.condition(kind)
        return found is not None and found.status == cond.ConditionStatus.TRUE


class Workload(base.Object):
    """A Workload (namespaced; short name ``wl``)."""

    KIND: ClassVar[str] = "Workload"
    NAMESPACED: ClassVar[bool] = True

    spec: WorkloadSpec
    status: WorkloadStatus | None = None

    @property
    def key(self) -> names.WorkloadKey:
        """The workload's ``namespace/name`` key."""
        return names.WorkloadKey(self.metadata.namespace or "default", self.metadata.name)
