"""An ordinary namespace user tries to get GPUs around the queue through its Jobs.

The user is a ServiceAccount with a team member's Role (Jobs, CronJobs and Pods in full,
LocalQueues and Workloads read-only), acting through a token kubeconfig (``tests/adversary``);
the real API server's RBAC and Berth's webhooks decide. Where a hole needs the webhook out of
the way (an admin removing it, or a webhook outage), the test removes the validating webhook
configuration as an admin would and restores it, to show what the job controller still holds.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import adversary
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    ROOT,
    OperatorProcess,
    cluster_queue,
    condition,
    event_reasons,
    flavor,
    get,
    gpu_job,
    local_queue,
    running_pods,
    without_validating_webhook,
    workload_of,
)

pytestmark = pytest.mark.e2e
Wait = Callable[..., None]
QUEUE = "berth.dev/queue-name"


def _reserved_gpus(plane: launcher.ControlPlane, cq: str) -> int:
    status = get(plane, "clusterqueue", cq).get("status", {})
    return sum(
        int(r["total"]) for f in status.get("flavorsReservation", []) for r in f["resources"]
    )


def _pods(plane: launcher.ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    items = get(plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


@pytest.fixture
def team(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    tmp_path: Path,
) -> tuple[str, adversary.NamespaceUser]:
    """A namespace with two LocalQueues (8 and 2 A100s) and its ordinary user."""
    ns = new_namespace(gpu_cluster, "adv")
    gpu_cluster.kubectl().apply(
        [
            flavor(f"{ns}-a100", dict(kwok.A100_LABELS)),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}),
            cluster_queue(f"{ns}-small", ns, {f"{ns}-a100": 2}),
            local_queue("lq", ns, f"{ns}-cq"),
            local_queue("small", ns, f"{ns}-small"),
        ]
    )
    return ns, adversary.namespace_user(gpu_cluster, ns, tmp_path)


def _admitted(plane: launcher.ControlPlane, ns: str, job: str) -> bool:
    return condition(workload_of(plane, ns, job), "Admitted").get("status") == "True"


def _submit(user: adversary.NamespaceUser, job: dict[str, Any]) -> None:
    user.kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(job))


def test_raising_an_admitted_jobs_parallelism_is_refused(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    ns, user = team
    job = gpu_job("train", ns, "lq", 1, runs_for="120s")
    job["spec"]["completions"] = 16
    _submit(user, job)
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 1, timeout=60)
    message = user.denied(
        "patch", "job", "train", "-n", ns, "--type=merge", "-p", '{"spec":{"parallelism":16}}'
    )
    assert "spec.parallelism" in message
    assert "outside its quota" in message
    assert get(gpu_cluster, "job", "train", "-n", ns)["spec"]["parallelism"] == 1
    assert len(_pods(gpu_cluster, ns, "train")) == 1
    # The ClusterQueue's status is written apart from the admission: wait for it to show it.
    wait_until(lambda: _reserved_gpus(gpu_cluster, f"{ns}-cq") == 1, timeout=10)


def test_lifting_the_bound_a_backfill_queue_admitted_a_job_with_is_refused(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    # A 10-minute activeDeadlineSeconds may get a Job admitted beside a reservation; lifting it
    # once the Job runs would let it hold the GPUs the reservation counts on.
    ns, user = team
    queue = cluster_queue(f"{ns}-backfill", ns, {f"{ns}-a100": 4})
    queue["spec"]["queueingStrategy"] = "Backfill"
    gpu_cluster.kubectl().apply([queue, local_queue("bf", ns, f"{ns}-backfill")])
    job = gpu_job("sweep", ns, "bf", 1, runs_for="120s")
    job["spec"]["activeDeadlineSeconds"] = 600
    _submit(user, job)
    wait_until(lambda: running_pods(gpu_cluster, ns, "sweep") == 1, timeout=60)
    for patch in (
        '{"spec":{"activeDeadlineSeconds":null}}',
        '{"spec":{"activeDeadlineSeconds":86400}}',
    ):
        message = user.denied("patch", "job", "sweep", "-n", ns, "--type=merge", "-p", patch)
        assert "spec.activeDeadlineSeconds" in message
        assert "Backfill queue" in message
    assert get(gpu_cluster, "job", "sweep", "-n", ns)["spec"]["activeDeadlineSeconds"] == 600
    user.kubectl.run(
        "patch",
        "job",
        "sweep",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"activeDeadlineSeconds":300}}',
    )
    assert get(gpu_cluster, "job", "sweep", "-n", ns)["spec"]["activeDeadlineSeconds"] == 300


def test_an_understated_runtime_does_not_jump_a_reservation_that_goes_by_limits(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    # The user claims 1 s for a Job that runs for 10 minutes, to start before a gang's
    # reservation. The queue lets only an activeDeadlineSeconds run ahead of its reservations.
    ns, user = team
    queue = cluster_queue(f"{ns}-limits", ns, {f"{ns}-a100": 4})
    queue["spec"]["queueingStrategy"] = "Backfill"
    queue["spec"]["backfill"] = {"aheadOfReservations": "RuntimeLimit"}
    gpu_cluster.kubectl().apply([queue, local_queue("limits", ns, f"{ns}-limits")])

    def job(name: str, pods: int, runs_for: str, expected: str) -> dict[str, Any]:
        out = gpu_job(name, ns, "limits", pods, runs_for=runs_for)
        out["metadata"]["annotations"] = {"berth.dev/expected-runtime": expected}
        return out

    _submit(user, job("run", 2, "300s", "300s"))
    wait_until(lambda: running_pods(gpu_cluster, ns, "run") == 2, timeout=60)
    _submit(user, job("gang", 4, "5s", "10s"))
    wait_until(
        lambda: (
            "estimated start"
            in condition(workload_of(gpu_cluster, ns, "gang"), "QuotaReserved").get("message", "")
        ),
        timeout=30,
    )
    # Creation times have whole seconds, and a Job created in the gang's second may be ahead of
    # it; one created a second later is behind it.
    time.sleep(1.1)
    huge = job("huge", 2, "600s", "9" * 400 + "h")
    message = user.denied("create", "-f", "-", stdin=yaml.safe_dump(huge))
    assert "berth.dev/expected-runtime" in message
    assert "not a finite duration" in message
    _submit(user, job("sneaky", 2, "600s", "1s"))
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "sneaky"), "QuotaReserved").get("reason")
            == "WaitingForReservation"
        ),
        timeout=30,
    )
    held = condition(workload_of(gpu_cluster, ns, "sneaky"), "QuotaReserved")["message"]
    assert "lets only a runtime limit (activeDeadlineSeconds)" in held, held
    assert running_pods(gpu_cluster, ns, "sneaky") == 0
    # A limit that ends before the reservation does let a Job ahead of it, into the same room.
    bounded = job("bounded", 2, "3s", "1s")
    bounded["spec"]["activeDeadlineSeconds"] = 60
    _submit(user, bounded)
    wait_until(lambda: _admitted(gpu_cluster, ns, "bounded"), timeout=30)
    assert not _admitted(gpu_cluster, ns, "sneaky")


def test_a_raise_past_the_webhook_is_held_at_the_admitted_count(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    ns, user = team
    job = gpu_job("train", ns, "lq", 1, runs_for="120s")
    job["spec"]["completions"] = 16
    _submit(user, job)
    wait_until(lambda: running_pods(gpu_cluster, ns, "train") == 1, timeout=60)
    with without_validating_webhook(gpu_cluster):
        user.patch("job", "train", {"spec": {"parallelism": 16}})
        wait_until(
            lambda: get(gpu_cluster, "job", "train", "-n", ns)["spec"]["parallelism"] == 1,
            timeout=30,
        )
    wait_until(lambda: len(_pods(gpu_cluster, ns, "train")) == 1, timeout=60)
    wait_until(lambda: _reserved_gpus(gpu_cluster, f"{ns}-cq") == 1, timeout=10)
    reasons = event_reasons(gpu_cluster, ns, "Job", "train")
    assert "ExceedsAdmission" in reasons


@pytest.mark.parametrize("mib", [0.6, 1.2])
def test_a_large_job_is_queued_started_and_finished_like_any_other(
    gpu_cluster: launcher.ControlPlane,
    team: tuple[str, adversary.NamespaceUser],
    wait_until: Wait,
    mib: float,
) -> None:
    """Admission reviews carry the object twice: a Job etcd can store is never too big for them.

    A 0.6 MiB Job once had its start refused by Berth's own webhook for ever while its Workload
    held the quota; a 1.2 MiB one could not be created at all.
    """
    ns, user = team
    name = f"large-{str(mib).replace('.', '-')}"
    job = gpu_job(name, ns, "lq", 1, runs_for="5s")
    job["metadata"]["annotations"] = {"example.com/notes": "n" * (200 << 10)}
    size = int(mib * (1 << 20)) - (200 << 10)
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "BLOB", "value": "b" * size}
    ]
    _submit(user, job)
    wait_until(lambda: condition(workload_of(gpu_cluster, ns, name), "Finished") != {}, timeout=90)
    finished = condition(workload_of(gpu_cluster, ns, name), "Finished")
    assert finished["reason"] == "Succeeded", finished
    assert "StartFailed" not in event_reasons(gpu_cluster, ns, "Job", name)
    wait_until(lambda: _reserved_gpus(gpu_cluster, f"{ns}-cq") == 0, timeout=30)


def test_labelling_a_running_job_is_refused(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    ns, user = team
    job = gpu_job("free", ns, "lq", 1, runs_for="120s")
    del job["metadata"]["labels"][QUEUE]
    _submit(user, job)
    wait_until(lambda: running_pods(gpu_cluster, ns, "free") == 1, timeout=60)
    message = user.denied("label", "job", "free", "-n", ns, f"{QUEUE}=lq")
    assert "not suspended" in message
    assert workload_of(gpu_cluster, ns, "free") == {}
    assert running_pods(gpu_cluster, ns, "free") == 1


def test_a_queued_job_keeps_its_queue_label_and_cannot_be_started_by_hand(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    ns, user = team
    _submit(user, gpu_job("big", ns, "lq", 64, runs_for="60s"))
    wait_until(lambda: workload_of(gpu_cluster, ns, "big") != {}, timeout=30)
    message = user.denied("label", "job", "big", "-n", ns, f"{QUEUE}-")
    assert "may not be removed while its Workload is unfinished" in message
    message = user.denied(
        "patch", "job", "big", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert "setting spec.suspend to false by hand is not allowed" in message
    assert _pods(gpu_cluster, ns, "big") == []


def test_a_pending_jobs_edits_reach_its_workload(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    ns, user = team
    _submit(user, gpu_job("grow", ns, "small", 4, runs_for="5s"))
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "grow"), "QuotaReserved").get("status")
            == "False"
        ),
        timeout=30,
    )
    # Too big for its queue: move it to the bigger one and make it bigger still.
    user.kubectl.run("label", "--overwrite", "job", "grow", "-n", ns, f"{QUEUE}=lq")
    wait_until(lambda: workload_of(gpu_cluster, ns, "grow")["spec"]["queueName"] == "lq", 30)
    wait_until(lambda: _admitted(gpu_cluster, ns, "grow"), timeout=60)
    wait_until(lambda: running_pods(gpu_cluster, ns, "grow") in {0, 4}, timeout=30)

    _submit(user, gpu_job("resize", ns, "small", 4, runs_for="5s"))
    wait_until(lambda: workload_of(gpu_cluster, ns, "resize") != {}, timeout=30)
    first = workload_of(gpu_cluster, ns, "resize")["metadata"]["uid"]
    user.patch("job", "resize", {"spec": {"parallelism": 2}})
    wait_until(
        lambda: (
            workload_of(gpu_cluster, ns, "resize")
            .get("spec", {})
            .get("podSets", [{}])[0]
            .get("count")
            == 2
        ),
        timeout=30,
    )
    assert workload_of(gpu_cluster, ns, "resize")["metadata"]["uid"] != first
    wait_until(lambda: _admitted(gpu_cluster, ns, "resize"), timeout=60)
    workloads = [
        w
        for w in get(gpu_cluster, "workloads", "-n", ns)["items"]
        if any(r["name"] == "resize" for r in w["metadata"].get("ownerReferences", []))
    ]
    assert len(workloads) == 1, "never two Workloads for one Job"


def test_a_child_job_of_another_kind_is_never_admitted_alone(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    """A stand-in JobSet owns the Job (the real JobSet controller comes with its integration)."""
    ns, _user = team
    admin = gpu_cluster.kubectl()
    admin.apply([_jobset_crd()])
    admin.run("wait", "--for=condition=Established", "crd/jobsets.jobset.x-k8s.io")
    owner = json.loads(
        admin.run(
            "create",
            "-o",
            "json",
            "-f",
            "-",
            stdin=yaml.safe_dump(
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "metadata": {"name": "gang", "namespace": ns},
                    "spec": {},
                }
            ),
        )
    )
    child = gpu_job("gang-workers-0", ns, "lq", 2, runs_for="30s")
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "gang",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    admin.create([child])
    wait_until(
        lambda: (
            condition(workload_of(gpu_cluster, ns, "gang-workers-0"), "QuotaReserved").get("reason")
            == "UnsupportedOwner"
        ),
        timeout=30,
    )
    assert "UnsupportedOwner" in event_reasons(gpu_cluster, ns, "Job", "gang-workers-0")
    job = get(gpu_cluster, "job", "gang-workers-0", "-n", ns)
    assert job["spec"]["suspend"] is True
    assert _pods(gpu_cluster, ns, "gang-workers-0") == []
    assert not _admitted(gpu_cluster, ns, "gang-workers-0")


def test_a_start_that_can_never_succeed_gives_the_quota_back(
    gpu_cluster: launcher.ControlPlane, team: tuple[str, adversary.NamespaceUser], wait_until: Wait
) -> None:
    ns, user = team
    job = gpu_job("late", ns, "lq", 1, runs_for="120s")
    del job["metadata"]["labels"][QUEUE]
    _submit(user, job)
    wait_until(lambda: running_pods(gpu_cluster, ns, "late") == 1, timeout=60)
    with without_validating_webhook(gpu_cluster):
        # What the webhook refuses; past it, Berth suspends the Job and admits its Workload, but
        # a Job that once ran cannot take the flavor's node selector: the start is refused.
        user.kubectl.run("label", "job", "late", "-n", ns, f"{QUEUE}=lq")
        wait_until(
            lambda: (
                condition(workload_of(gpu_cluster, ns, "late"), "QuotaReserved").get("reason")
                == "StartFailed"
            ),
            timeout=60,
        )
    wl = workload_of(gpu_cluster, ns, "late")
    assert wl["spec"]["active"] is False
    assert not wl.get("status", {}).get("admission")
    wait_until(lambda: _reserved_gpus(gpu_cluster, f"{ns}-cq") == 0, timeout=30)
    assert "StartFailed" in event_reasons(gpu_cluster, ns, "Job", "late")


def _jobset_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobsets.jobset.x-k8s.io"},
        "spec": {
            "group": "jobset.x-k8s.io",
            "names": {"kind": "JobSet", "plural": "jobsets", "singular": "jobset"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha2",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


APPS_RULES = (
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["*"]},
)
"""What a team member of the built-in ``edit`` role also has."""


def _refused_around_a_closed_namespace(
    plane: launcher.ControlPlane, selected: str, user: adversary.NamespaceUser, wait_until: Wait
) -> dict[str, Any]:
    """What a team member tries in a namespace that runs only queued work; all refused.

    Returns the Job naming no queue that was refused, to be submitted again later.
    """
    plain = gpu_job("plain", selected, "lq", 1, runs_for="300s")
    del plain["metadata"]["labels"][QUEUE]
    refused = user.denied("create", "-f", "-", stdin=yaml.safe_dump(plain))
    assert f"metadata.labels[{QUEUE}]" in refused
    assert "this namespace's LocalQueues: lq" in refused
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": selected, "labels": {QUEUE: "lq"}},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": plain["spec"]["template"]["spec"] | {"restartPolicy": "Always"},
            },
        },
    }
    refused = user.denied("create", "-f", "-", stdin=yaml.safe_dump(deployment))
    assert "Berth does not queue Deployment objects" in refused
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bare", "namespace": selected},
        "spec": plain["spec"]["template"]["spec"],
    }
    refused = user.denied("create", "-f", "-", stdin=yaml.safe_dump(bare))
    assert "a Pod of its own must name a LocalQueue" in refused
    # A Pod claiming the user's own queued, running Job as its controller: not counted by it.
    queued = gpu_job("queued", selected, "lq", 1, runs_for="300s")
    _submit(user, queued)
    wait_until(lambda: running_pods(plane, selected, "queued") == 1, timeout=60)
    uid = get(plane, "job", "queued", "-n", selected)["metadata"]["uid"]
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "queued", "uid": uid}
    forged = copy.deepcopy(bare)
    forged["metadata"] |= {"name": "forged", "ownerReferences": [ref | {"controller": True}]}
    refused = user.denied("create", "-f", "-", stdin=yaml.safe_dump(forged))
    assert "without the labels that controller puts on its pods" in refused
    assert "Traceback" not in refused
    return plain


def test_managed_namespaces_run_only_queued_work_and_no_other(
    control_plane_factory: Callable[..., launcher.ControlPlane],
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Wait,
    tmp_path: Path,
) -> None:
    """``manageJobsWithoutQueueName`` with a selector: the chart's multi-team default.

    In a selected namespace a Job naming no queue is refused, or queued in the LocalQueue named
    ``default`` once there is one; a Deployment, a bare Pod and a Pod claiming a Job it does not
    belong to are refused, as a team member tries them. Other namespaces and kube-system are
    left alone, by the webhook and the controller alike; kube-system's running Jobs too.
    """
    plane = control_plane_factory("managed", scheduling=True, node_pools=(kwok.A100_POOL,))
    admin = plane.kubectl()
    admin.run("apply", "-f", str(ROOT / "crds"))
    admin.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    system_job = gpu_job("system-task", "kube-system", "lq", 1, runs_for="300s")
    del system_job["metadata"]["labels"][QUEUE]
    admin.create([system_job])  # running before the operator starts
    wait_until(lambda: running_pods(plane, "kube-system", "system-task") == 1, timeout=60)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "berth.dev/v1beta1",
                "kind": "Configuration",
                "manageJobsWithoutQueueName": True,
                "managedJobsNamespaceSelector": {"matchLabels": {"berth.dev/batch": "true"}},
            }
        )
    )
    operator = OperatorProcess(plane, tmp_path / "operator.log", config=config)
    operator.start()
    try:
        selected, other = new_namespace(plane, "selected"), new_namespace(plane, "other")
        admin.run("label", "namespace", selected, "berth.dev/batch=true")
        admin.apply(
            [
                flavor(f"{selected}-a100", dict(kwok.A100_LABELS)),
                cluster_queue(f"{selected}-cq", selected, {f"{selected}-a100": 4}),
                local_queue("lq", selected, f"{selected}-cq"),
            ]
        )
        # The refusals name the namespace's LocalQueues: wait until the operator has seen it
        # (its watches may start late, after the CRDs' storage is initialised).
        wait_until(
            lambda: (
                condition(get(plane, "localqueue", "lq", "-n", selected), "Active").get("status")
                == "True"
            ),
            timeout=30,
        )
        user = adversary.namespace_user(plane, selected, tmp_path, extra_rules=APPS_RULES)
        plain = _refused_around_a_closed_namespace(plane, selected, user, wait_until)
        # With a LocalQueue named default, a Job naming none is queued there.
        admin.apply([local_queue("default", selected, f"{selected}-cq")])
        wait_until(
            lambda: "default" in user.kubectl.run("get", "localqueues", "-n", selected), timeout=10
        )
        _submit(user, plain)
        stored = get(plane, "job", "plain", "-n", selected)
        assert stored["metadata"]["labels"][QUEUE] == "default"
        wait_until(lambda: running_pods(plane, selected, "plain") == 1, timeout=60)
        assert workload_of(plane, selected, "plain")["spec"]["queueName"] == "default"

        for ns in (other, "kube-system"):
            job = gpu_job("plain", ns, "lq", 1, runs_for="300s")
            del job["metadata"]["labels"][QUEUE]
            admin.create([job])
        for ns in (other, "kube-system"):
            wait_until(lambda ns=ns: running_pods(plane, ns, "plain") == 1, timeout=60)
            assert workload_of(plane, ns, "plain") == {}
        assert running_pods(plane, "kube-system", "system-task") == 1
        assert workload_of(plane, "kube-system", "system-task") == {}
        assert (
            get(plane, "job", "system-task", "-n", "kube-system")["spec"].get("suspend") is not True
        )
    finally:
        operator.stop()
