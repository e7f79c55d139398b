"""Berth's own kinds under attack.

A Workload editor (and a priority boost on a Workload or a job), an admin deleting what is in
use, and objects stored while the webhook was away. Real API server, real RBAC, the operator
running.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import adversary
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    get,
    gpu_job,
    local_queue,
    priority_class,
    running_pods,
    without_webhooks,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]


def _admitted(plane: launcher.ControlPlane, ns: str, job: str) -> bool:
    return condition(workload_of(plane, ns, job), "Admitted").get("status") == "True"


def test_a_workload_editor_cannot_change_an_admitted_workload(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    ns = new_namespace(gpu_cluster, "editor")
    gpu_cluster.kubectl().apply(
        [
            flavor(f"{ns}-a100", dict(kwok.A100_LABELS)),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}),
            local_queue("lq", ns, f"{ns}-cq"),
            priority_class(f"{ns}-low", 10),
        ]
    )
    user = adversary.namespace_user(
        gpu_cluster, ns, tmp_path, extra_rules=adversary.WORKLOAD_EDITOR_RULES
    )
    user.kubectl.run(
        "create",
        "-f",
        "-",
        stdin=yaml.safe_dump(gpu_job("train", ns, "lq", 2, runs_for="120s", priority=f"{ns}-low")),
    )
    wait_until(lambda: _admitted(gpu_cluster, ns, "train"), timeout=60)
    name = workload_of(gpu_cluster, ns, "train")["metadata"]["name"]
    edits: list[tuple[dict[str, Any], str]] = [
        ({"spec": {"priority": 2_000_000_000}}, "spec.priority"),
        ({"spec": {"queueName": "elsewhere"}}, "spec.queueName"),
        # KEP-7990's boost lifts it above any preemptor; only the Configuration's setters may.
        (
            {"metadata": {"annotations": {"berth.dev/priority-boost": "1000000000"}}},
            "priorityBoost.setters",
        ),
    ]
    for patch, field in edits:
        message = user.denied(
            "patch", "workload", name, "-n", ns, "--type=merge", "-p", yaml.safe_dump(patch)
        )
        assert field in message
    podsets = workload_of(gpu_cluster, ns, "train")["spec"]["podSets"]
    podsets[0]["count"] = 8
    message = user.denied(
        "patch",
        "workload",
        name,
        "-n",
        ns,
        "--type=merge",
        "-p",
        yaml.safe_dump({"spec": {"podSets": podsets}}),
    )
    assert "spec.podSets" in message
    wl = workload_of(gpu_cluster, ns, "train")
    assert wl["spec"]["priority"] == 10
    assert wl["spec"]["podSets"][0]["count"] == 2
    assert "berth.dev/priority-boost" not in (wl["metadata"].get("annotations") or {})
    # A checkpoint the job reports reaches its Workload; one that is no time is refused.
    checkpoint = {"berth.dev/checkpointed-at": "2026-12-02T10:00:00Z"}
    user.patch("job", "train", {"metadata": {"annotations": checkpoint}})
    wait_until(
        lambda: (
            (workload_of(gpu_cluster, ns, "train")["metadata"].get("annotations") or {}).get(
                "berth.dev/checkpointed-at"
            )
            == checkpoint["berth.dev/checkpointed-at"]
        ),
        timeout=30,
    )
    bad = yaml.safe_dump({"metadata": {"annotations": {"berth.dev/checkpointed-at": "noon"}}})
    message = user.denied("patch", "job", "train", "-n", ns, "--type=merge", "-p", bad)
    assert "metadata.annotations[berth.dev/checkpointed-at]" in message
    boosted = gpu_job("boosted", ns, "lq", 1, runs_for="10s")
    boosted["metadata"]["annotations"] = {"kueue.x-k8s.io/priority-boost": "1000"}
    message = user.denied("create", "-f", "-", stdin=yaml.safe_dump(boosted))
    assert "metadata.annotations[kueue.x-k8s.io/priority-boost]" in message


def test_a_namespace_admin_cannot_weigh_its_own_local_queue_up(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator (and its webhooks)
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    tmp_path: Path,
) -> None:
    """The chart lets namespace admins manage LocalQueues; a weight stays the cluster's say."""
    ns = new_namespace(gpu_cluster, "weigh")
    gpu_cluster.kubectl().apply(
        [
            flavor(f"{ns}-a100", dict(kwok.A100_LABELS)),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}),
        ]
    )
    rules = ({"apiGroups": ["berth.dev"], "resources": ["localqueues"], "verbs": ["*"]},)
    user = adversary.namespace_user(gpu_cluster, ns, tmp_path, extra_rules=rules)
    heavy = local_queue("lq", ns, f"{ns}-cq")
    heavy["spec"]["fairSharing"] = {"weight": "1000"}
    message = user.denied("create", "-f", "-", stdin=yaml.safe_dump(heavy))
    assert "spec.fairSharing.weight" in message
    user.apply(local_queue("lq", ns, f"{ns}-cq"))  # the default weight is the user's to give
    message = user.denied(
        "patch",
        "localqueue",
        "lq",
        "-n",
        ns,
        "--type=merge",
        "-p",
        yaml.safe_dump({"spec": {"fairSharing": {"weight": "50"}}}),
    )
    assert "admissionFairSharing.weightSetters" in message


def test_a_flavor_and_cluster_queue_in_use_are_kept_until_nothing_uses_them(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "inuse")
    admin = gpu_cluster.kubectl()
    rf, cq = f"{ns}-a100", f"{ns}-cq"
    admin.apply(
        [
            flavor(rf, dict(kwok.A100_LABELS)),
            cluster_queue(cq, ns, {rf: 8}),
            local_queue("lq", ns, cq),
        ]
    )
    wait_until(
        lambda: (
            "berth.dev/resource-in-use"
            in get(gpu_cluster, "clusterqueue", cq)["metadata"].get("finalizers", [])
        ),
        timeout=30,
    )
    admin.create([gpu_job("train", ns, "lq", 2, runs_for="15s")])
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 2, timeout=60)
    admin.run("delete", "resourceflavor", rf, "--wait=false")
    admin.run("delete", "clusterqueue", cq, "--wait=false")
    # Both stay; the running Job goes on; the ClusterQueue admits nothing new and says why.
    wait_until(
        lambda: (
            condition(get(gpu_cluster, "clusterqueue", cq), "Active").get("reason") == "Terminating"
        ),
        timeout=30,
    )
    assert get(gpu_cluster, "resourceflavor", rf)["metadata"]["deletionTimestamp"]
    assert running_pods(gpu_cluster, ns, "train") == 2
    # Its status names what its deletion waits for.
    train = workload_of(gpu_cluster, ns, "train")["metadata"]["name"]
    active = condition(get(gpu_cluster, "clusterqueue", cq), "Active")
    assert f"still reserved by 1: Workload {ns}/{train}" in active["message"], active
    wait_until(lambda: "ResourceInUse" in _reasons(gpu_cluster, "ResourceFlavor", rf), 30)
    admin.create([gpu_job("late", ns, "lq", 1, runs_for="5s")])
    # Once the Job finished nothing reserves the queue's quota: both go, queue first.
    wait_until(lambda: _gone(admin, "clusterqueue", cq), timeout=120)
    wait_until(lambda: _gone(admin, "resourceflavor", rf), timeout=60)
    assert not _admitted(gpu_cluster, ns, "late")


def test_a_cluster_queue_stored_past_the_webhook_is_inactive_with_its_errors(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    ns = new_namespace(gpu_cluster, "invalid")
    admin = gpu_cluster.kubectl()
    rf, cq = f"{ns}-a100", f"{ns}-cq"
    bad = cluster_queue(cq, ns, {rf: 8})
    groups = bad["spec"]["resourceGroups"]
    groups.append(dict(groups[0]))  # the same flavor twice: the webhook refuses it
    admin.apply([flavor(rf, dict(kwok.A100_LABELS)), local_queue("lq", ns, cq)])
    with without_webhooks(gpu_cluster):
        admin.apply([bad])
    wait_until(
        lambda: (
            condition(get(gpu_cluster, "clusterqueue", cq), "Active").get("reason") == "InvalidSpec"
        ),
        timeout=30,
    )
    active = condition(get(gpu_cluster, "clusterqueue", cq), "Active")
    assert active["status"] == "False"
    assert "spec.resourceGroups[1]" in active["message"]
    admin.create([gpu_job("train", ns, "lq", 1, runs_for="5s")])
    wait_until(lambda: workload_of(gpu_cluster, ns, "train") != {}, timeout=30)
    wait_until(
        lambda: (
            condition(get(gpu_cluster, "localqueue", "lq", "-n", ns), "Active").get("reason")
            == "ClusterQueueIsInactive"
        ),
        timeout=30,
    )
    wait_until(
        lambda: get(gpu_cluster, "localqueue", "lq", "-n", ns)["status"]["pendingWorkloads"] == 1,
        timeout=30,
    )
    assert not _admitted(gpu_cluster, ns, "train")
    # The operator still puts its finalizer on the invalid queue (a metadata-only update the
    # webhook does not refuse for the stored spec), and a delete of it completes.
    wait_until(
        lambda: (
            "berth.dev/resource-in-use"
            in get(gpu_cluster, "clusterqueue", cq)["metadata"].get("finalizers", [])
        ),
        timeout=30,
    )
    admin.run("delete", "clusterqueue", cq, "--wait=false")
    wait_until(lambda: _gone(admin, "clusterqueue", cq), timeout=60)


def _gone(admin: Any, kind: str, name: str) -> bool:
    return bool(admin.run("get", kind, name, "--ignore-not-found", "-o", "name") == "")


def _reasons(plane: launcher.ControlPlane, kind: str, name: str) -> set[str]:
    items = get(
        plane,
        "events",
        "-A",
        "--field-selector",
        f"involvedObject.kind={kind},involvedObject.name={name}",
    )["items"]
    return {e["reason"] for e in items}
