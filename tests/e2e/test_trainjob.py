"""A TrainJob end to end, against the real Kubeflow Trainer v2.3.0 and JobSet controllers.

A control plane of its own (the e2e GPU pools: A100 nodes, and H100 nodes tainted so only
tolerating pods land there) with the Trainer and the JobSet controller installed from their
modules' CRDs and webhook manifests (``devcluster.frameworks``), and ``berth run`` with
``trainer.kubeflow.org/trainjob`` and ``jobset.x-k8s.io/jobset`` in ``integrations.frameworks``.
kwok plays the kubelet: pods are scheduled by the real kube-scheduler and run by kwok.

The runtime is a ClusterTrainingRuntime of two steps: ``head`` (one 1-GPU pod) and the trainer
step ``node`` (``numNodes`` 1-GPU pods). Berth reads both pod sets off the JobSet the Trainer
makes; the Trainer starts that JobSet with Berth's runtime patch (each step's flavor).
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
    two_pool_queue,
    usage_is_zero,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ROLE_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


@pytest.fixture(scope="module")
def trainer_operator(
    trainer_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster, with the TrainJob and JobSet integrations on."""
    home = tmp_path_factory.mktemp("trainer-operator")
    operator = operator_with_frameworks(
        trainer_cluster,
        home,
        ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"],
    )
    yield operator
    operator.stop()


def training_runtime(name: str, namespace: str) -> dict[str, Any]:
    """A ClusterTrainingRuntime: a ``head`` step and the trainer step ``node``, 1 GPU a pod."""
    pod_template = gpu_job("x", namespace, "lq", 1, runs_for="600s")["spec"]["template"]

    def step(step_name: str, ancestor: str | None) -> dict[str, Any]:
        template = copy.deepcopy(pod_template)
        template["spec"]["containers"][0]["name"] = "node"  # the Trainer's trainer container
        out: dict[str, Any] = {
            "name": step_name,
            "template": {"spec": {"backoffLimit": 0, "template": template}},
        }
        if ancestor is not None:
            out["template"]["metadata"] = {"labels": {ANCESTOR_LABEL: ancestor}}
        return out

    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {"spec": {"replicatedJobs": [step("head", None), step("node", "trainer")]}},
        },
    }


def train_job(
    name: str, namespace: str, runtime: str, *, nodes: int, priority: str
) -> dict[str, Any]:
    """A queued TrainJob of ``runtime`` with ``nodes`` trainer pods."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "lq", "berth.dev/priority-class": priority},
        },
        "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": nodes}},
    }


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return live_pods(plane, ns, f"{NAME_LABEL}={job}")


def _running(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return running(_pods(plane, ns, job))


def test_a_trainjob_is_admitted_whole_on_each_steps_flavor_and_preempted_whole(
    trainer_cluster: launcher.ControlPlane,
    trainer_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    plane = trainer_cluster
    ns = new_namespace(plane, "trainjob")
    client = plane.kubectl()
    runtime = f"{ns}-torch"
    client.apply([*two_pool_queue(ns), training_runtime(runtime, ns)])

    # A 4-GPU Job holds half the H100 quota for a while: the 9-GPU TrainJob fits only after it
    # (at the same priority, so it waits rather than preempts).
    filler = gpu_job("filler", ns, "lq", 4, runs_for="12s", priority=f"{ns}-mid")
    filler["spec"]["template"]["spec"]["tolerations"] = [H100_TOLERATION]
    client.apply([filler])
    wait_until(lambda: condition(workload_of(plane, ns, "filler"), "Admitted") != {}, timeout=30)

    client.apply([train_job("train", ns, runtime, nodes=8, priority=f"{ns}-mid")])
    wait_until(lambda: workload_of(plane, ns, "train") != {}, timeout=30)
    stored = get(plane, "trainjob", "train", "-n", ns)
    assert stored["spec"]["suspend"] is True  # Berth's webhook suspended it at creation
    submitted = stored["spec"]
    wl = workload_of(plane, ns, "train")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("head", 1), ("node", 8)]

    # Pending: the Trainer made its JobSet (suspended), never a Workload of its own; no pod runs.
    wait_until(lambda: get(plane, "jobsets", "-n", ns)["items"] != [], timeout=30)
    jobset = get(plane, "jobset", "train", "-n", ns)
    assert jobset["spec"]["suspend"] is True
    assert _pods(plane, ns, "train") == []
    owners = sorted(
        r["kind"]
        for w in get(plane, "workloads", "-n", ns)["items"]
        for r in w["metadata"]["ownerReferences"]
    )
    assert owners == ["Job", "TrainJob"]

    # Once the filler is done the whole gang runs, each step on its flavor's nodes.
    wait_until(lambda: len(_running(plane, ns, "train")) == 9, timeout=120)
    placed = roles_on_models(plane, _running(plane, ns, "train"), ROLE_LABEL)
    assert placed == {
        ("head", kwok.A100_LABELS["nvidia.com/gpu.product"]),
        ("node", kwok.H100_LABELS["nvidia.com/gpu.product"]),
    }
    tolerated = {
        p["metadata"]["labels"][ROLE_LABEL]
        for p in _running(plane, ns, "train")
        if H100_TOLERATION in (p["spec"].get("tolerations") or [])
    }
    assert tolerated == {"node"}
    patches = get(plane, "trainjob", "train", "-n", ns)["spec"]["runtimePatches"]
    assert [p["manager"] for p in patches] == ["berth.dev/manager"]

    # A higher-priority TrainJob needs the A100 and 4 H100 GPUs: train is preempted whole, its
    # pods all go, and its spec comes back as submitted (Berth's runtime patch removed).
    client.apply([train_job("urgent", ns, runtime, nodes=4, priority=f"{ns}-high")])
    wait_until(lambda: len(_running(plane, ns, "urgent")) == 5, timeout=120)
    wait_until(lambda: _pods(plane, ns, "train") == [], timeout=60)
    preempted = condition(workload_of(plane, ns, "train"), "Preempted")
    assert preempted.get("status") == "True", preempted
    wait_until(lambda: get(plane, "trainjob", "train", "-n", ns)["spec"] == submitted, timeout=30)

    # Quota returns to zero once they are gone.
    client.run("delete", "trainjobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    client.run("delete", "jobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)
    client.run("delete", "clustertrainingruntime", runtime)


TRAINER_RULES = (
    {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": ["*"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["*"]},
)
"""What a team member gets on TrainJobs and JobSets beside the usual Job rights."""


def test_an_ordinary_user_cannot_start_a_trainjob_or_its_jobset_around_the_queue(
    trainer_cluster: launcher.ControlPlane,
    trainer_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = trainer_cluster
    ns = new_namespace(plane, "trainjob-user")
    runtime = f"{ns}-torch"
    plane.kubectl().apply([*two_pool_queue(ns), training_runtime(runtime, ns)])
    user = adversary.namespace_user(plane, ns, tmp_path, extra_rules=TRAINER_RULES)

    # 12 trainer GPUs never fit the 9 of quota: it stays queued, and cannot be started by hand,
    # neither the TrainJob nor the JobSet the Trainer made for it.
    user.apply(train_job("big", ns, runtime, nodes=12, priority=f"{ns}-low"))
    wait_until(lambda: workload_of(plane, ns, "big") != {}, timeout=30)
    refused = user.denied(
        "patch", "trainjob", "big", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert "queued in LocalQueue lq" in refused
    wait_until(lambda: get(plane, "jobsets", "-n", ns)["items"] != [], timeout=30)
    refused = user.denied(
        "patch", "jobset", "big", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert "TrainJob" in refused
    assert "not admitted" in refused
    assert _pods(plane, ns, "big") == []

    # A TrainJob naming a runtime that does not exist is refused (by the Trainer's webhook or
    # Berth's, whichever answers first), naming the runtime.
    missing = train_job("nowhere", ns, f"{ns}-missing", nodes=1, priority=f"{ns}-low")
    refused = user.denied("apply", "-f", "-", stdin=yaml.safe_dump(missing))
    assert f"{ns}-missing" in refused

    # An admitted one: a JobSet that claims it as controller under another name, running, gets
    # no pods (it is suspended, with a warning, or refused).
    user.apply(train_job("small", ns, runtime, nodes=2, priority=f"{ns}-mid"))
    wait_until(lambda: len(_running(plane, ns, "small")) == 3, timeout=120)
    made = get(plane, "jobset", "small", "-n", ns)
    forged = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "small-more",
            "namespace": ns,
            "ownerReferences": [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": "small",
                    "uid": get(plane, "trainjob", "small", "-n", ns)["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"replicatedJobs": made["spec"]["replicatedJobs"], "suspend": False},
    }
    user.apply(forged)
    assert get(plane, "jobset", "small-more", "-n", ns)["spec"]["suspend"] is True
    refused = user.denied(
        "patch",
        "jobset",
        "small-more",
        "-n",
        ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"suspend": False}}),
    )
    assert "metadata.name" in refused
    assert _pods(plane, ns, "small-more") == []
