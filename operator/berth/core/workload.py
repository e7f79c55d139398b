"""The core's view of a workload: pod sets with per-pod requests, priority, times and admission.

``WorkloadInfo`` is built once when a workload is queued (from a ``berth.api`` Workload) and is
immutable; ``Admission`` records where and how an admitted workload is counted. Both are plain
values the cycle can compare, sort and hash. Built by ``berth.state`` and the simulator.
"""

from __future__ import annotations

import dataclasses

from berth.api import duration, names, pod, workload
from berth.api import topology as api_topology
from berth.core import resources, topology

NodeSelectorTerm = tuple[tuple[str, str, tuple[str, ...]], ...]
"""A required node-affinity term: (key, operator, values) expressions, ANDed."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodSetInfo:
    """One pod set: how many pods, what one pod requests, and where its pods may run."""

    name: names.PodSetName
    count: int
    min_count: int | None
    per_pod: resources.Requests
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity_terms: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[pod.Toleration, ...] = ()
    topology: topology.Request | None = None
    """Its placement request in a topology-aware flavor, if it makes one."""

    def total(self, count: int | None = None) -> resources.Requests:
        """Requests of ``count`` pods (all of them by default)."""
        n = self.count if count is None else count
        return {res: amount * n for res, amount in self.per_pod.items()}


@dataclasses.dataclass(frozen=True, slots=True)
class PodSetAdmission:
    """How one pod set was admitted: its count and the flavor of each resource."""

    name: names.PodSetName
    count: int
    flavors: dict[names.ResourceName, names.FlavorName]
    requests: resources.Requests
    topology: topology.Assignment | None = None
    """Where its pods go, when its flavor is topology-aware."""


@dataclasses.dataclass(frozen=True, slots=True)
class Admission:
    """Where a workload is admitted and what it counts against."""

    cluster_queue: names.ClusterQueueName
    pod_sets: tuple[PodSetAdmission, ...]
    usage: resources.FlavorResourceAmounts
    placed: tuple[topology.Placed, ...] = ()
    """What its topology assignments take from their flavors' domains."""

    def uses_any(self, frs: set[resources.FlavorResource]) -> bool:
        """Tell whether this admission counts against any of ``frs``."""
        return any(fr in frs for fr in self.usage)


@dataclasses.dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """Everything the core needs to know about a workload to queue and admit it."""

    key: names.WorkloadKey
    uid: str
    local_queue: names.LocalQueueName | None
    priority: int
    creation_time: float
    pod_sets: tuple[PodSetInfo, ...]
    queue_order_time: float = -1.0
    priority_class: str | None = None
    job: names.WorkloadKey | None = None
    active: bool = True
    runtime_limit: float | None = None
    """Its hard runtime bound in seconds (a Job's ``activeDeadlineSeconds``), if it has one."""
    expected_runtime: float | None = None
    """Its own runtime estimate in seconds (``berth.dev/expected-runtime``), if it has one."""
    priority_boost: int = 0
    """What ``berth.dev/priority-boost`` added to ``priority`` (which is the effective one)."""
    checkpointed_at: float | None = None
    """When it last saved a checkpoint (``berth.dev/checkpointed-at``), if it reported one."""

    def work_since(self, reserved_at: float) -> float:
        """Since when an eviction would lose its work: its admission, or a later checkpoint.

        A checkpoint from before this admission saved nothing this run would lose.
        """
        cp = self.checkpointed_at
        return reserved_at if cp is None or cp < reserved_at else cp

    @property
    def order_time(self) -> float:
        """The time that orders it in its queue (eviction time after some evictions)."""
        return self.creation_time if self.queue_order_time < 0 else self.queue_order_time

    def can_be_partially_admitted(self) -> bool:
        """Tell whether some pod set may run with fewer pods than it asks for."""
        return any(ps.min_count is not None and ps.min_count < ps.count for ps in self.pod_sets)

    def scheduling_shape(self) -> tuple[object, ...]:
        """What decides whether it fits: priority and pod sets (Kueue's scheduling hash).

        Two workloads of the same queue with equal shapes get the same answer from flavor
        assignment, so one that does not fit stands for all of them.
        """
        return (
            self.priority,
            tuple(
                (
                    ps.name,
                    ps.count,
                    ps.min_count,
                    tuple(sorted(ps.per_pod.items())),
                    ps.node_selector,
                    ps.affinity_terms,
                    ps.tolerations,
                    ps.topology,
                )
                for ps in self.pod_sets
            ),
        )

    def with_order_time(self, when: float) -> WorkloadInfo:
        """Return a copy ordered in its queue by ``when`` instead of its creation time."""
        return dataclasses.replace(self, queue_order_time=when)


def pod_set_info(ps: workload.PodSet, *, excluded_prefixes: tuple[str, ...] = ()) -> PodSetInfo:
    """Extract the scheduling-relevant facts of an API pod set."""
    spec = ps.template.spec
    per_pod = {
        res: amount
        for res, amount in spec.pod_requests().items()
        if not any(res.startswith(p) for p in excluded_prefixes)
    }
    terms: list[NodeSelectorTerm] = []
    affinity = spec.affinity
    if (
        affinity is not None
        and affinity.node_affinity is not None
        and affinity.node_affinity.required_during_scheduling_ignored_during_execution is not None
    ):
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
        terms.extend(
            tuple((e.key, e.operator, tuple(e.values)) for e in term.match_expressions)
            for term in required.node_selector_terms
        )
    request = ps.topology_request
    if request is None or request.is_empty:
        request = api_topology.request_from_annotations(ps.template.metadata.annotations)
    return PodSetInfo(
        name=ps.name,
        count=ps.count,
        min_count=ps.min_count,
        per_pod=per_pod,
        node_selector=tuple(sorted(spec.node_selector.items())),
        affinity_terms=tuple(terms),
        tolerations=tuple(spec.tolerations),
        topology=None if request is None else topology.request_of(request),
    )


def from_api(
    wl: workload.Workload,
    *,
    priority: int,
    creation_time: float,
    uid: str,
    priority_class: str | None = None,
    job: names.WorkloadKey | None = None,
    excluded_prefixes: tuple[str, ...] = (),
) -> WorkloadInfo:
    """Build the core's view of an API Workload whose priority was already resolved.

    Its ``berth.dev/priority-boost`` is added to ``priority`` (KEP-7990's effective priority).
    """
    notes = wl.metadata.annotations
    boost = workload.priority_boost(notes)
    return WorkloadInfo(
        key=wl.key,
        uid=uid,
        local_queue=wl.spec.queue_name,
        priority=priority + boost,
        creation_time=creation_time,
        pod_sets=tuple(
            pod_set_info(ps, excluded_prefixes=excluded_prefixes) for ps in wl.spec.pod_sets
        ),
        priority_class=priority_class,
        job=job,
        active=wl.spec.active,
        runtime_limit=_seconds(wl, workload.RUNTIME_LIMIT_ANNOTATION),
        expected_runtime=_seconds(wl, workload.EXPECTED_RUNTIME_ANNOTATION),
        priority_boost=boost,
        checkpointed_at=workload.checkpointed_at(notes),
    )


def _seconds(wl: workload.Workload, annotation: str) -> float | None:
    """A runtime annotation in seconds; None when absent or not positive (validation says why)."""
    value = wl.metadata.annotations.get(annotation)
    if value is None:
        return None
    try:
        seconds = duration.parse(value)
    except duration.DurationError:
        return None
    return seconds if seconds > 0 else None
