"""Hypothesis strategies: random queue trees and workload streams as scenario documents.

Everything is drawn as YAML-shaped documents (the simulator's input), so properties exercise the
same path as ``berth simulate``: cohorts (possibly nested, possibly with their own quota),
ClusterQueues with random quotas, limits, queueing strategies (Backfill among them) and
preemption policies, and workloads arriving over a few seconds with random gangs, priorities,
durations, runtime estimates and partial-admission minimums.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

GPU = "nvidia.com/gpu"
FLAVORS = ["a100", "h100"]


@st.composite
def queue_trees(draw: st.DrawFn, *, fair_sharing: bool = False) -> list[dict[str, Any]]:
    """Flavors, cohorts and ClusterQueues with LocalQueues (one per ClusterQueue, namespace ns)."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "berth.dev/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": f}}
        for f in FLAVORS
    ]
    cohorts = draw(st.sampled_from([[], ["root"], ["root", "left"], ["root", "left", "right"]]))
    docs.extend(_cohort(draw, name, fair_sharing=fair_sharing) for name in cohorts)
    n_queues = draw(st.integers(1, 4))
    for i in range(n_queues):
        docs.extend(_queue_pair(draw, i, cohorts, fair_sharing=fair_sharing))
    return docs


def _cohort(draw: st.DrawFn, name: str, *, fair_sharing: bool) -> dict[str, Any]:
    """A Cohort under ``root`` (unless it is the root), perhaps with quota of its own."""
    spec: dict[str, Any] = {}
    if name != "root":
        spec["parentName"] = "root"
    if draw(st.booleans()):
        quota: dict[str, Any] = {"name": GPU, "nominalQuota": draw(st.integers(0, 4))}
        if name != "root" and draw(st.booleans()):
            quota["lendingLimit"] = draw(st.integers(0, quota["nominalQuota"]))
        spec["resourceGroups"] = [
            {"coveredResources": [GPU], "flavors": [{"name": "a100", "resources": [quota]}]}
        ]
    if fair_sharing:
        spec["fairSharing"] = {"weight": draw(st.sampled_from([1, 2, "500m"]))}
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": spec,
    }


def _queue_pair(
    draw: st.DrawFn, i: int, cohorts: list[str], *, fair_sharing: bool
) -> list[dict[str, Any]]:
    """ClusterQueue ``cq<i>``, perhaps in one of ``cohorts``, and its LocalQueue ``ns/lq<i>``."""
    cohort = draw(st.sampled_from(cohorts)) if cohorts and draw(st.integers(0, 4)) != 0 else None
    flavors: list[dict[str, Any]] = []
    for flavor in draw(st.sampled_from([["a100"], ["a100", "h100"], ["h100", "a100"]])):
        quota: dict[str, Any] = {"name": GPU, "nominalQuota": draw(st.integers(0, 8))}
        if cohort is not None and draw(st.booleans()):
            quota["borrowingLimit"] = draw(st.integers(0, 6))
        if cohort is not None and draw(st.booleans()):
            quota["lendingLimit"] = draw(st.integers(0, quota["nominalQuota"]))
        flavors.append({"name": flavor, "resources": [quota]})
    reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
    preemption: dict[str, Any] = {
        "withinClusterQueue": draw(
            st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
        ),
        "reclaimWithinCohort": reclaim,
    }
    if reclaim != "Never" and draw(st.booleans()):
        preemption["borrowWithinCohort"] = {"policy": "LowerPriority"}
    strategy = draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO", "Backfill"]))
    spec = {
        "namespaceSelector": {},
        "queueingStrategy": strategy,
        "resourceGroups": [{"coveredResources": [GPU], "flavors": flavors}],
        "preemption": preemption,
    }
    if strategy == "Backfill" and draw(st.booleans()):
        spec["backfill"] = {
            "reservationDepth": draw(st.integers(1, 3)),
            "defaultRuntime": f"{draw(st.integers(1, 8))}s",
        }
    if cohort is not None:
        spec["cohortName"] = cohort
    if fair_sharing:
        spec["fairSharing"] = {"weight": draw(st.sampled_from([0, 1, 2, "500m"]))}
    return [
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": f"cq{i}"},
            "spec": spec,
        },
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": f"lq{i}", "namespace": "ns"},
            "spec": {"clusterQueue": f"cq{i}"},
        },
    ]


@st.composite
def workload_streams(
    draw: st.DrawFn, queues: int, *, finishing: bool = True
) -> list[dict[str, Any]]:
    """Workloads arriving over a few seconds at random LocalQueues."""
    docs = []
    for i in range(draw(st.integers(1, 12))):
        count = draw(st.integers(1, 4))
        pod_set: dict[str, Any] = {
            "name": "main",
            "count": count,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "resources": {"requests": {GPU: draw(st.integers(1, 3))}}}
                    ]
                }
            },
        }
        if count > 1 and draw(st.integers(0, 3)) == 0:
            pod_set["minCount"] = draw(st.integers(1, count - 1))
        annotations = {"sim.berth.dev/at": f"{draw(st.integers(0, 6))}s"}
        if finishing and draw(st.booleans()):
            annotations["sim.berth.dev/duration"] = f"{draw(st.integers(1, 8))}s"
        if draw(st.booleans()):  # an estimate, right or wrong (Backfill queues plan with it)
            annotations["berth.dev/expected-runtime"] = f"{draw(st.integers(1, 8))}s"
        docs.append(
            {
                "apiVersion": "berth.dev/v1beta1",
                "kind": "Workload",
                "metadata": {"name": f"w{i}", "namespace": "ns", "annotations": annotations},
                "spec": {
                    "queueName": f"lq{draw(st.integers(0, queues - 1))}",
                    "priority": draw(st.sampled_from([0, 10, 100])),
                    "podSets": [pod_set],
                },
            }
        )
    return docs


@st.composite
def scenarios(
    draw: st.DrawFn, *, fair_sharing: bool = False, finishing: bool = True
) -> list[dict[str, Any]]:
    """A whole scenario: optional Configuration, queue tree, workloads."""
    tree = draw(queue_trees(fair_sharing=fair_sharing))
    queues = sum(1 for d in tree if d["kind"] == "ClusterQueue")
    config: list[dict[str, Any]] = []
    if fair_sharing:
        strategies = draw(
            st.sampled_from(
                [
                    ["LessThanOrEqualToFinalShare"],
                    ["LessThanInitialShare"],
                    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
                ]
            )
        )
        config.append(
            {
                "apiVersion": "berth.dev/v1beta1",
                "kind": "Configuration",
                "fairSharing": {"preemptionStrategies": strategies},
            }
        )
    return config + tree + draw(workload_streams(queues, finishing=finishing))
