"""JobSet end to end, against the real JobSet controller built from its Go module.

A control plane of its own (the GPU pools of the e2e cluster: A100 nodes, and H100 nodes tainted
so only tolerating pods land there) with the JobSet controller v0.12.0 installed from its module's
CRDs and webhook manifests (``devcluster.frameworks``), and ``berth run`` with
``jobset.x-k8s.io/jobset`` in ``integrations.frameworks``. What cannot run here is a kubelet:
kwok plays the nodes, so pods are scheduled by the real kube-scheduler and run by kwok.
"""

from __future__ import annotations

import copy
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
JOBSET_RULES = ({"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["*"]},)
"""What a team member gets on JobSets beside the usual Job rights."""
Wait = Callable[..., None]
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ROLE_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"


@pytest.fixture(scope="module")
def jobset_operator(
    jobset_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """Berth on the cluster, with the JobSet integration on."""
    home = tmp_path_factory.mktemp("jobset-operator")
    operator = operator_with_frameworks(
        jobset_cluster, home, ["batch/job", "jobset.x-k8s.io/jobset"]
    )
    yield operator
    operator.stop()


def gpu_jobset(
    name: str,
    namespace: str,
    *,
    head: int,
    workers: tuple[int, int],
    runs_for: str,
    priority: str,
) -> dict[str, Any]:
    """A queued JobSet of 1-GPU pods, each running ``runs_for``.

    ``head`` pods in one role (0: no head role), and ``workers`` = (replicas, pods per replica).
    """
    pod_template = gpu_job("x", namespace, "lq", 1, runs_for=runs_for)["spec"]["template"]

    def role(role_name: str, replicas: int, pods: int) -> dict[str, Any]:
        return {
            "name": role_name,
            "replicas": replicas,
            "template": {
                "spec": {
                    "parallelism": pods,
                    "completions": pods,
                    "backoffLimit": 0,
                    "template": copy.deepcopy(pod_template),
                }
            },
        }

    roles = ([role("head", 1, head)] if head else []) + [role("workers", *workers)]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "lq", "berth.dev/priority-class": priority},
        },
        "spec": {"replicatedJobs": roles},
    }


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return live_pods(plane, ns, f"{NAME_LABEL}={job}")


def _running(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return running(_pods(plane, ns, job))


def _forged_child(name: str, js: dict[str, Any], *, gpus: int) -> dict[str, Any]:
    """A running Job a user makes that claims the JobSet ``js`` as its controller."""
    meta = js["metadata"]
    forged = gpu_job(name, meta["namespace"], "lq", gpus, runs_for="600s")
    forged["metadata"]["labels"][NAME_LABEL] = meta["name"]
    forged["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
        }
    ]
    forged["spec"]["suspend"] = False
    return forged


def test_a_jobset_is_admitted_whole_on_each_roles_flavor_and_preempted_whole(
    jobset_cluster: launcher.ControlPlane,
    jobset_operator: OperatorProcess,
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
) -> None:
    plane = jobset_cluster
    ns = new_namespace(plane, "jobset")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))

    # A 4-GPU Job holds half the H100 quota for a while: the 9-GPU JobSet fits only after it
    # (at the same priority, so the JobSet waits rather than preempts).
    filler = gpu_job("filler", ns, "lq", 4, runs_for="12s", priority=f"{ns}-mid")
    filler["spec"]["template"]["spec"]["tolerations"] = [H100_TOLERATION]
    client.apply([filler])
    wait_until(lambda: condition(workload_of(plane, ns, "filler"), "Admitted") != {}, timeout=30)

    train = gpu_jobset("train", ns, head=1, workers=(2, 4), runs_for="600s", priority=f"{ns}-mid")
    client.apply([train])
    wait_until(lambda: workload_of(plane, ns, "train") != {}, timeout=30)
    stored = get(plane, "jobset", "train", "-n", ns)
    assert stored["spec"]["suspend"] is True  # Berth's webhook suspended it at creation
    submitted_roles = stored["spec"]["replicatedJobs"]
    wl = workload_of(plane, ns, "train")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [
        ("head", 1),
        ("workers", 8),
    ]

    # Pending: its child Jobs exist (the JobSet controller made them, suspended) but no pod does.
    wait_until(
        lambda: len(get(plane, "jobs", "-n", ns, "-l", f"{NAME_LABEL}=train")["items"]) == 3,
        timeout=30,
    )
    assert _pods(plane, ns, "train") == []
    assert condition(workload_of(plane, ns, "train"), "Admitted").get("status") != "True"
    # The child Jobs are parts of the JobSet, never workloads of their own.
    owners = {
        r["kind"]
        for w in get(plane, "workloads", "-n", ns)["items"]
        for r in w["metadata"]["ownerReferences"]
    }
    assert owners == {"Job", "JobSet"}
    assert len(get(plane, "workloads", "-n", ns)["items"]) == 2

    # Once the filler is done the whole gang runs, each role on its flavor's nodes.
    wait_until(lambda: len(_running(plane, ns, "train")) == 9, timeout=90)
    placed = roles_on_models(plane, _running(plane, ns, "train"), ROLE_LABEL)
    assert placed == {
        ("head", kwok.A100_LABELS["nvidia.com/gpu.product"]),
        ("workers", kwok.H100_LABELS["nvidia.com/gpu.product"]),
    }
    wl = workload_of(plane, ns, "train")
    assigned = {
        a["name"]: a["flavors"][kwok.GPU_RESOURCE]
        for a in wl["status"]["admission"]["podSetAssignments"]
    }
    assert assigned == {"head": f"{ns}-a100", "workers": f"{ns}-h100"}

    # The operator is killed and started again mid-run: it finds the running JobSet as it left
    # it (one Workload, still admitted, no pod stopped), then goes on below.
    jobset_operator.kill()
    jobset_operator.start()
    assert len(_running(plane, ns, "train")) == 9
    assert condition(workload_of(plane, ns, "train"), "Admitted").get("status") == "True"
    assert len(get(plane, "workloads", "-n", ns)["items"]) == 2

    # A higher-priority JobSet needs 4 H100 GPUs: train is preempted whole, its pods all go,
    # and its templates come back exactly as submitted.
    client.apply(
        [gpu_jobset("urgent", ns, head=0, workers=(1, 4), runs_for="600s", priority=f"{ns}-high")]
    )
    wait_until(lambda: len(_running(plane, ns, "urgent")) == 4, timeout=90)
    wait_until(lambda: _pods(plane, ns, "train") == [], timeout=60)
    preempted = condition(workload_of(plane, ns, "train"), "Preempted")
    assert preempted.get("status") == "True", preempted
    wait_until(
        lambda: (
            get(plane, "jobset", "train", "-n", ns)["spec"]["replicatedJobs"] == submitted_roles
        ),
        timeout=30,
    )
    assert get(plane, "jobset", "train", "-n", ns)["spec"]["suspend"] is True

    # Quota returns to zero once both are gone.
    client.run("delete", "jobset", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    client.run("delete", "jobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)


def test_an_ordinary_user_cannot_start_a_child_job_of_a_pending_jobset(
    jobset_cluster: launcher.ControlPlane,
    jobset_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = jobset_cluster
    ns = new_namespace(plane, "jobset-user")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))
    # More than the quota: the JobSet never fits, so its child Jobs stay suspended.
    client.apply(
        [gpu_jobset("big", ns, head=0, workers=(3, 4), runs_for="600s", priority=f"{ns}-low")]
    )
    wait_until(
        lambda: len(get(plane, "jobs", "-n", ns, "-l", f"{NAME_LABEL}=big")["items"]) == 3,
        timeout=30,
    )
    user = adversary.namespace_user(plane, ns, tmp_path, extra_rules=JOBSET_RULES)
    child = get(plane, "jobs", "-n", ns, "-l", f"{NAME_LABEL}=big")["items"][0]["metadata"]["name"]
    refused = user.denied(
        "patch", "job", child, "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert "part of a job Berth queues" in refused
    refused = user.denied(
        "patch", "jobset", "big", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert "JobSet" in refused
    assert "queued in LocalQueue lq" in refused
    # A Job that claims the JobSet as its controller is created suspended and stays so.
    forged = _forged_child("forged", get(plane, "jobset", "big", "-n", ns), gpus=2)
    user.kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(forged))
    assert get(plane, "job", "forged", "-n", ns)["spec"]["suspend"] is True
    assert _pods(plane, ns, "big") == []


def test_an_ordinary_user_cannot_run_more_than_an_admitted_jobsets_children(
    jobset_cluster: launcher.ControlPlane,
    jobset_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    plane = jobset_cluster
    ns = new_namespace(plane, "jobset-forge")
    client = plane.kubectl()
    client.apply(two_pool_queue(ns))
    small = gpu_jobset("small", ns, head=0, workers=(1, 2), runs_for="600s", priority=f"{ns}-low")
    # A NonIndexed child Job without completions runs as many pods as its parallelism says,
    # and a Job's parallelism may change while it runs.
    job_spec = small["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec.pop("completions")
    job_spec["completionMode"] = "NonIndexed"
    client.apply([small])
    wait_until(lambda: len(_running(plane, ns, "small")) == 2, timeout=90)
    user = adversary.namespace_user(plane, ns, tmp_path, extra_rules=JOBSET_RULES)

    # A Job under a name the JobSet controller never gives, claiming the admitted JobSet as its
    # controller: created suspended, and it cannot be started.
    forged = _forged_child("small-extra-0", get(plane, "jobset", "small", "-n", ns), gpus=8)
    user.kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(forged))
    assert get(plane, "job", "small-extra-0", "-n", ns)["spec"]["suspend"] is True
    refused = user.denied(
        "patch",
        "job",
        "small-extra-0",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"suspend":false}}',
    )
    assert "makes the Jobs small-workers-0; small-extra-0 is none of them" in refused
    # Nor may the JobSet's own running child grow past what the JobSet makes.
    refused = user.denied(
        "patch",
        "job",
        "small-workers-0",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"parallelism":8}}',
    )
    assert "pod set main: 8 pods at once, more than the 2 made" in refused
    assert "Traceback" not in refused
    assert len(_pods(plane, ns, "small")) == 2

    client.run("delete", "jobset", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    client.run("delete", "jobs", "--all", "-n", ns, "--wait=true", "--timeout=60s")
    wait_until(lambda: usage_is_zero(plane, f"{ns}-cq"), timeout=60)
