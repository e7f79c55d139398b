"""Pod groups end to end: plain Pods held by Berth's scheduling gate and admitted together.

A control plane of its own (the e2e GPU pools: A100 nodes, and H100 nodes tainted so only
tolerating pods land there) and ``berth run`` with ``pod`` in ``integrations.frameworks``. kwok
plays the kubelet: pods are scheduled by the real kube-scheduler once Berth lifts its gate, and
run by kwok (a member succeeds after its ``pod-complete`` delay, by the project's kwok stage).

The group ``train`` has two roles: ``head`` (one 1-GPU pod) and ``worker`` (four 2-GPU pods).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import adversary
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    GPU_POOLS,
    H100_TOLERATION,
    QUEUE_LABEL,
    OperatorProcess,
    condition,
    get,
    gpu_job,
    live_pods,
    operator_with_frameworks,
    roles_on_models,
    running,
    two_pool_queue,
    usage_is_zero,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
GROUP_LABEL = "berth.dev/pod-group-name"
TOTAL = "berth.dev/pod-group-total-count"
GATE = "berth.dev/admission"
ROLE = "role"
"""The test's own label on each member: which role it plays."""


@pytest.fixture(scope="module")
def pods_cluster(
    control_plane_factory: Callable[..., launcher.ControlPlane],
) -> launcher.ControlPlane:
    """A full control plane with the e2e GPU pools, for an operator with the pod integration."""
    return control_plane_factory("pods-cluster", scheduling=True, node_pools=GPU_POOLS)


@pytest.fixture(scope="module")
def pods_operator(
    pods_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster, with the pod integration on."""
    operator = operator_with_frameworks(
        pods_cluster, tmp_path_factory.mktemp("pods-operator"), ["batch/job", "pod"]
    )
    yield operator
    operator.stop()


def member(
    name: str,
    ns: str,
    *,
    role: str,
    gpus: int,
    runs_for: str,
    priority: str,
    group: tuple[str, int] | None = None,
) -> dict[str, Any]:
    """A queued Pod asking ``gpus`` GPUs, a member of ``group`` (name, size) or alone."""
    labels = {QUEUE_LABEL: "lq", "berth.dev/priority-class": priority, ROLE: role}
    annotations = kwok.pod_timing(runs_for)
    if group is not None:
        labels[GROUP_LABEL] = group[0]
        annotations[TOTAL] = str(group[1])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": role,
                    "image": "registry.invalid/train:never-pulled",
                    "resources": {"limits": {kwok.GPU_RESOURCE: str(gpus)}},
                }
            ],
        },
    }


def train_group(ns: str, *, runs_for: str, priority: str) -> list[dict[str, Any]]:
    """``head`` (1 GPU) and four ``worker`` pods (2 GPUs each): 9 GPUs, a group of 5."""
    group = ("train", 5)
    return [
        member(
            "train-head",
            ns,
            role="head",
            gpus=1,
            runs_for=runs_for,
            priority=priority,
            group=group,
        ),
        *(
            member(
                f"train-worker-{i}",
                ns,
                role="worker",
                gpus=2,
                runs_for=runs_for,
                priority=priority,
                group=group,
            )
            for i in range(4)
        ),
    ]


def _members(plane: launcher.ControlPlane, ns: str, group: str) -> list[dict[str, Any]]:
    return live_pods(plane, ns, f"{GROUP_LABEL}={group}")


def _gated(pod: dict[str, Any]) -> bool:
    return any(g.get("name") == GATE for g in pod["spec"].get("schedulingGates") or [])


def _group_workload(plane: launcher.ControlPlane, ns: str, group: str) -> dict[str, Any]:
    found = [
        w
        for w in get(plane, "workloads", "-n", ns)["items"]
        if w["metadata"].get("labels", {}).get("berth.dev/pod-group") == group
    ]
    return found[0] if found else {}


def test_a_pod_group_is_admitted_whole_on_each_roles_flavor_and_preempted_whole(
    pods_cluster: launcher.ControlPlane,
    pods_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    plane = pods_cluster
    ns = new_namespace(plane, "podgroup")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))

    # A 4-GPU Job holds half the H100 quota for a while: the 9-GPU group fits only after it (at
    # the same priority, so it waits rather than preempts).
    filler = gpu_job("filler", ns, "lq", 4, runs_for="15s", priority=f"{ns}-mid")
    filler["spec"]["template"]["spec"]["tolerations"] = [H100_TOLERATION]
    client.apply([filler])
    wait_until(lambda: condition(workload_of(plane, ns, "filler"), "Admitted") != {}, timeout=30)

    # Four of five members: held by the gate, and no Workload until the group is whole.
    pods = train_group(ns, runs_for="600s", priority=f"{ns}-mid")
    client.create(pods[1:])
    wait_until(lambda: len(_members(plane, ns, "train")) == 4, timeout=30)
    assert all(_gated(p) for p in _members(plane, ns, "train"))
    assert _group_workload(plane, ns, "train") == {}
    client.create(pods[:1])
    wait_until(lambda: _group_workload(plane, ns, "train") != {}, timeout=30)
    wl = _group_workload(plane, ns, "train")
    assert wl["metadata"]["name"] == "train"  # as Kueue names a group's Workload
    assert sorted(ps["count"] for ps in wl["spec"]["podSets"]) == [1, 4]
    assert sorted(r["name"] for r in wl["metadata"]["ownerReferences"]) == sorted(
        p["metadata"]["name"] for p in pods
    )
    assert all(_gated(p) and not p["spec"].get("nodeName") for p in _members(plane, ns, "train"))

    # Once the filler is done the whole group runs, each role on its flavor's nodes.
    wait_until(lambda: len(running(_members(plane, ns, "train"))) == 5, timeout=120)
    placed = roles_on_models(plane, running(_members(plane, ns, "train")), ROLE)
    assert placed == {
        ("head", kwok.A100_LABELS["nvidia.com/gpu.product"]),
        ("worker", kwok.H100_LABELS["nvidia.com/gpu.product"]),
    }
    tolerated = {
        p["metadata"]["labels"][ROLE]
        for p in _members(plane, ns, "train")
        if H100_TOLERATION in (p["spec"].get("tolerations") or [])
    }
    assert tolerated == {"worker"}

    # A higher-priority pod alone needs 4 H100 GPUs: the group is preempted whole (every
    # member deleted, as Kueue does), and its Workload waits, requeued.
    client.create(
        [member("urgent", ns, role="urgent", gpus=4, runs_for="10s", priority=f"{ns}-high")]
    )
    wait_until(lambda: _members(plane, ns, "train") == [], timeout=60)
    preempted = condition(_group_workload(plane, ns, "train"), "Preempted")
    assert preempted.get("status") == "True", preempted
    wait_until(
        lambda: (
            live_pods(plane, ns, "role=urgent") != []
            and running(live_pods(plane, ns, "role=urgent")) != []
        ),
        timeout=60,
    )

    # Whoever made the pods makes them again: the replacements join the same Workload and run
    # whole once the urgent pod is done; they finish, and the quota returns to zero.
    client.create(train_group(ns, runs_for="5s", priority=f"{ns}-mid"))
    wait_until(
        lambda: condition(_group_workload(plane, ns, "train"), "Finished").get("status") == "True",
        timeout=180,
    )
    succeeded = [
        p
        for p in get(plane, "pods", "-n", ns, "-l", f"{GROUP_LABEL}=train")["items"]
        if p["status"].get("phase") == "Succeeded"
    ]
    assert len(succeeded) == 5
    client.run("delete", "pods", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    client.run("delete", "jobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)


def test_an_ordinary_user_cannot_run_a_queued_pod_around_the_queue(
    pods_cluster: launcher.ControlPlane,
    pods_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = pods_cluster
    ns = new_namespace(plane, "podgroup-user")
    plane.kubectl().apply(two_pool_queue(ns))
    user = adversary.namespace_user(plane, ns, tmp_path)

    # 12 GPUs never fit the 9 of quota: the group stays gated, and the gate cannot be lifted,
    # nor the pod moved off its queue or group, by hand.
    group = ("big", 2)
    for i in range(2):
        user.apply(
            member(
                f"big-{i}",
                ns,
                role="worker",
                gpus=6,
                runs_for="60s",
                priority=f"{ns}-low",
                group=group,
            )
        )
    wait_until(lambda: _group_workload(plane, ns, "big") != {}, timeout=30)
    refused = user.denied(
        "patch",
        "pod",
        "big-0",
        "-n",
        ns,
        "--type=json",
        "-p",
        json.dumps([{"op": "remove", "path": "/spec/schedulingGates/0"}]),
    )
    assert "spec.schedulingGates" in refused
    assert "not" in refused
    for label, value in (
        (QUEUE_LABEL, "elsewhere"),
        (GROUP_LABEL, "other"),
        ("berth.dev/managed", None),
    ):
        refused = user.denied(
            "patch",
            "pod",
            "big-0",
            "-n",
            ns,
            "--type=merge",
            "-p",
            json.dumps({"metadata": {"labels": {label: value}}}),
        )
        assert label in refused
    assert all(_gated(p) and not p["spec"].get("nodeName") for p in _members(plane, ns, "big"))

    # A queued pod that names its node is refused (it would skip the gate and the scheduler).
    placed = member("placed", ns, role="worker", gpus=1, runs_for="60s", priority=f"{ns}-low")
    placed["spec"]["nodeName"] = get(plane, "nodes")["items"][0]["metadata"]["name"]
    refused = user.denied("apply", "-f", "-", stdin=json.dumps(placed))
    assert "nodeName" in refused

    # Berth's member label on a pod that names no queue (so was never gated) is refused: it
    # would make a running pod count in someone's group.
    posing = member("posing", ns, role="worker", gpus=1, runs_for="60s", priority=f"{ns}-low")
    del posing["metadata"]["labels"][QUEUE_LABEL]
    posing["metadata"]["labels"]["berth.dev/managed"] = "true"
    refused = user.denied("apply", "-f", "-", stdin=json.dumps(posing))
    assert "berth.dev/managed" in refused

    # A forged role: a 1-GPU and an 8-GPU pod both claiming one role would count as two 1-GPU
    # pods. The webhook writes each pod's role from its own spec, so the Workload asks for 9.
    forged = ("forged", 2)
    small = member(
        "forged-small", ns, role="a", gpus=1, runs_for="60s", priority=f"{ns}-low", group=forged
    )
    large = member(
        "forged-large", ns, role="b", gpus=8, runs_for="60s", priority=f"{ns}-low", group=forged
    )
    for pod in (small, large):
        pod["metadata"]["annotations"]["berth.dev/role-hash"] = "deadbeef"
        user.apply(pod)
    wait_until(lambda: _group_workload(plane, ns, "forged") != {}, timeout=30)
    pod_sets = _group_workload(plane, ns, "forged")["spec"]["podSets"]
    assert len(pod_sets) == 2
    asked = sorted(
        int(c["resources"]["limits"][kwok.GPU_RESOURCE])
        for ps in pod_sets
        for c in ps["template"]["spec"]["containers"]
    )
    assert asked == [1, 8]
    plane.kubectl().run("delete", "pods", "--all", "-n", ns, "--wait=true", "--timeout=60s")
