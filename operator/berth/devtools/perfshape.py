"""Kueue's scheduler-performance shapes as simulator scenarios.

Kueue measures its scheduler with generated clusters (``test/performance/scheduler/configs``):
*baseline* — 5 cohorts x 6 ClusterQueues, each with nominal quota 20 CPU, borrowing limit 100,
``reclaimWithinCohort: Any`` and ``withinClusterQueue: LowerPriority``; per queue 350 small
(1 CPU, 200 ms, priority 50, one every 100 ms), 100 medium (5 CPU, 500 ms, priority 100, every
500 ms) and 50 large (20 CPU, 1 s, priority 200, every 1.2 s) workloads: 15,000 in all.
*large-scale* — 10 cohorts x 100 queues, per queue 35 small (every 60 ms, 150 ms), 11 medium
(every 300 ms, 350 ms) and 4 large (every 700 ms, 700 ms): 50,000 workloads. This module builds
those shapes as scenario documents; ``berth bench core`` and ``berth bench harness`` use them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from berth.api import base, duration
from berth.sim import documents


@dataclasses.dataclass(frozen=True, slots=True)
class WorkloadClass:
    """A class of identical workloads submitted at a fixed interval to every queue."""

    name: str
    count: int
    interval: float
    runtime: float
    priority: int
    cpu: int


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    """Cohorts x queues with the same quota and the same workload classes in every queue."""

    name: str
    cohorts: int
    queues_per_cohort: int
    nominal: int
    borrowing_limit: int
    classes: tuple[WorkloadClass, ...]

    @property
    def workloads(self) -> int:
        """How many workloads the shape submits."""
        return self.cohorts * self.queues_per_cohort * sum(c.count for c in self.classes)


BASELINE = Shape(
    "baseline",
    5,
    6,
    20,
    100,
    (
        WorkloadClass("small", 350, 0.1, 0.2, 50, 1),
        WorkloadClass("medium", 100, 0.5, 0.5, 100, 5),
        WorkloadClass("large", 50, 1.2, 1.0, 200, 20),
    ),
)
LARGE_SCALE = Shape(
    "large-scale",
    10,
    100,
    20,
    100,
    (
        WorkloadClass("small", 35, 0.06, 0.15, 50, 1),
        WorkloadClass("medium", 11, 0.3, 0.35, 100, 5),
        WorkloadClass("large", 4, 0.7, 0.7, 200, 20),
    ),
)
SHAPES = {s.name: s for s in (BASELINE, LARGE_SCALE)}


def queue_documents(shape: Shape) -> list[dict[str, Any]]:
    """The flavor, cohorts, ClusterQueues, LocalQueues and namespace of a shape, as YAML dicts."""
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
        {"apiVersion": base.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "rf"}},
    ]
    for c in range(shape.cohorts):
        for q in range(shape.queues_per_cohort):
            name = f"cq-{c}-{q}"
            out.append(
                {
                    "apiVersion": base.API_VERSION,
                    "kind": "ClusterQueue",
                    "metadata": {"name": name},
                    "spec": {
                        "cohortName": f"cohort-{c}",
                        "namespaceSelector": {},
                        "preemption": {
                            "reclaimWithinCohort": "Any",
                            "withinClusterQueue": "LowerPriority",
                        },
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu"],
                                "flavors": [
                                    {
                                        "name": "rf",
                                        "resources": [
                                            {
                                                "name": "cpu",
                                                "nominalQuota": shape.nominal,
                                                "borrowingLimit": shape.borrowing_limit,
                                            }
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                }
            )
            out.append(
                {
                    "apiVersion": base.API_VERSION,
                    "kind": "LocalQueue",
                    "metadata": {"name": name, "namespace": "bench"},
                    "spec": {"clusterQueue": name},
                }
            )
    return out


def scenario(shape: Shape) -> list[documents.Document]:
    """The whole shape as simulator documents: queues at t=0, workloads at their intervals."""
    docs = [documents.generated(raw, i) for i, raw in enumerate(queue_documents(shape))]
    index = len(docs)
    for c in range(shape.cohorts):
        for q in range(shape.queues_per_cohort):
            for wc in shape.classes:
                for n in range(wc.count):
                    raw = {
                        "apiVersion": base.API_VERSION,
                        "kind": "Workload",
                        "metadata": {
                            "name": f"{wc.name}-{c}-{q}-{n}",
                            "namespace": "bench",
                            "labels": {"bench.berth.dev/class": wc.name},
                        },
                        "spec": {
                            "queueName": f"cq-{c}-{q}",
                            "priority": wc.priority,
                            "podSets": [
                                {
                                    "name": "main",
                                    "count": 1,
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "c",
                                                    "resources": {"requests": {"cpu": wc.cpu}},
                                                }
                                            ]
                                        }
                                    },
                                }
                            ],
                        },
                    }
                    docs.append(
                        documents.generated(
                            raw, index, at=round(n * wc.interval, 6), run_for=wc.runtime
                        )
                    )
                    index += 1
    return docs


def describe(shape: Shape) -> str:
    """One line describing a shape."""
    classes = ", ".join(
        f"{c.count}x {c.name} ({c.cpu} CPU, {duration.format(c.runtime)}, "
        f"every {duration.format(c.interval)})"
        for c in shape.classes
    )
    return (
        f"{shape.name}: {shape.cohorts} cohorts x {shape.queues_per_cohort} queues, "
        f"{shape.workloads} workloads; per queue {classes}"
    )
