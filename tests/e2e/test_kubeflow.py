"""A PyTorchJob end to end, against the real Kubeflow training-operator v1 built from its module.

A control plane of its own (the e2e GPU pools: A100 nodes, and H100 nodes tainted so only
tolerating pods land there) with the training-operator v1.9.4 installed from its module's CRDs
and webhook manifest (``devcluster.frameworks``), and ``berth run`` with
``kubeflow.org/pytorchjob`` in ``integrations.frameworks``. kwok plays the kubelet: pods are
scheduled by the real kube-scheduler and run by kwok.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import adversary
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    H100_TOLERATION,
    QUEUE_LABEL,
    OperatorProcess,
    condition,
    event_reasons,
    get,
    gpu_job,
    live_pods,
    operator_with_frameworks,
    roles_on_models,
    running,
    team_on_two_pools,
    two_pool_queue,
    usage_is_zero,
    without_validating_webhook,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
ROLE_LABEL = "training.kubeflow.org/replica-type"


@pytest.fixture(scope="module")
def kubeflow_operator(
    kubeflow_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster, with the PyTorchJob and TFJob integrations on."""
    home = tmp_path_factory.mktemp("kubeflow-operator")
    operator = operator_with_frameworks(
        kubeflow_cluster, home, ["batch/job", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob"]
    )
    yield operator
    operator.stop()


def pytorch_job(
    name: str, namespace: str, *, master: bool, workers: int, runs_for: str, priority: str
) -> dict[str, Any]:
    """A queued PyTorchJob of 1-GPU pods: a Master (or none) and ``workers`` Workers."""
    template = gpu_job("x", namespace, "lq", 1, runs_for=runs_for)["spec"]["template"]
    template["spec"]["containers"][0]["name"] = "pytorch"  # the name the operator requires

    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never", "template": copy.deepcopy(template)}

    replicas = {"Worker": replica(workers)}
    if master:
        replicas["Master"] = replica(1)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "lq", "berth.dev/priority-class": priority},
        },
        "spec": {"pytorchReplicaSpecs": replicas},
    }


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return live_pods(plane, ns, f"{JOB_NAME_LABEL}={job}")


def _running(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return running(_pods(plane, ns, job))


def test_a_pytorchjob_is_admitted_whole_on_each_roles_flavor_and_preempted_whole(
    kubeflow_cluster: launcher.ControlPlane,
    kubeflow_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    plane = kubeflow_cluster
    ns = new_namespace(plane, "pytorch")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))

    # A 4-GPU Job holds half the H100 quota for a while: the 9-GPU PyTorchJob fits only after
    # it (at the same priority, so it waits rather than preempts).
    filler = gpu_job("filler", ns, "lq", 4, runs_for="12s", priority=f"{ns}-mid")
    client.apply([filler])
    wait_until(lambda: condition(workload_of(plane, ns, "filler"), "Admitted") != {}, timeout=30)

    client.apply(
        [pytorch_job("train", ns, master=True, workers=8, runs_for="600s", priority=f"{ns}-mid")]
    )
    wait_until(lambda: workload_of(plane, ns, "train") != {}, timeout=30)
    stored = get(plane, "pytorchjob", "train", "-n", ns)
    assert stored["spec"]["runPolicy"]["suspend"] is True  # Berth's webhook suspended it
    submitted = stored["spec"]["pytorchReplicaSpecs"]
    wl = workload_of(plane, ns, "train")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [
        ("master", 1),
        ("worker", 8),
    ]
    assert _pods(plane, ns, "train") == []

    # Once the filler is done the whole gang runs, each role on its flavor's nodes.
    wait_until(lambda: len(_running(plane, ns, "train")) == 9, timeout=90)
    placed = roles_on_models(plane, _running(plane, ns, "train"), ROLE_LABEL)
    assert placed == {
        ("master", kwok.A100_LABELS["nvidia.com/gpu.product"]),
        ("worker", kwok.H100_LABELS["nvidia.com/gpu.product"]),
    }
    tolerated = {
        p["metadata"]["labels"][ROLE_LABEL]
        for p in _running(plane, ns, "train")
        if H100_TOLERATION in (p["spec"].get("tolerations") or [])
    }
    assert tolerated == {"worker"}

    # A higher-priority PyTorchJob needs 4 H100 GPUs: train is preempted whole, its pods all go,
    # and its templates come back as submitted.
    client.apply(
        [pytorch_job("urgent", ns, master=False, workers=4, runs_for="600s", priority=f"{ns}-high")]
    )
    wait_until(lambda: len(_running(plane, ns, "urgent")) == 4, timeout=90)
    wait_until(lambda: _pods(plane, ns, "train") == [], timeout=60)
    preempted = condition(workload_of(plane, ns, "train"), "Preempted")
    assert preempted.get("status") == "True", preempted
    wait_until(
        lambda: (
            get(plane, "pytorchjob", "train", "-n", ns)["spec"]["pytorchReplicaSpecs"] == submitted
        ),
        timeout=30,
    )
    assert get(plane, "pytorchjob", "train", "-n", ns)["spec"]["runPolicy"]["suspend"] is True

    # Quota returns to zero once they are gone.
    client.run("delete", "pytorchjobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    client.run("delete", "jobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)


KUBEFLOW_RULES = ({"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": ["*"]},)
"""What a team member gets on PyTorchJobs beside the usual Job rights."""


def test_an_ordinary_user_cannot_start_or_grow_a_pytorchjob_around_the_queue(
    kubeflow_cluster: launcher.ControlPlane,
    kubeflow_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = kubeflow_cluster
    ns = new_namespace(plane, "pytorch-user")
    plane.kubectl().apply(two_pool_queue(ns))
    user = adversary.namespace_user(plane, ns, tmp_path, extra_rules=KUBEFLOW_RULES)
    # 12 GPUs never fit the 9 of quota: it stays queued, and cannot be started by hand.
    big = pytorch_job("big", ns, master=False, workers=12, runs_for="600s", priority=f"{ns}-low")
    user.apply(big)
    wait_until(lambda: workload_of(plane, ns, "big") != {}, timeout=30)
    refused = user.denied(
        "patch",
        "pytorchjob",
        "big",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"runPolicy":{"suspend":false}}}',
    )
    assert "PyTorchJob" in refused
    assert "queued in LocalQueue lq" in refused
    assert _pods(plane, ns, "big") == []
    # An admitted one cannot grow past its admission.
    small = pytorch_job("small", ns, master=False, workers=2, runs_for="600s", priority=f"{ns}-mid")
    user.apply(small)
    wait_until(lambda: len(_running(plane, ns, "small")) == 2, timeout=90)
    refused = user.denied(
        "patch",
        "pytorchjob",
        "small",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":6}}}}',
    )
    assert "spec.pytorchReplicaSpecs" in refused
    assert "admitted for 2 pod(s)" in refused
    # Nor can its pods ask for more than was admitted: the operator remakes a deleted pod from
    # the template, so an edited template would run GPUs outside the quota.
    worker = get(plane, "pytorchjob", "small", "-n", ns)["spec"]["pytorchReplicaSpecs"]["Worker"]
    template = worker["template"]
    template["spec"]["containers"][0]["resources"] = {"limits": {kwok.GPU_RESOURCE: "4"}}
    refused = user.denied(
        "patch",
        "pytorchjob",
        "small",
        "-n",
        ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"pytorchReplicaSpecs": {"Worker": {"template": template}}}}),
    )
    assert "pod set worker" in refused
    assert len(_pods(plane, ns, "small")) == 2


SCALE_RULES = (
    {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs", "tfjobs"], "verbs": ["*"]},
    {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs/scale"], "verbs": ["*"]},
    {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["*"]},
)
"""The built-in ``edit`` role's share of these kinds: the jobs, their scale, and HPAs."""


def _hpa_refusals(plane: launcher.ControlPlane, ns: str, name: str) -> list[str]:
    """The messages of the HPA's failed rescales (its controller's Events)."""
    items = get(
        plane,
        "events",
        "-n",
        ns,
        "--field-selector",
        f"involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name}",
    )["items"]
    return [e.get("message", "") for e in items if e.get("reason") == "FailedRescale"]


def test_neither_a_user_nor_an_hpa_can_scale_an_admitted_pytorchjob_past_its_admission(
    kubeflow_cluster: launcher.ControlPlane,
    kubeflow_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    """The scale subresource is checked as the job itself is, and the HPA controller uses it."""
    plane = kubeflow_cluster
    ns = new_namespace(plane, "pytorch-scale")
    user = team_on_two_pools(plane, ns, tmp_path, SCALE_RULES)
    small = pytorch_job("small", ns, master=False, workers=2, runs_for="600s", priority=f"{ns}-mid")
    user.apply(small)
    wait_until(lambda: len(_running(plane, ns, "small")) == 2, timeout=90)

    refused = user.denied("scale", "pytorchjob", "small", "-n", ns, "--replicas=8")
    assert "pod set worker" in refused
    assert "admitted for 2 pod(s)" in refused
    assert "Traceback" not in refused
    # The HPA controller needs no metrics to scale up to its minimum: it asks /scale for 8.
    user.apply(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "grow", "namespace": ns},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": "small",
                },
                "minReplicas": 8,
                "maxReplicas": 8,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            },
        }
    )
    wait_until(lambda: _hpa_refusals(plane, ns, "grow") != [], timeout=90)
    assert any("admitted for 2 pod(s)" in m for m in _hpa_refusals(plane, ns, "grow"))
    worker = get(plane, "pytorchjob", "small", "-n", ns)["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    assert len(_pods(plane, ns, "small")) == 2
    # A suspended one that holds no quota may be scaled: it is queued again at its new size.
    user.kubectl.run("delete", "hpa", "grow", "-n", ns)
    big = pytorch_job("queued", ns, master=False, workers=12, runs_for="600s", priority=f"{ns}-low")
    user.apply(big)
    wait_until(lambda: workload_of(plane, ns, "queued") != {}, timeout=30)
    user.kubectl.run("scale", "pytorchjob", "queued", "-n", ns, "--replicas=3")
    wait_until(
        lambda: [ps["count"] for ps in workload_of(plane, ns, "queued")["spec"]["podSets"]] == [3],
        timeout=30,
    )


def tf_job(name: str, namespace: str, *, ps: int, workers: int) -> dict[str, Any]:
    """A queued TFJob: ``ps`` parameter servers asking for nothing and ``workers`` 1-GPU Workers."""
    gpu = gpu_job("x", namespace, "lq", 1, runs_for="600s")["spec"]["template"]
    gpu["spec"]["containers"][0]["name"] = "tensorflow"  # the name the operator requires
    cpu = copy.deepcopy(gpu)
    cpu["spec"]["containers"][0]["resources"] = {}  # the queue covers GPUs only

    def replica(count: int, template: dict[str, Any]) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "lq", "berth.dev/priority-class": f"{namespace}-mid"},
        },
        "spec": {"tfReplicaSpecs": {"PS": replica(ps, cpu), "Worker": replica(workers, gpu)}},
    }


def _gpu_pods(pods: list[dict[str, Any]]) -> int:
    def gpus(pod: dict[str, Any]) -> int:
        return sum(
            int(((c.get("resources") or {}).get("limits") or {}).get(kwok.GPU_RESOURCE, 0))
            for c in pod["spec"]["containers"]
        )

    return sum(gpus(p) for p in pods)


def test_replicas_moved_between_a_tfjobs_roles_never_run_past_the_admission(
    kubeflow_cluster: launcher.ControlPlane,
    kubeflow_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    """Counts are compared pod set by pod set, in the webhook and, past it, in the controller."""
    plane = kubeflow_cluster
    ns = new_namespace(plane, "tf-roles")
    user = team_on_two_pools(plane, ns, tmp_path, SCALE_RULES)
    user.apply(tf_job("shuffle", ns, ps=6, workers=1))
    wait_until(lambda: len(_running(plane, ns, "shuffle")) == 7, timeout=90)
    shuffle = {"spec": {"tfReplicaSpecs": {"PS": {"replicas": 0}, "Worker": {"replicas": 7}}}}
    refused = user.denied(
        "patch", "tfjob", "shuffle", "-n", ns, "--type=merge", "-p", json.dumps(shuffle)
    )
    assert "spec.tfReplicaSpecs[Worker].replicas" in refused
    assert "pod set worker is admitted for 1 pod(s)" in refused
    assert _gpu_pods(_running(plane, ns, "shuffle")) == 1

    # Past the webhook (an admin removed it), the controller stops the TFJob and queues it again
    # at its new shape: it never runs 7 GPU workers on an admission of 1.
    with without_validating_webhook(plane):
        user.patch("tfjob", "shuffle", shuffle)
        wait_until(
            lambda: (
                get(plane, "tfjob", "shuffle", "-n", ns)["spec"]["runPolicy"].get("suspend") is True
            ),
            timeout=30,
        )
    wait_until(
        lambda: (
            [
                (ps["name"], ps["count"])
                for ps in workload_of(plane, ns, "shuffle")["spec"]["podSets"]
            ]
            == [("ps", 0), ("worker", 7)]
        ),
        timeout=60,
    )
    wait_until(lambda: _gpu_pods(_running(plane, ns, "shuffle")) == 7, timeout=90)
    assert "JobChanged" in event_reasons(plane, ns, "TFJob", "shuffle")
