"""Flavor assignment: which flavor each resource gets, in which mode, why others were skipped."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import builders
from berth.api import quantity
from berth.core import flavors
from worlds import World, fr

GPU = "nvidia.com/gpu"


def rf(name: str, **labels: str) -> builders.ResourceFlavorBuilder:
    return (
        builders.ResourceFlavorBuilder(name).node_labels(labels)
        if labels
        else builders.ResourceFlavorBuilder(name)
    )


def gpu_cq(
    *flavor_quotas: tuple[str, int, int], cohort: str | None = None, **fungibility: str
) -> builders.ClusterQueueBuilder:
    b = builders.ClusterQueueBuilder("cq")
    for name, cpu, gpu in flavor_quotas:
        b.flavor_quotas(name, {"cpu": cpu, GPU: gpu})
    if cohort:
        b.cohort(cohort)
    if fungibility:
        b.fungibility(**fungibility)
    return b


@dataclasses.dataclass
class Case:
    objects: list[Any]
    workload: builders.WorkloadBuilder
    want_mode: flavors.Mode
    want_flavors: dict[str, str] = dataclasses.field(default_factory=dict)
    want_reason: str = ""
    want_message: str = ""
    usage: dict[str, int] = dataclasses.field(default_factory=dict)
    """GPU usage already on the queue, per flavor."""


def wl(
    count: int = 1,
    *,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    **requests: Any,
) -> builders.WorkloadBuilder:
    reqs = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in requests.items()}
    return (
        builders.WorkloadBuilder("w")
        .queue("q")
        .pod_set("main", count, reqs, node_selector=node_selector, tolerations=tolerations)
    )


CASES = [
    pytest.param(
        Case(
            [rf("a100"), rf("h100"), gpu_cq(("a100", 32, 4), ("h100", 32, 8))],
            wl(2, cpu=4, gpu=2),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="first listed flavor with room wins, all covered resources of the group together",
    ),
    pytest.param(
        Case(
            [rf("a100"), rf("h100"), gpu_cq(("a100", 32, 4), ("h100", 32, 8))],
            wl(3, cpu=4, gpu=2),
            flavors.Mode.FIT,
            {"cpu": "h100", GPU: "h100"},
        ),
        id="a gang that does not fit the first flavor goes whole to the next",
    ),
    pytest.param(
        Case(
            [rf("a100"), rf("h100"), gpu_cq(("a100", 32, 4), ("h100", 32, 8))],
            wl(1, cpu=4, gpu=3),
            flavors.Mode.PREEMPT,
            want_message="couldn't assign flavors to pod set main: insufficient unused quota for "
            "nvidia.com/gpu in flavor a100, 1 more needed, insufficient unused quota for "
            "nvidia.com/gpu in flavor h100, 2 more needed",
            usage={"a100": 2, "h100": 7},
        ),
        id=(
            "no room now but within nominal: preemption mode without candidates, "
            "saying how much more each flavor needs"
        ),
    ),
    pytest.param(
        Case(
            [rf("a100"), gpu_cq(("a100", 32, 4))],
            wl(1, cpu=4, gpu=5),
            flavors.Mode.NO_FIT,
            want_reason="ExceedsMaxQuota",
            want_message="couldn't assign flavors to pod set main: insufficient quota for "
            "nvidia.com/gpu in flavor a100, previously considered podsets requests (0) + current "
            "podset request (5) > maximum capacity (4)",
        ),
        id="a request above anything the tree could give exceeds max quota",
    ),
    pytest.param(
        Case(
            [rf("a100").taint("gpu", "true"), rf("h100"), gpu_cq(("a100", 32, 4), ("h100", 32, 8))],
            wl(1, cpu=1, gpu=1),
            flavors.Mode.FIT,
            {"cpu": "h100", GPU: "h100"},
        ),
        id="an untolerated NoSchedule taint skips the flavor",
    ),
    pytest.param(
        Case(
            [rf("a100").taint("gpu", "true"), rf("h100"), gpu_cq(("a100", 32, 4), ("h100", 32, 8))],
            wl(
                1,
                cpu=1,
                gpu=1,
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            ),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="a pod toleration lets the pods use the tainted flavor",
    ),
    pytest.param(
        Case(
            [
                rf("a100").taint("gpu", "true").toleration(key="gpu", operator="Exists"),
                rf("h100"),
                gpu_cq(("a100", 32, 4), ("h100", 32, 8)),
            ],
            wl(1, cpu=1, gpu=1),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="the flavor's own tolerations count as the pods' tolerations",
    ),
    pytest.param(
        Case(
            [rf("a100").taint("gpu", "true", "PreferNoSchedule"), gpu_cq(("a100", 32, 4))],
            wl(1, cpu=1, gpu=1),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="PreferNoSchedule taints are not evaluated",
    ),
    pytest.param(
        Case(
            [
                rf("a100", model="a100"),
                rf("h100", model="h100"),
                gpu_cq(("a100", 32, 4), ("h100", 32, 8)),
            ],
            wl(1, cpu=1, gpu=1, node_selector={"model": "h100"}),
            flavors.Mode.FIT,
            {"cpu": "h100", GPU: "h100"},
        ),
        id="a node selector contradicting the flavor's labels skips it",
    ),
    pytest.param(
        Case(
            [rf("a100", model="a100"), gpu_cq(("a100", 32, 4))],
            wl(1, cpu=1, gpu=1, node_selector={"zone": "eu-1"}),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="selector keys the flavor does not define are left to kube-scheduler",
    ),
    pytest.param(
        Case(
            [rf("a100", model="a100"), gpu_cq(("a100", 32, 4))],
            wl(1, cpu=1, gpu=1, node_selector={"model": "h100"}),
            flavors.Mode.NO_FIT,
            want_reason="NoMatchingFlavor",
            want_message=(
                "couldn't assign flavors to pod set main: flavor a100 doesn't match node affinity"
            ),
        ),
        id="no flavor matching the selector: NoMatchingFlavor",
    ),
    pytest.param(
        Case(
            [rf("a100"), gpu_cq(("a100", 32, 4))],
            wl(1, cpu=1, gpu=1, memory="1Gi"),
            flavors.Mode.NO_FIT,
            want_reason="NoMatchingFlavor",
            want_message=(
                "couldn't assign flavors to pod set main: "
                "resource memory unavailable in ClusterQueue"
            ),
        ),
        id="a request for a resource the queue does not cover is never admitted",
    ),
    pytest.param(
        Case(
            [rf("a100"), gpu_cq(("a100", 32, 4))],
            wl(1, cpu=1, gpu=1, memory=0),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="a zero request for an uncovered resource is ignored",
    ),
    pytest.param(
        Case(
            [rf("a100"), gpu_cq(("a100", 32, 4))],
            wl(0, cpu=1, gpu=1),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="a pod set with count 0 still gets a flavor for what it requests",
    ),
    pytest.param(
        Case(
            [
                builders.CohortBuilder("co"),
                rf("a100"),
                rf("h100"),
                gpu_cq(("a100", 32, 2), ("h100", 32, 4), cohort="co"),
                builders.ClusterQueueBuilder("lender")
                .cohort("co")
                .flavor_quotas("a100", {"cpu": 0, GPU: 4})
                .flavor_quotas("h100", {"cpu": 0, GPU: 0}),
            ],
            wl(1, cpu=1, gpu=3),
            flavors.Mode.FIT,
            {"cpu": "a100", GPU: "a100"},
        ),
        id="default MayStopSearch: borrowing on the first flavor beats a later flavor",
    ),
    pytest.param(
        Case(
            [
                builders.CohortBuilder("co"),
                rf("a100"),
                rf("h100"),
                gpu_cq(
                    ("a100", 32, 2), ("h100", 32, 4), cohort="co", when_can_borrow="TryNextFlavor"
                ),
                builders.ClusterQueueBuilder("lender")
                .cohort("co")
                .flavor_quotas("a100", {"cpu": 0, GPU: 4})
                .flavor_quotas("h100", {"cpu": 0, GPU: 0}),
            ],
            wl(1, cpu=1, gpu=3),
            flavors.Mode.FIT,
            {"cpu": "h100", GPU: "h100"},
        ),
        id="TryNextFlavor: a later flavor within nominal beats borrowing",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_flavor_assignment(case: Case) -> None:
    world = World(*case.objects)
    for flavor, amount in case.usage.items():
        world.snap.add_usage("cq", {fr(flavor, GPU): amount})  # type: ignore[arg-type]
    world.snap.commit()
    assignment, _ = world.assign(world.info(case.workload), "cq")
    assert assignment.mode == case.want_mode, assignment.message()
    if case.want_flavors:
        assert assignment.to_admission("cq").pod_sets[0].flavors == case.want_flavors  # type: ignore[arg-type]
    if case.want_reason:
        assert assignment.no_fit_reason == case.want_reason
    if case.want_message:
        assert assignment.message() == case.want_message


def test_covered_pods_resource_counts_pods() -> None:
    cq = builders.ClusterQueueBuilder("cq").flavor_quotas("a100", {"cpu": 32, GPU: 8, "pods": 10})
    world = World(rf("a100"), cq)
    assignment, _ = world.assign(world.info(wl(3, cpu=1, gpu=1)), "cq")
    admission = assignment.to_admission("cq")  # type: ignore[arg-type]
    assert admission.pod_sets[0].flavors == {"cpu": "a100", GPU: "a100", "pods": "a100"}
    assert admission.pod_sets[0].requests[quantity.PODS] == 3


def test_two_resource_groups_choose_flavors_independently() -> None:
    cq = (
        builders.ClusterQueueBuilder("cq")
        .resource_group(
            builders.flavor_quotas("cpu-spot", {"cpu": 4, "memory": "16Gi"}),
            builders.flavor_quotas("cpu-ondemand", {"cpu": 64, "memory": "256Gi"}),
        )
        .resource_group(builders.flavor_quotas("a100", {GPU: 8}))
    )
    world = World(rf("cpu-spot"), rf("cpu-ondemand"), rf("a100"), cq)
    assignment, _ = world.assign(world.info(wl(2, cpu=4, memory="8Gi", gpu=2)), "cq")
    flavors_by_resource = assignment.to_admission("cq").pod_sets[0].flavors  # type: ignore[arg-type]
    assert flavors_by_resource == {"cpu": "cpu-ondemand", "memory": "cpu-ondemand", GPU: "a100"}
