"""What the job webhooks let through for a JobSet and for the child Jobs its controller makes.

A JobSet is suspended at creation and may not be started by hand, as a Job. Its child Jobs are
never jobs of their own, but a child may run only while its parent's Workload is admitted, and
only if it is one the JobSet controller makes, no larger (``jobs.rules.child_jobs``): an ordinary
user who creates a Job that claims a JobSet as its controller (a made-up uid, a pending JobSet of
theirs, or an admitted one under another name or larger), who unsuspends a child of a pending
JobSet, or who grows a running child, gets no pods past the queue. Decisions come from
``operator.webhooks.job_admission`` reading a ``World`` fed with the objects.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import builders
from berth.api import configuration
from berth.jobs import jobset
from berth.jobs.framework import workload_body
from berth.operator import world as world_mod
from berth.operator.webhooks import configurations, job_admission

CONFIG = configuration.Configuration(
    integrations=configuration.Integrations(frameworks=[configuration.Framework.JOBSET])
)
JS_UID = "js-uid"


def parent(*, suspended: bool = True) -> dict[str, Any]:
    return (
        builders.JobSetBuilder("train", "team")
        .queue("lq")
        .suspend(suspended)
        .replicated_job("workers", replicas=2, parallelism=4, requests={"nvidia.com/gpu": "1"})
        .set("metadata.uid", JS_UID)
        .set("metadata.resourceVersion", "3")
        .obj()
    )


def parent_workload(*, admitted: bool) -> dict[str, Any]:
    js = parent()
    new, problems = workload_body.new_workload(
        jobset.JobSetJob(), js, world_mod.World(CONFIG, lambda: 0.0).classes(), uid=JS_UID
    )
    assert new is not None, problems
    body = new.body(js, jobset.JobSetJob())
    body["metadata"]["resourceVersion"] = "4"
    if admitted:
        body["status"] = builders.admitted_status("cq", {"workers": 8}, {"nvidia.com/gpu": "a100"})
    return body


def child(*, suspended: bool, uid: str = JS_UID, labels: bool = True) -> dict[str, Any]:
    b = (
        builders.JobBuilder("train-workers-0", "team")
        .parallelism(4)
        .suspend(suspended)
        .set(
            "metadata.ownerReferences",
            [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "train",
                    "uid": uid,
                    "controller": True,
                }
            ],
        )
    )
    if labels:
        b.label(jobset.NAME_LABEL, "train")
    return b.obj()


def orphaned(job: dict[str, Any]) -> dict[str, Any]:
    job["metadata"].pop("ownerReferences")
    return job


def sized(job: dict[str, Any], parallelism: int) -> dict[str, Any]:
    job["spec"]["parallelism"] = parallelism
    return job


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    operation: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    parent_state: str | None
    """None: no parent known; "pending" or "admitted"."""
    want_allowed: bool
    want_suspended: bool = False
    """A create that the mutating webhook suspends."""
    want_message: str = ""


ROWS = [
    Row(
        "child-of-a-pending-jobset-is-created-suspended",
        "CREATE",
        child(suspended=False),
        None,
        "pending",
        True,
        want_suspended=True,
    ),
    Row(
        "child-of-an-admitted-jobset-runs", "CREATE", child(suspended=False), None, "admitted", True
    ),
    Row(
        "a-made-up-owner-reference-gets-no-pods",
        "CREATE",
        child(suspended=False, uid="made-up"),
        None,
        "admitted",
        True,
        want_suspended=True,
    ),
    Row(
        "a-child-may-not-be-started-by-hand",
        "UPDATE",
        child(suspended=False),
        child(suspended=True),
        "pending",
        False,
        want_message="spec.suspend: this Job is part of a job Berth queues",
    ),
    Row(
        "its-controller-starts-it-once-admitted",
        "UPDATE",
        child(suspended=False),
        child(suspended=True),
        "admitted",
        True,
    ),
    Row(
        "its-controller-starts-a-larger-child",
        "UPDATE",
        sized(child(suspended=False), 64),
        sized(child(suspended=True), 64),
        "admitted",
        False,
        want_message="spec.suspend: this Job is part of a job Berth queues: it is no child "
        "JobSet team/train's controller makes: pod set main: 64 pods at once, more than the 4",
    ),
    Row(
        "dropping-the-controller-to-start-a-child",
        "UPDATE",
        orphaned(child(suspended=False)),
        child(suspended=True),
        "pending",
        False,
        want_message="metadata.ownerReferences: this Job is part of a job Berth queues: its "
        "controller reference may be dropped only while it stays suspended",
    ),
    Row(
        "dropping-the-controller-while-suspended",
        "UPDATE",
        orphaned(child(suspended=True)),
        child(suspended=True),
        "pending",
        True,
    ),
    Row(
        "a-running-child-may-not-grow",
        "UPDATE",
        sized(child(suspended=False), 64),
        child(suspended=False),
        "admitted",
        False,
        want_message="spec: this Job is part of a job Berth queues: it is no child JobSet "
        "team/train's controller makes: pod set main: 64 pods at once, more than the 4 made",
    ),
    Row(
        "a-running-child-may-shrink",
        "UPDATE",
        sized(child(suspended=False), 2),
        child(suspended=False),
        "admitted",
        True,
    ),
    Row(
        "a-running-child-of-an-evicted-jobset-may-change",
        "UPDATE",
        sized(child(suspended=False), 2),
        child(suspended=False),
        "pending",
        True,
    ),
    Row(
        "the-parents-label-may-not-be-dropped",
        "UPDATE",
        child(suspended=True, labels=False),
        child(suspended=True),
        "pending",
        False,
        want_message=f"metadata.labels[{jobset.NAME_LABEL}]",
    ),
    Row(
        "a-queued-jobset-is-created-suspended",
        "CREATE",
        parent(suspended=False),
        None,
        None,
        True,
        want_suspended=True,
    ),
    Row(
        "a-queued-jobset-may-not-be-started-by-hand",
        "UPDATE",
        parent(suspended=False),
        parent(suspended=True),
        "pending",
        False,
        want_message="spec.suspend: JobSet team/train is queued in LocalQueue lq",
    ),
    Row(
        "berth-starts-an-admitted-jobset",
        "UPDATE",
        parent(suspended=False),
        parent(suspended=True),
        "admitted",
        True,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_jobset_and_child_job_webhooks(row: Row) -> None:
    world = world_mod.World(CONFIG, lambda: 0.0)
    if row.parent_state is not None:
        world.apply("JobSet", parent())
        world.apply("Workload", parent_workload(admitted=row.parent_state == "admitted"))
    request = {
        "uid": "r",
        "kind": {"kind": row.obj["kind"]},
        "operation": row.operation,
        "object": row.obj,
        "oldObject": row.old,
    }
    if row.operation == "CREATE":
        answer = job_admission.mutate_job(world, request)
        assert answer["allowed"]
        assert ("patch" in answer) == row.want_suspended
        answer = job_admission.validate_job(world, request)
    else:
        answer = job_admission.validate_job(world, request)
    assert answer["allowed"] == row.want_allowed, answer
    if row.want_message:
        assert row.want_message in answer["status"]["message"]


def test_the_webhook_configurations_cover_jobsets_and_child_jobs() -> None:
    world = world_mod.World(CONFIG, lambda: 0.0)
    configs = configurations.build(
        configurations.Url("https://127.0.0.1:1", "Q0E="), world.config, world.integrations
    )
    hooks = {h["name"]: h for c in configs for h in c["webhooks"]}
    resources = {
        (g, r)
        for rule in hooks["mjob.berth.dev"]["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert resources == {("batch", "jobs"), ("jobset.x-k8s.io", "jobsets")}
    for name in ("mjob-jobset-children.berth.dev", "vjob-jobset-children.berth.dev"):
        selector = hooks[name]["objectSelector"]["matchExpressions"]
        assert selector == [{"key": jobset.NAME_LABEL, "operator": "Exists"}]


def test_a_forged_child_of_an_admitted_jobset_gets_no_pods() -> None:
    # The JobSet's admission counts 2 x 4 pods; a Job that claims to be one of its children
    # but is not one the JobSet controller makes (another name, 64 pods) must not run.
    world = world_mod.World(CONFIG, lambda: 0.0)
    world.apply("JobSet", parent())
    world.apply("Workload", parent_workload(admitted=True))
    forged = child(suspended=False)
    forged["metadata"]["name"] = "train-extra-0"
    forged["spec"]["parallelism"] = 64
    request = {"uid": "r", "kind": {"kind": "Job"}, "operation": "CREATE", "object": forged}
    answer = job_admission.mutate_job(world, request)
    assert "patch" in answer  # created suspended, as a child of a pending parent is
    assert answer["warnings"] == [
        (
            "Berth created this Job suspended: it is no child JobSet team/train's controller "
            "makes: metadata.name: JobSet team/train makes the Jobs train-workers-0 to "
            "train-workers-1; train-extra-0 is none of them"
        )
    ]
