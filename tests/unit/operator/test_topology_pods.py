"""Placed pods on a cluster: gating, pinning to domains, and others' usage of the nodes.

Rules: Kueue's topology ungater (``pkg/controller/tas/topology_ungater.go``: pods already placed
keep their places, the rest fill the domains in rank order) and its non-TAS pod usage
(``pkg/controller/tas/pod_usage_controller.go``: bound, unfinished pods without the TAS label
take room from their node).
"""

from __future__ import annotations

from typing import Any

import pytest

from berth.api import configuration, kinds, names, quantity, resourceflavor, topology
from berth.api import node as api_node
from berth.api import workload as api_workload
from berth.api.labels import POD_SET_LABEL, QUEUE_LABEL
from berth.core import topology as core_topology
from berth.jobs.framework import pod_placement, podsets, workload_body
from berth.operator import placed_pods, ungater
from berth.operator import world as world_mod
from berth.operator.webhooks import pod_admission
from berth.state import cache as cache_mod

HOST = core_topology.HOSTNAME
RACK = "example.com/rack"
H100 = names.FlavorName("h100")
GPU = names.ResourceName("nvidia.com/gpu")
BY_HOST = core_topology.Assignment(
    (HOST,),
    (core_topology.DomainCount(("h1",), 2), core_topology.DomainCount(("h2",), 1)),
)
BY_RACK = core_topology.Assignment(
    ("example.com/block", RACK), (core_topology.DomainCount(("b1", "r1"), 2),)
)


PIN_CASES = {
    "waiting pods fill the domains in order": (
        BY_HOST,
        [],
        ["a", "b", "c"],
        {"a": "h1", "b": "h1", "c": "h2"},
    ),
    "pinned pods keep their places": (BY_HOST, ["h1"], ["a", "b"], {"a": "h1", "b": "h2"}),
    "more pods than places: the rest wait": (BY_HOST, ["h1", "h2"], ["a", "b"], {"a": "h1"}),
    "every place taken": (BY_HOST, ["h1", "h1", "h2"], ["a"], {}),
}


@pytest.mark.parametrize(
    ("assignment", "pinned", "waiting", "want"), PIN_CASES.values(), ids=list(PIN_CASES)
)
def test_pin(
    assignment: core_topology.Assignment,
    pinned: list[str],
    waiting: list[str],
    want: dict[str, str],
) -> None:
    got = pod_placement.pin(assignment, [{HOST: h, "gpu": "h100"} for h in pinned], waiting)
    assert got == {name: {HOST: host} for name, host in want.items()}


def test_pin_by_every_level_when_the_hostname_is_not_one() -> None:
    got = pod_placement.pin(BY_RACK, [], ["a"])
    assert got == {"a": {"example.com/block": "b1", RACK: "r1"}}


def pod(
    name: str,
    *,
    gated: bool = False,
    host: str | None = None,
    phase: str = "Pending",
    index: int | None = None,
    node: str | None = None,
    placed_by: str | None = "job-uid",
    gpus: int = 8,
) -> dict[str, Any]:
    labels = {POD_SET_LABEL: "main"}
    if placed_by is not None:
        labels[topology.PLACED_LABEL] = placed_by
    if index is not None:
        labels["batch.kubernetes.io/job-completion-index"] = str(index)
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]
    }
    if gated:
        spec["schedulingGates"] = [{"name": topology.GATE}]
    if host is not None:
        spec["nodeSelector"] = {HOST: host}
    if node is not None:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "labels": labels},
        "spec": spec,
        "status": {"phase": phase},
    }


def test_the_ungater_pins_waiting_pods_by_completion_index() -> None:
    pods = [
        pod("p-2", gated=True, index=2),
        pod("p-0", gated=True, index=0),
        pod("old", host="h1", phase="Failed"),  # finished: its place is free again
        pod("p-1", host="h1", phase="Running"),
    ]
    got = ungater.pinned_now(BY_HOST, pods)
    assert got == {"ml/p-0": {HOST: "h1"}, "ml/p-2": {HOST: "h2"}}


GATE_CASES = {
    "no gates": (
        {},
        [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": topology.GATE}]}],
    ),
    "another gate": (
        {"schedulingGates": [{"name": "other"}]},
        [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": topology.GATE}}],
    ),
    "already gated": ({"schedulingGates": [{"name": topology.GATE}]}, []),
}


@pytest.mark.parametrize(("spec", "want"), GATE_CASES.values(), ids=list(GATE_CASES))
def test_gate_patch(spec: dict[str, Any], want: list[dict[str, Any]]) -> None:
    assert pod_placement.gate_patch({"spec": spec}) == want


def test_the_webhook_gates_only_new_placed_pods() -> None:
    placed = pod_admission.mutate_placed_pod({"operation": "CREATE", "object": pod("a")})
    assert placed["allowed"]
    assert placed["patchType"] == "JSONPatch"
    other = pod_admission.mutate_placed_pod(
        {"operation": "CREATE", "object": pod("b", placed_by=None)}
    )
    assert other == {"allowed": True}
    update = pod_admission.mutate_placed_pod({"operation": "UPDATE", "object": pod("c")})
    assert update == {"allowed": True}


def _cache() -> cache_mod.Cache:
    cache = cache_mod.Cache()
    cache.upsert(
        topology.Topology.model_validate(
            {
                "metadata": {"name": "dc"},
                "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
            }
        )
    )
    cache.upsert(
        resourceflavor.ResourceFlavor.model_validate(
            {
                "metadata": {"name": "h100"},
                "spec": {"nodeLabels": {"gpu": "h100"}, "topologyName": "dc"},
            }
        )
    )
    for name in ("n1", "n2"):
        node = api_node.Node.model_validate(
            {
                "metadata": {"name": name, "labels": {"gpu": "h100", RACK: "r1", HOST: name}},
                "status": {"allocatable": {"nvidia.com/gpu": "8"}},
            }
        )
        cache.upsert(node)
    return cache


def _free(cache: cache_mod.Cache, node: str) -> dict[names.ResourceName, int]:
    fp = cache.snapshot.placements[H100]
    return fp.tree.free[fp.tree.leaf_of_node[node]]


def test_bound_pods_without_the_label_take_room_from_their_node() -> None:
    cache = _cache()
    pods = placed_pods.PlacedPods(cache)
    assert _free(cache, "n1")[GPU] == 8
    other = pod("daemon", placed_by=None, node="n1", gpus=3, phase="Running")
    assert pods.take(other, deleted=False) == (None, False)
    assert _free(cache, "n1")[GPU] == 5
    assert _free(cache, "n1")[quantity.PODS] == 109
    placed = pod("placed", node="n2", phase="Running")
    assert pods.take(placed, deleted=False) == ("job-uid", False)
    assert _free(cache, "n2")[GPU] == 8, "placed pods are counted by admission"
    finished = dict(other, status={"phase": "Succeeded"})
    assert pods.take(finished, deleted=False) == (None, True), "room freed on a placed node"
    assert _free(cache, "n1")[GPU] == 8


def test_a_forged_placed_label_does_not_hide_a_pods_usage() -> None:
    """``berth.dev/tas`` naming no job Berth manages: the pod is others' usage like any pod."""
    cache = _cache()
    pods = placed_pods.PlacedPods(cache)
    forged = pod("sneaky", node="n1", phase="Running", placed_by="no-such-job")
    assert pods.take(forged, deleted=False, known={"job-uid"}.__contains__) == (None, False)
    assert _free(cache, "n1")[GPU] == 0
    assert "no-such-job" not in pods.by_job


def test_pods_on_nodes_of_no_topology_free_nothing_worth_a_retry() -> None:
    cache = _cache()
    pods = placed_pods.PlacedPods(cache)
    elsewhere = pod("web", placed_by=None, node="cpu-1", phase="Running")
    pods.take(elsewhere, deleted=False)
    assert pods.take(elsewhere, deleted=True) == (None, False)


def test_placed_pods_are_kept_by_the_job_that_placed_them() -> None:
    pods = placed_pods.PlacedPods(_cache())
    pods.take(pod("a", gated=True), deleted=False)
    assert pods.waiting("job-uid")
    pods.take(pod("a", host="n1"), deleted=False)
    assert not pods.waiting("job-uid")
    pods.take(pod("a", host="n1"), deleted=True)
    assert "job-uid" not in pods.by_job


def test_a_topology_pod_set_labels_its_pods_with_the_job_that_placed_them() -> None:
    admission = api_workload.Admission.model_validate(
        {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"nvidia.com/gpu": "h100"},
                    "count": 3,
                    "topologyAssignment": {
                        "levels": [HOST],
                        "domains": [{"values": ["h1"], "count": 2}, {"values": ["h2"], "count": 1}],
                    },
                }
            ],
        }
    )
    flavors = {
        H100: resourceflavor.ResourceFlavor.model_validate(
            {
                "metadata": {"name": "h100"},
                "spec": {"nodeLabels": {"gpu": "h100"}, "topologyName": "dc"},
            }
        )
    }
    (run,) = workload_body.runs(admission, flavors, 3, job_uid="u-1")
    assert run.topology == BY_HOST
    labels, selector, _ = podsets.placed({}, pod_set="main", flavors=list(run.placements))
    assert labels[topology.PLACED_LABEL] == "u-1"
    assert selector == {"gpu": "h100"}


BAD_YAML = {
    "hostname not last": (
        {"levels": [{"nodeLabel": HOST}, {"nodeLabel": RACK}]},
        "spec.levels[0].nodeLabel",
        "may only be the last",
    ),
    "a level twice": (
        {"levels": [{"nodeLabel": RACK}, {"nodeLabel": RACK}]},
        "spec.levels[1].nodeLabel",
        "list each label once",
    ),
    "no levels": ({"levels": []}, "spec.levels", "at least 1"),
    "empty label": ({"levels": [{"nodeLabel": ""}]}, "spec.levels[0].nodeLabel", "at least 1"),
}


@pytest.mark.parametrize(("spec", "path", "words"), BAD_YAML.values(), ids=list(BAD_YAML))
def test_an_admins_bad_topology_is_refused_naming_the_field(
    spec: dict[str, Any], path: str, words: str
) -> None:
    doc = {"apiVersion": "berth.dev/v1beta1", "kind": "Topology", "metadata": {"name": "dc"}}
    _, problems = kinds.try_load({**doc, "spec": spec})
    assert [p.path for p in problems] == [path]
    assert words in problems[0].message


def test_a_restarted_operator_pins_the_pods_that_still_wait() -> None:
    """After a restart, priming lists the Job and its pods: the waiting ones are asked for.

    A pod carrying the job's uid but not owned by the job is not one of its placed pods.
    """
    world = world_mod.World(configuration.Configuration(), clock=lambda: 0.0)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "gang",
            "namespace": "ml",
            "uid": "job-uid",
            "labels": {QUEUE_LABEL: "lq"},
        },
        "spec": {"suspend": False, "parallelism": 2, "template": {"spec": {"containers": []}}},
    }
    world.apply("Job", job)
    waiting = pod("gang-0", gated=True)
    waiting["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "gang",
            "uid": "job-uid",
            "controller": True,
        }
    ]
    world.apply("Pod", waiting)
    assert "job-uid" in world.to_pin
    assert world.placed_pods.waiting("job-uid")
    stranger = pod("other", gated=True, placed_by="job-uid")  # no owner: not the job's pod
    world.apply("Pod", stranger)
    assert "ml/other" not in world.placed_pods.by_job["job-uid"]
