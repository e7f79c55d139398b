"""One differential input: queue objects, priority classes, workloads and the steps that drive them.

A `Case` holds only what both Kueue v0.19.2 (as minimalkueue runs it) and Berth implement:
ResourceFlavors, a cohort tree (Cohorts with parents and quota of their own), ClusterQueues with
nominal quota, borrowing and lending limits, several flavors per resource group, queueing
strategies, flavor fungibility and preemption policies, WorkloadPriorityClasses, and Workloads.
Its `Step`s are one change each: a workload arrives, or one finishes. Step ``k`` happens at
second ``k``; the queue objects exist at second 0.

`kueue_documents` writes the case as Kueue ``v1beta2`` YAML, the input of both drivers: the
Workloads carry ``sim.berth.dev/at`` (the step of their arrival) and ``sim.berth.dev/delete-at``
(the step of their finish), which is how ``berth simulate`` reads steps; ``kueue_run`` reads the
same steps from the `Case`. Every name can be prefixed, so many cases share one API server
without meeting. Called by ``generate``, ``shrink``, ``berth_run``, ``kueue_run``.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from berth.api.clusterqueue import FungibilityPolicy, PreemptionPolicy, QueueingStrategy

KUEUE_API = "kueue.x-k8s.io/v1beta2"
NAMESPACE = "ns"
"""Every case's LocalQueues and Workloads live in one namespace (prefixed per case)."""
POD_SET_NAMES = ("main", "aux")


class StepKind(enum.StrEnum):
    """What one step changes."""

    ARRIVE = "arrive"
    """The Workload is created."""
    FINISH = "finish"
    """The Workload finishes (Kueue: ``Finished=True``; Berth: deleted), admitted or not."""


@dataclasses.dataclass(frozen=True, slots=True)
class Quota:
    """One resource of one flavor: nominal quota and the optional limits."""

    resource: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class FlavorQuotas:
    """A flavor's quotas within a resource group."""

    flavor: str
    quotas: tuple[Quota, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Resources covered together, and the flavors (in order) that offer them."""

    resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Cohort:
    """A Cohort object: its parent and its own quota."""

    name: str
    parent: str | None = None
    groups: tuple[ResourceGroup, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Preemption:
    """A ClusterQueue's preemption policies."""

    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    """``Never`` or ``LowerPriority``."""
    max_priority_threshold: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterQueue:
    """A ClusterQueue and its LocalQueue (named after it, in the case's namespace)."""

    name: str
    groups: tuple[ResourceGroup, ...]
    cohort: str | None = None
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    preemption: Preemption = Preemption()
    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR


@dataclasses.dataclass(frozen=True, slots=True)
class PodSet:
    """One pod set: its pod count and each pod's requests (integers in the resource's unit)."""

    name: str
    count: int
    requests: tuple[tuple[str, int], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Workload:
    """A Workload submitted to one ClusterQueue's LocalQueue."""

    name: str
    queue: str
    pod_sets: tuple[PodSet, ...]
    priority: int = 0
    priority_class: str | None = None
    """The WorkloadPriorityClass it names; ``priority`` is then that class's value."""


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """One change, applied once the previous one has settled."""

    kind: StepKind
    workload: str


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    """One differential input."""

    seed: int
    flavors: tuple[str, ...]
    cohorts: tuple[Cohort, ...]
    queues: tuple[ClusterQueue, ...]
    priority_classes: tuple[tuple[str, int], ...]
    workloads: tuple[Workload, ...]
    steps: tuple[Step, ...]

    def workload(self, name: str) -> Workload:
        """The workload of that name."""
        return next(w for w in self.workloads if w.name == name)

    def step_of(self, name: str, kind: StepKind) -> int | None:
        """The 1-based step at which the workload arrives or finishes (None if it does not)."""
        for i, step in enumerate(self.steps, start=1):
            if step.workload == name and step.kind == kind:
                return i
        return None


def _quantity(resource: str, value: int) -> str:
    # cpu is drawn in milli-CPU; every other resource in whole units.
    return f"{value}m" if resource == "cpu" else str(value)


def _groups(groups: tuple[ResourceGroup, ...], prefix: str) -> list[dict[str, Any]]:
    out = []
    for g in groups:
        flavors = []
        for fq in g.flavors:
            resources = []
            for q in fq.quotas:
                r: dict[str, Any] = {
                    "name": q.resource,
                    "nominalQuota": _quantity(q.resource, q.nominal),
                }
                if q.borrowing_limit is not None:
                    r["borrowingLimit"] = _quantity(q.resource, q.borrowing_limit)
                if q.lending_limit is not None:
                    r["lendingLimit"] = _quantity(q.resource, q.lending_limit)
                resources.append(r)
            flavors.append({"name": prefix + fq.flavor, "resources": resources})
        out.append({"coveredResources": list(g.resources), "flavors": flavors})
    return out


def _meta(name: str, prefix: str, *, namespaced: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": prefix + name}
    if namespaced:
        meta["namespace"] = prefix + NAMESPACE
    return meta


def _cluster_queue(q: ClusterQueue, prefix: str) -> dict[str, Any]:
    borrow: dict[str, Any] = {"policy": q.preemption.borrow_within_cohort.value}
    if q.preemption.max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = q.preemption.max_priority_threshold
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": q.strategy.value,
        "resourceGroups": _groups(q.groups, prefix),
        "preemption": {
            "withinClusterQueue": q.preemption.within_cluster_queue.value,
            "reclaimWithinCohort": q.preemption.reclaim_within_cohort.value,
            "borrowWithinCohort": borrow,
        },
        "flavorFungibility": {
            "whenCanBorrow": q.when_can_borrow.value,
            "whenCanPreempt": q.when_can_preempt.value,
        },
    }
    if q.cohort is not None:
        spec["cohortName"] = prefix + q.cohort
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": _meta(q.name, prefix),
        "spec": spec,
    }


def _workload(case: Case, w: Workload, prefix: str) -> dict[str, Any]:
    meta = _meta(w.name, prefix, namespaced=True)
    annotations = {}
    arrive = case.step_of(w.name, StepKind.ARRIVE)
    finish = case.step_of(w.name, StepKind.FINISH)
    if arrive is not None:
        annotations["sim.berth.dev/at"] = f"{arrive}s"
    if finish is not None:
        annotations["sim.berth.dev/delete-at"] = f"{finish}s"
    meta["annotations"] = annotations
    spec: dict[str, Any] = {
        "queueName": prefix + w.queue,
        "priority": w.priority,
        "podSets": [
            {
                "name": ps.name,
                "count": ps.count,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {
                                    "requests": {r: _quantity(r, v) for r, v in ps.requests}
                                },
                            }
                        ],
                    }
                },
            }
            for ps in w.pod_sets
        ],
    }
    if w.priority_class is not None:
        spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": prefix + w.priority_class,
        }
    return {"apiVersion": KUEUE_API, "kind": "Workload", "metadata": meta, "spec": spec}


def setup_documents(case: Case, prefix: str = "") -> list[dict[str, Any]]:
    """The queue objects, in creation order: namespace, flavors, classes, cohorts, queues."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE, prefix)}
    ]
    docs += [
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": _meta(f, prefix),
            "spec": {},
        }
        for f in case.flavors
    ]
    docs += [
        {
            "apiVersion": KUEUE_API,
            "kind": "WorkloadPriorityClass",
            "metadata": _meta(n, prefix),
            "value": v,
        }
        for n, v in case.priority_classes
    ]
    for c in case.cohorts:
        spec: dict[str, Any] = {}
        if c.parent is not None:
            spec["parentName"] = prefix + c.parent
        if c.groups:
            spec["resourceGroups"] = _groups(c.groups, prefix)
        docs.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "Cohort",
                "metadata": _meta(c.name, prefix),
                "spec": spec,
            }
        )
    for q in case.queues:
        docs.append(_cluster_queue(q, prefix))
        docs.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": _meta(q.name, prefix, namespaced=True),
                "spec": {"clusterQueue": prefix + q.name},
            }
        )
    return docs


def workload_document(case: Case, name: str, prefix: str = "") -> dict[str, Any]:
    """One Workload of the case as Kueue YAML."""
    return _workload(case, case.workload(name), prefix)


def kueue_documents(case: Case, prefix: str = "") -> list[dict[str, Any]]:
    """The whole case as Kueue YAML: the queue objects, then the Workloads in arrival order."""
    arrivals = [s.workload for s in case.steps if s.kind == StepKind.ARRIVE]
    return setup_documents(case, prefix) + [workload_document(case, n, prefix) for n in arrivals]
