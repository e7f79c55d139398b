"""RayJob and RayCluster end to end, against the real KubeRay operator built from its module.

A control plane of its own (the e2e GPU pools: A100 nodes, and H100 nodes tainted so only
tolerating pods land there) with KubeRay v1.6.1 installed from its module's CRDs
(``devcluster.frameworks``), and ``berth run`` with ``ray.io/rayjob`` and ``ray.io/raycluster``
in ``integrations.frameworks``. kwok plays the kubelet: the RayCluster KubeRay makes for a RayJob
gets its pods scheduled by the real kube-scheduler and run by kwok; no Ray process runs, so a
RayJob never gets further than ``Running``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import adversary
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
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
    team_on_two_pools,
    two_pool_queue,
    usage_is_zero,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
NODE_TYPE_LABEL = "ray.io/node-type"
JOB_UID_LABEL = "berth.dev/job-uid"


@pytest.fixture(scope="module")
def ray_operator(
    kuberay_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster, with the RayJob and RayCluster integrations on."""
    home = tmp_path_factory.mktemp("kuberay-operator")
    operator = operator_with_frameworks(
        kuberay_cluster, home, ["batch/job", "ray.io/rayjob", "ray.io/raycluster"]
    )
    yield operator
    operator.stop()


def _template(gpus: int, runs_for: str = "600s") -> dict[str, Any]:
    template: dict[str, Any] = gpu_job("x", "ns", "lq", 1, runs_for=runs_for)["spec"]["template"]
    container = template["spec"]["containers"][0]
    container["name"] = "ray"
    container["resources"] = {"limits": {kwok.GPU_RESOURCE: str(gpus)}} if gpus else {}
    template["spec"].pop("restartPolicy")  # KubeRay sets its own
    return template


def cluster_spec(head_gpus: int, workers: int) -> dict[str, Any]:
    """A head of ``head_gpus`` GPUs and one worker group ``gpu`` of ``workers`` 1-GPU pods."""
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": _template(head_gpus)},
        "workerGroupSpecs": [
            {
                "groupName": "gpu",
                "replicas": workers,
                "minReplicas": 0,
                "maxReplicas": workers,
                "rayStartParams": {},
                "template": _template(1),
            }
        ],
    }


def ray_job(name: str, ns: str, *, workers: int, priority: str) -> dict[str, Any]:
    """A queued RayJob: a 1-GPU head, ``workers`` 1-GPU workers, a submitter of no GPU."""
    submitter = _template(0)
    submitter["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {QUEUE_LABEL: "lq", "berth.dev/priority-class": priority},
        },
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "submitterPodTemplate": submitter,
            "rayClusterSpec": cluster_spec(1, workers),
        },
    }


def ray_cluster(name: str, ns: str, *, workers: int, priority: str) -> dict[str, Any]:
    """A queued RayCluster: a head of no GPU and ``workers`` 1-GPU workers."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {QUEUE_LABEL: "lq", "berth.dev/priority-class": priority},
        },
        "spec": cluster_spec(0, workers),
    }


def _claiming(cluster: dict[str, Any], rayjob: dict[str, Any]) -> dict[str, Any]:
    """``cluster``, made by a user, with an owner reference naming ``rayjob`` its controller."""
    meta = rayjob["metadata"]
    ref = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": meta["name"], "uid": meta["uid"]}
    cluster["metadata"]["ownerReferences"] = [{**ref, "controller": True}]
    return cluster


def _pods_of(plane: launcher.ControlPlane, ns: str, kind: str, name: str) -> list[dict[str, Any]]:
    uid = get(plane, kind, name, "-n", ns)["metadata"]["uid"]
    return live_pods(plane, ns, f"{JOB_UID_LABEL}={uid}")


def test_a_rayjob_is_admitted_whole_on_each_roles_flavor_and_preempted_whole(
    kuberay_cluster: launcher.ControlPlane,
    ray_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    plane = kuberay_cluster
    ns = new_namespace(plane, "rayjob")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))

    # A 4-GPU Job holds half the H100 quota for a while: the 9-GPU RayJob fits only after it
    # (at the same priority, so it waits rather than preempts).
    filler = gpu_job("filler", ns, "lq", 4, runs_for="12s", priority=f"{ns}-mid")
    client.apply([filler])
    wait_until(lambda: condition(workload_of(plane, ns, "filler"), "Admitted") != {}, timeout=30)

    client.apply([ray_job("train", ns, workers=8, priority=f"{ns}-mid")])
    wait_until(lambda: workload_of(plane, ns, "train") != {}, timeout=30)
    stored = get(plane, "rayjob", "train", "-n", ns)
    assert stored["spec"]["suspend"] is True  # Berth's webhook suspended it
    submitted = copy.deepcopy(stored["spec"])
    wl = workload_of(plane, ns, "train")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [
        ("head", 1),
        ("gpu", 8),
        ("submitter", 1),
    ]
    assert get(plane, "rayclusters", "-n", ns)["items"] == []  # KubeRay made nothing yet

    # Once the filler is done the whole gang runs, each role on its flavor's nodes; KubeRay
    # then starts the submitter Job on the cluster, placed too.
    wait_until(lambda: len(running(_pods_of(plane, ns, "rayjob", "train"))) == 10, timeout=120)
    pods = running(_pods_of(plane, ns, "rayjob", "train"))
    cluster_pods = [p for p in pods if NODE_TYPE_LABEL in p["metadata"]["labels"]]
    assert roles_on_models(plane, cluster_pods, NODE_TYPE_LABEL) == {
        ("head", kwok.A100_LABELS["nvidia.com/gpu.product"]),
        ("worker", kwok.H100_LABELS["nvidia.com/gpu.product"]),
    }
    tolerated = {
        p["metadata"]["labels"][NODE_TYPE_LABEL]
        for p in cluster_pods
        if H100_TOLERATION in (p["spec"].get("tolerations") or [])
    }
    assert tolerated == {"worker"}
    submitter = [p for p in pods if NODE_TYPE_LABEL not in p["metadata"]["labels"]]
    assert len(submitter) == 1
    assert submitter[0]["metadata"]["labels"]["berth.dev/podset"] == "submitter"

    # A higher-priority RayCluster needs 4 H100 GPUs: train is preempted whole, every pod of it
    # goes (KubeRay deletes its cluster and submitter Job), and its spec comes back as submitted.
    client.apply([ray_cluster("urgent", ns, workers=4, priority=f"{ns}-high")])
    wait_until(lambda: len(running(_pods_of(plane, ns, "raycluster", "urgent"))) == 5, timeout=120)
    wait_until(lambda: _pods_of(plane, ns, "rayjob", "train") == [], timeout=90)
    preempted = condition(workload_of(plane, ns, "train"), "Preempted")
    assert preempted.get("status") == "True", preempted
    wait_until(
        lambda: get(plane, "rayjob", "train", "-n", ns)["spec"] == {**submitted, "suspend": True},
        timeout=30,
    )

    # Quota returns to zero once they are gone.
    for kind in ("rayjobs", "rayclusters", "jobs"):
        client.run("delete", kind, "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)


RAY_RULES = ({"apiGroups": ["ray.io"], "resources": ["rayjobs", "rayclusters"], "verbs": ["*"]},)
"""What a team member gets on KubeRay's kinds beside the usual Job rights."""


def test_an_ordinary_user_cannot_start_a_rayjob_or_its_cluster_around_the_queue(
    kuberay_cluster: launcher.ControlPlane,
    ray_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = kuberay_cluster
    ns = new_namespace(plane, "ray-user")
    plane.kubectl().apply(two_pool_queue(ns))
    user = adversary.namespace_user(plane, ns, tmp_path, extra_rules=RAY_RULES)
    # 12 GPUs never fit the 9 of quota: it stays queued, and cannot be started by hand.
    user.apply(ray_job("big", ns, workers=11, priority=f"{ns}-low"))
    wait_until(lambda: workload_of(plane, ns, "big") != {}, timeout=30)
    refused = user.denied(
        "patch", "rayjob", "big", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert "RayJob" in refused
    assert "queued in LocalQueue lq" in refused

    # A RayCluster claiming to be that RayJob's (as KubeRay's own would) is held with it: it is
    # created suspended and cannot be started while the RayJob is not admitted.
    big = get(plane, "rayjob", "big", "-n", ns)
    forged = _claiming(ray_cluster("big-cluster", ns, workers=8, priority=f"{ns}-low"), big)
    user.apply(forged)
    assert get(plane, "raycluster", "big-cluster", "-n", ns)["spec"]["suspend"] is True
    refused = user.denied(
        "patch",
        "raycluster",
        "big-cluster",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"suspend":false}}',
    )
    assert "part of a job Berth queues" in refused
    assert workload_of(plane, ns, "big-cluster") == {}  # never a job of its own
    # Nor does a RayCluster that is not queued ever reach a GPU node's taint (no toleration).
    assert live_pods(plane, ns, "ray.io/cluster=big-cluster") == []
    # What Kueue refuses is refused with the field named, never a traceback.
    autoscaled = ray_job("autoscaled", ns, workers=1, priority=f"{ns}-low")
    autoscaled["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    refused = user.denied("apply", "-f", "-", stdin=yaml.safe_dump(autoscaled))
    assert "spec.rayClusterSpec.enableInTreeAutoscaling" in refused
    assert "Traceback" not in refused


def test_an_ordinary_user_cannot_run_more_than_an_admitted_rayjobs_cluster(
    kuberay_cluster: launcher.ControlPlane,
    ray_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = kuberay_cluster
    ns = new_namespace(plane, "ray-forge")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))
    user = adversary.namespace_user(plane, ns, tmp_path, extra_rules=RAY_RULES)
    user.apply(ray_job("small", ns, workers=2, priority=f"{ns}-low"))
    # head, 2 workers and the submitter
    wait_until(lambda: len(running(_pods_of(plane, ns, "rayjob", "small"))) == 4, timeout=120)
    small = get(plane, "rayjob", "small", "-n", ns)
    cluster = small["status"]["rayClusterName"]

    # A RayCluster claiming the admitted RayJob under another name than KubeRay's: created
    # suspended, and it cannot be started.
    forged = _claiming(ray_cluster("small-extra", ns, workers=8, priority=f"{ns}-low"), small)
    user.apply(forged)
    assert get(plane, "raycluster", "small-extra", "-n", ns)["spec"]["suspend"] is True
    refused = user.denied(
        "patch",
        "raycluster",
        "small-extra",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"suspend":false}}',
    )
    assert f"status.rayClusterName ({cluster}); small-extra is not it" in refused
    assert live_pods(plane, ns, "ray.io/cluster=small-extra") == []
    # Nor may KubeRay's own cluster grow past what the RayJob makes (KubeRay keeps replicas
    # within maxReplicas: both go up).
    grow = json.dumps(
        [
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 8},
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 8},
        ]
    )
    refused = user.denied("patch", "raycluster", cluster, "-n", ns, "--type=json", "-p", grow)
    assert "pod set gpu: 8 pods at once, more than the 2 made" in refused
    assert "Traceback" not in refused
    assert len(_pods_of(plane, ns, "rayjob", "small")) == 4

    for kind in ("rayjobs", "rayclusters", "jobs"):
        client.run("delete", kind, "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)


def _two_group_cluster(name: str, ns: str) -> dict[str, Any]:
    """A queued RayCluster: a head and 6 workers asking for nothing, and one 1-GPU worker."""
    obj = ray_cluster(name, ns, workers=1, priority=f"{ns}-mid")
    cpu = copy.deepcopy(obj["spec"]["workerGroupSpecs"][0])
    cpu.update({"groupName": "cpu", "replicas": 6, "maxReplicas": 6, "template": _template(0)})
    obj["spec"]["workerGroupSpecs"].insert(0, cpu)
    return obj


def _gpus_running(plane: launcher.ControlPlane, ns: str, name: str) -> int:
    def gpus(pod: dict[str, Any]) -> int:
        return sum(
            int(((c.get("resources") or {}).get("limits") or {}).get(kwok.GPU_RESOURCE, 0))
            for c in pod["spec"]["containers"]
        )

    return sum(gpus(p) for p in running(_pods_of(plane, ns, "raycluster", name)))


def test_a_running_rayclusters_worker_groups_are_checked_one_by_one(
    kuberay_cluster: launcher.ControlPlane,
    ray_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    """Replicas moved from one group to another, or raised by minReplicas, are refused."""
    plane = kuberay_cluster
    ns = new_namespace(plane, "ray-groups")
    user = team_on_two_pools(plane, ns, tmp_path, RAY_RULES)
    user.apply(_two_group_cluster("groups", ns))
    wait_until(lambda: len(running(_pods_of(plane, ns, "raycluster", "groups"))) == 8, timeout=120)
    shuffle = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 0},
        {"op": "replace", "path": "/spec/workerGroupSpecs/1/replicas", "value": 7},
        {"op": "replace", "path": "/spec/workerGroupSpecs/1/maxReplicas", "value": 7},
    ]
    refused = user.denied(
        "patch", "raycluster", "groups", "-n", ns, "--type=json", "-p", json.dumps(shuffle)
    )
    assert "spec.workerGroupSpecs[1]" in refused
    assert "pod set gpu is admitted for 1 pod(s)" in refused
    # KubeRay runs at least minReplicas whatever replicas says: that is a raise too.
    floor = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/1/minReplicas", "value": 8},
        {"op": "replace", "path": "/spec/workerGroupSpecs/1/maxReplicas", "value": 8},
    ]
    refused = user.denied(
        "patch", "raycluster", "groups", "-n", ns, "--type=json", "-p", json.dumps(floor)
    )
    assert "pod set gpu is admitted for 1 pod(s)" in refused
    assert "Traceback" not in refused
    assert _gpus_running(plane, ns, "groups") == 1


def test_a_running_rayclusters_templates_stay_fixed_whatever_else_the_update_breaks(
    kuberay_cluster: launcher.ControlPlane,
    ray_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    """An update that no longer makes a Workload is refused, not let through unchecked."""
    plane = kuberay_cluster
    ns = new_namespace(plane, "ray-lock")
    user = team_on_two_pools(plane, ns, tmp_path, RAY_RULES)
    user.apply(ray_cluster("locked", ns, workers=1, priority=f"{ns}-mid"))
    wait_until(lambda: len(running(_pods_of(plane, ns, "raycluster", "locked"))) == 2, timeout=120)
    eight = {"limits": {kwok.GPU_RESOURCE: "8"}}
    bigger = [
        {"op": "replace", "path": "/spec/enableInTreeAutoscaling", "value": True},
        {
            "op": "replace",
            "path": "/spec/workerGroupSpecs/0/template/spec/containers/0/resources",
            "value": eight,
        },
    ]
    refused = user.denied(
        "patch", "raycluster", "locked", "-n", ns, "--type=json", "-p", json.dumps(bigger)
    )
    assert "spec.enableInTreeAutoscaling" in refused
    renamed = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/groupName", "value": "head"},
        {
            "op": "replace",
            "path": "/spec/workerGroupSpecs/0/template/spec/containers/0/resources",
            "value": eight,
        },
    ]
    refused = user.denied(
        "patch", "raycluster", "locked", "-n", ns, "--type=json", "-p", json.dumps(renamed)
    )
    assert "spec.workerGroupSpecs[0].groupName" in refused
    assert "Traceback" not in refused
    # KubeRay makes a deleted worker again from the template: still one GPU.
    for pod in _pods_of(plane, ns, "raycluster", "locked"):
        if pod["metadata"]["labels"].get(NODE_TYPE_LABEL) == "worker":
            plane.kubectl().run("delete", "pod", pod["metadata"]["name"], "-n", ns, "--wait=false")
    wait_until(lambda: len(running(_pods_of(plane, ns, "raycluster", "locked"))) == 2, timeout=120)
    assert _gpus_running(plane, ns, "locked") == 1
