"""Kueue's scheduler-performance generator config, and the objects and arrivals it describes.

The config has the shape and field names of Kueue's ``test/performance/scheduler`` generator
(``runner/generator``): cohorts[className, count, queuesSets[className, count, nominalQuota,
borrowingLimit, reclaimWithinCohort, withinClusterQueue, workloadsSets[count, creationIntervalMs,
workloads[className, runtimeMs, priority, request]]]]. As there, every quota is of one resource,
``cpu``, in one ResourceFlavor ``rf``; each ClusterQueue ``<class>-<set>-<index>-<cohort>`` gets a
namespace and a LocalQueue of the same name; a workload set creates its ``count`` rounds one
``creationIntervalMs`` apart, the first one interval after the start, each round one Workload of
every template in it, named ``<class>-<set>-<round>-<template>``. Used by ``runner``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml
from pydantic import alias_generators

from berth.api import base, quantity

RESOURCE = "cpu"
FLAVOR = "rf"
CLASS_LABEL = "bench.berth.dev/class"
"""The workload class (``small``, ...) on each Workload, as Kueue's ``ClassLabel``."""
RUNTIME_LABEL = "bench.berth.dev/runtime-ms"
"""How long the harness lets a Workload run once admitted, as Kueue's ``RunningTimeLabel``."""
RUN_LABEL = "bench.berth.dev/run"
"""Marks every object of a run, so a later run on the same cluster can tell them apart."""

Policy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"]


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


class WorkloadTemplate(_Model):
    """One Workload of every round of a workload set."""

    class_name: str
    runtime_ms: int = pydantic.Field(ge=0)
    priority: int = 0
    request: int | str = 1
    """CPU request of its one pod, a Kubernetes quantity."""

    @property
    def milli(self) -> int:
        """The request in milli-CPU."""
        return quantity.parse(RESOURCE, self.request)


class WorkloadsSet(_Model):
    """``count`` rounds, one every ``creationIntervalMs``."""

    count: int = pydantic.Field(ge=0)
    creation_interval_ms: int = pydantic.Field(ge=0)
    workloads: list[WorkloadTemplate] = pydantic.Field(min_length=1)


class QueuesSet(_Model):
    """``count`` identical ClusterQueues of one cohort."""

    class_name: str
    count: int = pydantic.Field(ge=0)
    nominal_quota: int | str
    borrowing_limit: int | str | None = None
    reclaim_within_cohort: Policy = "Never"
    within_cluster_queue: Policy = "Never"
    workloads_sets: list[WorkloadsSet] = pydantic.Field(default_factory=list)

    @property
    def nominal_milli(self) -> int:
        """The nominal quota in milli-CPU."""
        return quantity.parse(RESOURCE, self.nominal_quota)


class CohortSet(_Model):
    """``count`` cohorts with the same queue sets."""

    class_name: str
    count: int = pydantic.Field(ge=0)
    queues_sets: list[QueuesSet] = pydantic.Field(min_length=1)


class Config(_Model):
    """A generator config: the cohorts to build."""

    cohorts: list[CohortSet] = pydantic.Field(min_length=1)


def load(path: Path) -> Config:
    """Read a generator config file; raise ``ValueError`` naming every invalid field."""
    raw = yaml.safe_load(path.read_text())
    try:
        return Config.model_validate(raw)
    except pydantic.ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()
        )
        raise ValueError(f"{path}: {problems}") from e


@dataclasses.dataclass(frozen=True, slots=True)
class Queue:
    """One generated ClusterQueue (with its namespace and LocalQueue of the same name)."""

    name: str
    class_name: str
    cohort: str
    spec: QueuesSet


@dataclasses.dataclass(frozen=True, slots=True)
class Arrival:
    """One Workload to create ``at`` seconds after the start."""

    at: float
    queue: Queue
    name: str
    template: WorkloadTemplate
    workload_set: int
    """Its workload set's index in its ClusterQueue (the two name the stream it is created in)."""
    interval: float
    """Its workload set's creation interval in seconds."""


def queues(config: Config) -> list[Queue]:
    """Every ClusterQueue the config describes, in a stable order."""
    out: list[Queue] = []
    for cset in config.cohorts:
        for c in range(cset.count):
            cohort = f"{cset.class_name}-{c}"
            for s, qset in enumerate(cset.queues_sets):
                out.extend(
                    Queue(f"{qset.class_name}-{s}-{i}-{cohort}", qset.class_name, cohort, qset)
                    for i in range(qset.count)
                )
    return out


def arrivals(config: Config) -> list[Arrival]:
    """Every Workload the config creates, ordered by when it is created."""
    out: list[Arrival] = []
    for q in queues(config):
        for s, wset in enumerate(q.spec.workloads_sets):
            interval = wset.creation_interval_ms / 1000
            for r in range(wset.count):
                out.extend(
                    Arrival((r + 1) * interval, q, f"{t.class_name}-{s}-{r}-{i}", t, s, interval)
                    for i, t in enumerate(wset.workloads)
                )
    out.sort(key=lambda a: (a.at, a.queue.name, a.name))
    return out


def workload_count(config: Config) -> int:
    """How many Workloads the config creates."""
    return len(arrivals(config))


# Bodies ------------------------------------------------------------------------------------------


def flavor_body(run: str) -> dict[str, Any]:
    """The one ResourceFlavor."""
    return {
        "apiVersion": base.API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": FLAVOR, "labels": {RUN_LABEL: run}},
    }


def namespace_body(q: Queue, run: str) -> dict[str, Any]:
    """The namespace of a queue's Workloads."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": q.name, "labels": {RUN_LABEL: run}},
    }


def cluster_queue_body(q: Queue, run: str) -> dict[str, Any]:
    """A ClusterQueue with its quota of ``cpu`` in ``rf``."""
    resource: dict[str, Any] = {"name": RESOURCE, "nominalQuota": str(q.spec.nominal_quota)}
    if q.spec.borrowing_limit is not None:
        resource["borrowingLimit"] = str(q.spec.borrowing_limit)
    return {
        "apiVersion": base.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": q.name, "labels": {RUN_LABEL: run, CLASS_LABEL: q.class_name}},
        "spec": {
            "cohortName": q.cohort,
            "namespaceSelector": {},
            "preemption": {
                "reclaimWithinCohort": q.spec.reclaim_within_cohort,
                "withinClusterQueue": q.spec.within_cluster_queue,
            },
            "resourceGroups": [
                {
                    "coveredResources": [RESOURCE],
                    "flavors": [{"name": FLAVOR, "resources": [resource]}],
                }
            ],
        },
    }


def local_queue_body(q: Queue, run: str) -> dict[str, Any]:
    """The LocalQueue of a ClusterQueue, in its namespace."""
    return {
        "apiVersion": base.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": q.name, "namespace": q.name, "labels": {RUN_LABEL: run}},
        "spec": {"clusterQueue": q.name},
    }


def workload_body(a: Arrival, run: str) -> dict[str, Any]:
    """A standalone Workload (no owning Job) of one pod requesting the template's CPU."""
    t = a.template
    return {
        "apiVersion": base.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": a.name,
            "namespace": a.queue.name,
            "labels": {
                RUN_LABEL: run,
                CLASS_LABEL: t.class_name,
                RUNTIME_LABEL: str(t.runtime_ms),
            },
        },
        "spec": {
            "queueName": a.queue.name,
            "priority": t.priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {"requests": {RESOURCE: str(t.request)}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
