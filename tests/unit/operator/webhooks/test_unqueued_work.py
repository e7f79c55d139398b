"""A namespace Berth manages runs only queued work: every way a pod could start there is answered.

``jobs.rules.unqueued``'s rules, as the webhooks apply them with ``manageJobsWithoutQueueName`` on
(the chart's default): a job or bare Pod naming no LocalQueue goes to the namespace's
``default`` one or is refused; Deployments and the other kinds Berth does not queue are
refused; a Pod naming no queue runs only if a queued job's controller made it. Decisions come
from ``operator.webhooks``' decision modules reading a ``World`` fed with the objects.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

import builders
from berth.api import configuration, selector
from berth.api.labels import QUEUE_LABEL
from berth.jobs import jobset
from berth.jobs.pod import group as podgroup
from berth.operator import world as world_mod
from berth.operator.webhooks import configurations, job_admission, pod_admission, unqueued_admission

Body = dict[str, Any]
CLOSED = configuration.Configuration(
    manage_jobs_without_queue_name=True,
    managed_jobs_namespace_selector=selector.LabelSelector.model_validate(
        {"matchExpressions": [{"key": "berth.dev/unmanaged", "operator": "DoesNotExist"}]}
    ),
    integrations=configuration.Integrations(
        frameworks=[configuration.Framework.POD, configuration.Framework.JOBSET]
    ),
)


def _world(*, default_queue: bool) -> world_mod.World:
    world = world_mod.World(CLOSED, lambda: 0.0)
    for name, labels in (("team", {}), ("infra", {"berth.dev/unmanaged": "true"})):
        world.apply(
            "Namespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/metadata.name": name, **labels},
                },
            },
        )
    queues = ["lq", "default"] if default_queue else ["lq"]
    for name in queues:
        world.apply(
            "LocalQueue",
            {
                "apiVersion": "berth.dev/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": "team", "resourceVersion": "1"},
                "spec": {"clusterQueue": "cq"},
            },
        )
    return world


def _review(obj: Body, operation: str = "CREATE", old: Body | None = None) -> Body:
    out = {"uid": "r", "operation": operation, "kind": {"kind": obj.get("kind", "Job")}}
    out["object"] = obj
    if old is not None:
        out["oldObject"] = old
    return out


def _patched(obj: Body, answer: Body) -> Body:
    """``obj`` with the answer's JSON patch applied (add and replace only)."""
    out = copy.deepcopy(obj)
    for op in json.loads(base64.b64decode(answer["patch"])) if "patch" in answer else []:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        at: Any = out
        for step in parents:
            at = at[int(step)] if isinstance(at, list) else at[step]
        if isinstance(at, list):
            at.insert(len(at) if last == "-" else int(last), op["value"])
        else:
            at[last] = op["value"]
    return out


def _job(namespace: str = "team", *, queue: str | None = None) -> Body:
    b = builders.JobBuilder("train", namespace).parallelism(2)
    if queue is not None:
        b.queue(queue)
    return b.obj()


@pytest.mark.parametrize(
    ("default_queue", "namespace", "labelled", "allowed"),
    [
        (True, "team", "default", True),
        (False, "team", None, False),
        (False, "infra", None, True),  # the selector leaves it out: not Berth's
        (False, "kube-system", None, True),
    ],
    ids=["default-LocalQueue", "no-default-refused", "unmanaged-namespace", "kube-system"],
)
def test_a_job_naming_no_queue_goes_to_the_default_localqueue_or_is_refused(
    default_queue: bool, namespace: str, labelled: str | None, allowed: bool
) -> None:
    world = _world(default_queue=default_queue)
    job = _job(namespace)
    mutated = _patched(job, job_admission.mutate_job(world, _review(job)))
    assert (mutated["metadata"].get("labels") or {}).get(QUEUE_LABEL) == labelled
    if labelled is not None:
        assert mutated["spec"]["suspend"] is True  # queued like any labelled Job
    answer = job_admission.validate_job(world, _review(mutated))
    assert answer["allowed"] is allowed, answer
    if not allowed:
        message = answer["status"]["message"]
        assert f"metadata.labels[{QUEUE_LABEL}]" in message
        assert "this namespace's LocalQueues: lq" in message
        assert "LocalQueue named default" in message


def _pod(*, owner: Body | None = None, labels: dict[str, str] | None = None) -> Body:
    meta: Body = {"name": "p", "namespace": "team", "labels": dict(labels or {})}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def test_a_bare_pod_naming_no_queue_is_made_a_member_of_the_default_localqueue() -> None:
    world = _world(default_queue=True)
    pod = _pod()
    mutated = _patched(pod, pod_admission.mutate_pod(world, _review(pod)))
    assert mutated["metadata"]["labels"][QUEUE_LABEL] == "default"
    assert mutated["metadata"]["labels"][podgroup.MANAGED_LABEL] == "true"
    assert {"name": podgroup.GATE} in mutated["spec"]["schedulingGates"]


def _known_job(world: world_mod.World, *, running: bool = True) -> Body:
    job = _job(queue="lq")
    job["metadata"].update({"uid": "job-uid", "resourceVersion": "2"})
    job["spec"]["suspend"] = not running
    world.apply("Job", job)
    return job


JOB_REF = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-uid"}
JOB_PODS = {"batch.kubernetes.io/controller-uid": "job-uid"}


@pytest.mark.parametrize(
    ("pod", "refused"),
    [
        (_pod(), "a Pod of its own must name a LocalQueue"),
        (
            _pod(owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u"}),
            "its controller is a ReplicaSet, which Berth does not queue",
        ),
        (
            _pod(owner={**JOB_REF, "uid": "made-up"}, labels=JOB_PODS),
            "is no job Berth knows",
        ),
        (_pod(owner=JOB_REF), "without the labels that controller puts on its pods"),
        (_pod(owner=JOB_REF, labels=JOB_PODS), ""),
    ],
    ids=["bare", "replicaset", "forged-uid", "forged-without-labels", "the-jobs-own"],
)
def test_a_pod_naming_no_queue_runs_only_if_a_queued_jobs_controller_made_it(
    pod: Body, refused: str
) -> None:
    world = _world(default_queue=False)
    _known_job(world)
    answer = unqueued_admission.validate_unqueued_pod(world, _review(pod))
    assert answer["allowed"] is (not refused), answer
    if refused:
        assert refused in answer["status"]["message"]
    # Outside a managed namespace the same Pod is not Berth's.
    elsewhere = copy.deepcopy(pod)
    elsewhere["metadata"]["namespace"] = "infra"
    assert unqueued_admission.validate_unqueued_pod(world, _review(elsewhere))["allowed"] is True


@pytest.mark.parametrize("namespace", ["team", "infra"])
@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"])
def test_kinds_berth_does_not_queue_are_refused_in_a_managed_namespace(
    kind: str, namespace: str
) -> None:
    world = _world(default_queue=True)
    obj = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": namespace, "labels": {QUEUE_LABEL: "lq"}},
        "spec": {},
    }
    answer = unqueued_admission.validate_unqueued_kind(world, _review(obj))
    assert answer["allowed"] is (namespace == "infra"), answer
    if namespace == "team":
        assert f"Berth does not queue {kind} objects" in answer["status"]["message"]


def test_a_child_job_without_its_jobsets_label_is_still_held_as_a_child() -> None:
    """The child hooks select on the jobset-name label; the managed-namespace hooks see the rest."""
    world = _world(default_queue=False)
    child = (
        builders.JobBuilder("train-workers-0", "team")
        .parallelism(4)
        .suspend(True)
        .set(
            "metadata.ownerReferences",
            [
                {
                    "apiVersion": f"{jobset.GROUP}/v1alpha2",
                    "kind": jobset.KIND,
                    "name": "train",
                    "uid": "no-such-jobset",
                    "controller": True,
                }
            ],
        )
        .obj()
    )
    started = copy.deepcopy(child)
    started["spec"]["suspend"] = False
    answer = job_admission.validate_job(world, _review(started, "UPDATE", child))
    assert answer["allowed"] is False
    assert "part of a job Berth queues" in answer["status"]["message"]
    created = job_admission.mutate_job(world, _review(started))
    assert _patched(started, created)["spec"]["suspend"] is True


def test_the_closed_namespace_hooks_are_registered_only_with_manage_jobs_without_queue_name() -> (
    None
):
    def names(config: configuration.Configuration) -> set[str]:
        world = world_mod.World(config, lambda: 0.0)
        return {
            h["name"]
            for c in configurations.build(
                configurations.Url("https://h:1", ""), world.config, world.integrations
            )
            for h in c["webhooks"]
        }

    closed = {
        "mjob-managed-namespaces.berth.dev",
        "mpod-managed-namespaces.berth.dev",
        "vjob-managed-namespaces.berth.dev",
        "vpod-managed-namespaces.berth.dev",
        "vkinds-managed-namespaces.berth.dev",
    }
    assert closed <= names(CLOSED)
    assert not closed & names(CLOSED.model_copy(update={"manage_jobs_without_queue_name": False}))


RAY_CLOSED = CLOSED.model_copy(
    update={
        "integrations": configuration.Integrations(
            frameworks=[configuration.Framework.RAYJOB, configuration.Framework.RAYCLUSTER]
        )
    }
)


def test_the_pods_of_a_rayjobs_cluster_run_by_the_rayjobs_label() -> None:
    """Berth labels every role of a RayJob with its uid: a cluster's pods carry the parent's."""
    world = world_mod.World(RAY_CLOSED, lambda: 0.0)
    world.apply(
        "Namespace",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {}}},
    )
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "train",
            "namespace": "team",
            "uid": "rj-uid",
            "resourceVersion": "1",
            "labels": {QUEUE_LABEL: "lq"},
        },
        "spec": {"suspend": False},
    }
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "train-abcde",
            "namespace": "team",
            "uid": "rc-uid",
            "resourceVersion": "2",
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayJob",
                    "name": "train",
                    "uid": "rj-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {"suspend": False},
    }
    world.apply("RayJob", rayjob)
    world.apply("RayCluster", cluster)
    ref = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "train-abcde", "uid": "rc-uid"}
    worker = _pod(
        owner=ref, labels={"berth.dev/job-uid": "rj-uid", "ray.io/cluster": "train-abcde"}
    )
    assert unqueued_admission.validate_unqueued_pod(world, _review(worker))["allowed"] is True
    forged = _pod(owner=ref, labels={"berth.dev/job-uid": "someone-else"})
    assert unqueued_admission.validate_unqueued_pod(world, _review(forged))["allowed"] is False
