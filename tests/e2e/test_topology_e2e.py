"""Topology-aware admission end to end: a rack-bound gang lands in one rack, pinned by Berth.

A control plane of its own with kwok nodes in 2 blocks x 2 racks x 4 hosts of 8 GPUs (one pool
per rack, so each node carries its block and rack labels), a Topology of block, rack and host,
and ``berth run``. kube-scheduler binds the pods once Berth's ungater has given each its host
and lifted the ``berth.dev/topology`` gate; kwok runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    OperatorProcess,
    condition,
    get,
    gpu_job,
    live_pods,
    local_queue,
    operator_with_frameworks,
    running,
    usage_is_zero,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
BLOCK = "example.com/block"
RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"
GATE = "berth.dev/topology"
RACKS = tuple(
    kwok.NodePool(
        name=f"b{b}-r{r}",
        nodes=4,
        gpus_per_node=8,
        labels={**kwok.H100_LABELS, BLOCK: f"b{b}", RACK: f"b{b}-r{r}"},
    )
    for b in (1, 2)
    for r in (1, 2)
)


@pytest.fixture(scope="module")
def racks_cluster(
    control_plane_factory: Callable[..., launcher.ControlPlane],
) -> launcher.ControlPlane:
    """A full control plane whose 16 H100 nodes sit in 2 blocks of 2 racks of 4 hosts."""
    return control_plane_factory("racks-cluster", scheduling=True, node_pools=RACKS)


@pytest.fixture(scope="module")
def racks_operator(
    racks_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster."""
    operator = operator_with_frameworks(
        racks_cluster, tmp_path_factory.mktemp("racks-operator"), ["batch/job"]
    )
    yield operator
    operator.stop()


def _queues(ns: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "Topology",
            "metadata": {"name": f"{ns}-dc"},
            "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": f"{ns}-h100"},
            "spec": {"nodeLabels": dict(kwok.H100_LABELS), "topologyName": f"{ns}-dc"},
        },
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": f"{ns}-cq"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "resourceGroups": [
                    {
                        "coveredResources": [kwok.GPU_RESOURCE],
                        "flavors": [
                            {
                                "name": f"{ns}-h100",
                                "resources": [{"name": kwok.GPU_RESOURCE, "nominalQuota": "128"}],
                            }
                        ],
                    }
                ],
            },
        },
        local_queue("lq", ns, f"{ns}-cq"),
    ]


def _gang(name: str, ns: str, pods: int, *, annotations: dict[str, str]) -> dict[str, Any]:
    """A queued Job of ``pods`` 8-GPU pods (a whole host each)."""
    job = gpu_job(name, ns, "lq", pods, runs_for="600s")
    template = job["spec"]["template"]
    template["metadata"]["annotations"].update(annotations)
    template["spec"]["containers"][0]["resources"]["limits"][kwok.GPU_RESOURCE] = "8"
    return job


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return live_pods(plane, ns, f"batch.kubernetes.io/job-name={job}")


def _racks_of(plane: launcher.ControlPlane, pods: list[dict[str, Any]]) -> set[str]:
    nodes = {n["metadata"]["name"]: n for n in get(plane, "nodes")["items"]}
    return {nodes[p["spec"]["nodeName"]]["metadata"]["labels"][RACK] for p in pods}


def test_a_rack_bound_gang_lands_in_one_rack_around_others_pods(
    racks_cluster: launcher.ControlPlane,
    racks_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    plane = racks_cluster
    ns = new_namespace(plane, "tas")
    client = plane.kubectl()
    client.apply(_queues(ns))

    # Unconstrained pods pack the fullest hosts first: rack b1-r1 whole, then b1-r2-0.
    client.apply(
        [_gang("fill", ns, 5, annotations={"berth.dev/podset-unconstrained-topology": "true"})]
    )
    wait_until(lambda: len(running(_pods(plane, ns, "fill"))) == 5, timeout=90)
    fill = running(_pods(plane, ns, "fill"))
    assert sorted(p["spec"]["nodeName"] for p in fill) == [
        "b1-r1-0",
        "b1-r1-1",
        "b1-r1-2",
        "b1-r1-3",
        "b1-r2-0",
    ]
    assert all(GATE not in str(p["spec"].get("schedulingGates")) for p in fill)

    # A pod Berth does not queue takes host b1-r2-1: rack b1-r2 keeps two free hosts.
    client.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "outsider",
                    "namespace": ns,
                    "annotations": kwok.pod_timing("600s"),
                },
                "spec": {
                    "nodeSelector": {HOST: "b1-r2-1"},
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.invalid/outsider:never-pulled",
                            "resources": {"limits": {kwok.GPU_RESOURCE: "8"}},
                        }
                    ],
                },
            }
        ]
    )
    wait_until(
        lambda: get(plane, "pod", "outsider", "-n", ns)["status"].get("phase") == "Running",
        timeout=60,
    )

    # A 16-GPU gang requiring one rack: the tightest rack that holds it is b1-r2 (two hosts
    # free, counting the outsider), and every pod lands there on its pinned host.
    client.apply([_gang("gang", ns, 2, annotations={"berth.dev/podset-required-topology": RACK})])
    wait_until(lambda: len(running(_pods(plane, ns, "gang"))) == 2, timeout=90)
    gang = running(_pods(plane, ns, "gang"))
    assert _racks_of(plane, gang) == {"b1-r2"}
    assert sorted(p["spec"]["nodeName"] for p in gang) == ["b1-r2-2", "b1-r2-3"]
    assert all(p["spec"]["nodeSelector"][HOST] == p["spec"]["nodeName"] for p in gang)
    wl = workload_of(plane, ns, "gang")
    (psa,) = wl["status"]["admission"]["podSetAssignments"]
    assert psa["topologyAssignment"] == {
        "levels": [HOST],
        "domains": [{"values": ["b1-r2-2"], "count": 1}, {"values": ["b1-r2-3"], "count": 1}],
    }

    # Five pods need one rack: none has five hosts, so it never fits (quota would).
    client.apply([_gang("big", ns, 5, annotations={"berth.dev/podset-required-topology": RACK})])
    wait_until(
        lambda: (
            condition(workload_of(plane, ns, "big"), "QuotaReserved").get("reason")
            == "TopologyPlacementFailed"
        ),
        timeout=30,
    )
    assert (
        "at level example.com/rack"
        in condition(workload_of(plane, ns, "big"), "QuotaReserved")["message"]
    )

    for job in ("fill", "gang", "big"):
        client.run("delete", "job", job, "-n", ns, "--wait=false")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)
