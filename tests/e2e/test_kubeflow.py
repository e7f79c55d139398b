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
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
ROLE_LABEL = "training.kubeflow.org/replica-type"


@pytest.fixture(scope="module")
def kubeflow_operator(
    kubeflow_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster, with the PyTorchJob integration on."""
    home = tmp_path_factory.mktemp("kubeflow-operator")
    operator = operator_with_frameworks(
        kubeflow_cluster, home, ["batch/job", "kubeflow.org/pytorchjob"]
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
