"""The Workload kind: the unit Berth queues and admits, built from a job's pod sets.

Status carries the admission (ClusterQueue and the flavor chosen per pod set and resource) and
Kueue's conditions. Written by the operator, read by job integrations, ``berth explain`` and tests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import ClassVar, Literal

import pydantic

from berth.api import base, names, pod, topology
from berth.api import conditions as cond

DEFAULT_POD_SET = names.PodSetName("main")

JOB_UID_LABEL = "berth.dev/job-uid"
"""On a job's Workload (and on a RayJob's pods): the uid of the job."""
POD_GROUP_LABEL = "berth.dev/pod-group"
"""On a pod group's Workload: the group's name. Its pods own it, none as its controller, so its
job is found by ``JOB_UID_LABEL`` (the group's own uid)."""
EXPECTED_RUNTIME_ANNOTATION = "berth.dev/expected-runtime"
"""On a job or Workload: how long it is expected to run once started (a duration, e.g. 2h)."""
RUNTIME_LIMIT_ANNOTATION = "berth.dev/runtime-limit"
"""On a Workload, written by Berth: the job's own hard runtime bound (a Job's
``activeDeadlineSeconds``)."""
RUNTIME_ANNOTATIONS = (EXPECTED_RUNTIME_ANNOTATION, RUNTIME_LIMIT_ANNOTATION)
CHECKPOINTED_AT_ANNOTATION = "berth.dev/checkpointed-at"
"""On a job (copied to its Workload): when the job last saved a checkpoint it can resume from
(an RFC 3339 time). Among preemption candidates equal otherwise, the one that loses the least
work since its admission or this checkpoint goes first."""
PRIORITY_BOOST_ANNOTATION = "berth.dev/priority-boost"
"""On a Workload only, set by a controller allowed to patch Workloads: a signed integer added to
its priority wherever priority orders or protects it (Kueue's ``kueue.x-k8s.io/priority-boost``,
KEP-7990). Never read from a job: the people who submit jobs cannot raise their own priority."""
KUEUE_PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
SCHEDULING_ANNOTATIONS = (
    *RUNTIME_ANNOTATIONS,
    CHECKPOINTED_AT_ANNOTATION,
    PRIORITY_BOOST_ANNOTATION,
)
"""The annotations of a Workload the scheduler reads; the others say nothing to it."""
MAX_PRIORITY_BOOST = 1_000_000_000
"""The largest boost either way: the span of user PriorityClass values (Kubernetes keeps values
above one billion for system classes)."""


def parse_checkpoint_time(value: str) -> float:
    """Seconds since the epoch of a ``berth.dev/checkpointed-at`` value.

    Raises ValueError saying what to write when it is not an RFC 3339 time with a zone.
    """
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise ValueError(
            f"{value!r} is not an RFC 3339 time with a zone; write e.g. 2026-12-02T10:00:00Z"
        )
    return when.timestamp()


def parse_priority_boost(value: str) -> int:
    """The integer of a ``berth.dev/priority-boost`` value.

    Raises ValueError saying what to write when it is no integer within the bounds.
    """
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"{value!r} is not an integer; write e.g. 100 or -50")
    boost = int(text)
    if abs(boost) > MAX_PRIORITY_BOOST:
        raise ValueError(
            f"{boost} is beyond {MAX_PRIORITY_BOOST:,} either way, the span of priority "
            "classes; use a value within it"
        )
    return boost


def checkpointed_at(annotations: Mapping[str, str]) -> float | None:
    """When the workload last checkpointed; None when absent or invalid (validation says why)."""
    value = annotations.get(CHECKPOINTED_AT_ANNOTATION)
    if value is None:
        return None
    try:
        return parse_checkpoint_time(value)
    except ValueError:
        return None


def priority_boost(annotations: Mapping[str, str]) -> int:
    """The workload's priority boost; 0 when absent or invalid (validation says why)."""
    value = annotations.get(PRIORITY_BOOST_ANNOTATION)
    if value is None:
        return 0
    try:
        return parse_priority_boost(value)
    except ValueError:
        return 0


class PodSet(base.Model):
    """A group of identical pods: ``count`` of them; at least ``minCount`` if partially admitted."""

    name: names.PodSetName = DEFAULT_POD_SET
    """Unique name of the pod set within the workload (a DNS label)."""
    count: int = pydantic.Field(default=1, ge=0)
    """Number of pods."""
    min_count: int | None = pydantic.Field(default=None, ge=0)
    """With partial admission, the fewest pods worth starting (at most count); unset admits
    all pods or none."""
    template: pod.PodTemplateSpec = pydantic.Field(default_factory=pod.PodTemplateSpec)
    """The pods' template: their requests, node selector, affinity and tolerations decide
    which flavors fit."""
    topology_request: topology.PodSetTopologyRequest | None = None
    """Where the pods must or should run together in a topology-aware flavor; unset reads the
    template's berth.dev/podset-*-topology annotations."""


class PriorityClassRef(base.Model):
    """Which priority class set the workload's priority."""

    group: Literal["berth.dev", "scheduling.k8s.io"] = "berth.dev"
    """berth.dev for a WorkloadPriorityClass, scheduling.k8s.io for a pod PriorityClass."""
    kind: Literal["WorkloadPriorityClass", "PriorityClass"] = "WorkloadPriorityClass"
    """WorkloadPriorityClass (group berth.dev) or PriorityClass (group scheduling.k8s.io)."""
    name: names.PriorityClassName
    """Name of the priority class."""


class WorkloadSpec(base.Model):
    """The spec of a Workload."""

    pod_sets: list[PodSet] = pydantic.Field(min_length=1, max_length=18)
    """Groups of identical pods, admitted together (1 to 18)."""
    queue_name: names.LocalQueueName | None = None
    """The LocalQueue, in the workload's namespace, it is submitted to."""
    priority_class_ref: PriorityClassRef | None = None
    """The priority class the priority came from; requires priority."""
    priority: int | None = None
    """The priority (32-bit); higher is more important. Unset means 0."""
    active: bool = True
    """False evicts the workload if admitted and keeps it from being admitted."""
    maximum_execution_time_seconds: int | None = pydantic.Field(default=None, ge=1)
    """Deactivate the workload after it has run this long in total."""


class TopologyDomainAssignment(base.Model):
    """Pods placed in one domain."""

    values: list[str]
    """The domain's label values, one per level of the assignment."""
    count: int = pydantic.Field(ge=1)
    """Pods placed there."""


class TopologyAssignment(base.Model):
    """Where a pod set's pods go: counts per domain of the listed levels (the lowest ones)."""

    levels: list[str]
    """Node labels the domains' values are for (only kubernetes.io/hostname when the topology
    ends with it)."""
    domains: list[TopologyDomainAssignment]
    """Domains with the pods placed in each."""


class PodSetAssignment(base.Model):
    """The admitted shape of one pod set: flavor per resource, usage and count."""

    name: names.PodSetName
    """The pod set."""
    flavors: dict[names.ResourceName, names.FlavorName] = pydantic.Field(default_factory=dict)
    """Flavor assigned to each requested resource."""
    resource_usage: pod.ResourceList = pydantic.Field(default_factory=dict)
    """Quota used by the whole pod set, per resource."""
    count: int | None = None
    """Number of pods admitted (less than the pod set's count with partial admission)."""
    topology_assignment: TopologyAssignment | None = None
    """In a topology-aware flavor: how many pods go to each domain."""


class Admission(base.Model):
    """Where a workload was admitted and with which flavors."""

    cluster_queue: names.ClusterQueueName
    """The ClusterQueue where quota is reserved."""
    pod_set_assignments: list[PodSetAssignment] = pydantic.Field(default_factory=list)
    """Flavors and usage of each pod set."""


class RequeueState(base.Model):
    """How often a workload was requeued after a pods-ready timeout, and when it may return."""

    count: int | None = None
    """How many times the workload was requeued after an eviction."""
    requeue_at: str | None = None
    """When the workload may be considered again (RFC 3339)."""


class ReclaimablePod(base.Model):
    """Pods of a pod set that finished and whose quota may be released early."""

    name: names.PodSetName
    """The pod set."""
    count: int
    """Pods of the set that finished."""


class WorkloadStatus(base.Model):
    """Status of a Workload."""

    conditions: list[cond.Condition] = pydantic.Field(default_factory=list)
    """QuotaReserved, Admitted, PodsReady, Evicted, Preempted, Requeued, Finished, with
    Kueue's reasons."""
    admission: Admission | None = None
    """Where and with which flavors the workload is admitted."""
    requeue_state: RequeueState | None = None
    """Backoff state after evictions."""
    reclaimable_pods: list[ReclaimablePod] = pydantic.Field(default_factory=list)
    """Finished pods whose quota is released early."""

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
    """The unit Berth queues and admits: a job's pod sets, admitted whole or not at all."""

    KIND: ClassVar[str] = "Workload"
    NAMESPACED: ClassVar[bool] = True

    spec: WorkloadSpec
    """Pod sets, queue and priority."""
    status: WorkloadStatus | None = None
    """Admission and conditions, written by the operator."""

    @property
    def key(self) -> names.WorkloadKey:
        """The workload's ``namespace/name`` key."""
        return names.WorkloadKey(self.metadata.namespace or "default", self.metadata.name)
