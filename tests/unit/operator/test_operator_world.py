"""The operator's ``World``: what the job controller and the lifecycle task are asked to do."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from berth.api import configuration, names
from berth.jobs import batchjob
from berth.operator import world as world_mod
from operator_env import cluster_queue, flavor, gpu_job, local_queue, priority_class


def test_a_job_without_workload_is_looked_at_again_when_a_priority_class_arrives() -> None:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    job = gpu_job("train", "team", "lq", 2, runs_for="1s", priority="urgent")
    job["metadata"].update(uid="uid-1", resourceVersion="5")
    world.apply("Job", job)
    world.dirty_jobs.take()  # the job controller looked, and the class was unknown
    world.apply("WorkloadPriorityClass", priority_class("urgent", 1000))
    assert set(world.dirty_jobs) == {names.JobKey("Job", "team", "train")}


def _workload_of(job: dict[str, Any], rv: str, **spec: Any) -> dict[str, Any]:
    obj, problems = batchjob.to_workload(job, uid="uid-1", honor_kueue=False)
    assert obj is not None, problems
    body: dict[str, Any] = obj.to_yaml_dict()
    body["metadata"].update(
        uid="wl-uid",
        resourceVersion=rv,
        creationTimestamp="2026-01-01T00:00:00Z",
        ownerReferences=[
            {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "uid-1"}
        ],
    )
    body["spec"].update(spec)
    return body


def _queued_world() -> tuple[world_mod.World, dict[str, Any]]:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    for kind, obj in (
        ("ResourceFlavor", flavor("a100", {"gpu": "a100"})),
        ("ClusterQueue", cluster_queue("cq", "team", {"a100": 4})),
        ("LocalQueue", local_queue("lq", "team", "cq")),
    ):
        obj["metadata"]["resourceVersion"] = "1"
        world.apply(kind, obj)
    job = gpu_job("train", "team", "lq", 2, runs_for="1s", priority="urgent")
    job["metadata"].update(uid="uid-1", resourceVersion="5")
    world.apply("Job", job)
    return world, job


def _admitted_status(assignment: dict[str, Any]) -> dict[str, Any]:
    """The status of a Workload admitted by ClusterQueue cq with one pod set of 2 pods."""
    return {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [assignment | {"count": 2}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
    }


def _key(job: dict[str, Any]) -> names.WorkloadKey:
    return names.WorkloadKey("team", _workload_of(job, "0")["metadata"]["name"])


def test_a_class_value_change_asks_to_rewrite_the_priority_of_its_workloads() -> None:
    world, job = _queued_world()
    key = _key(job)
    world.apply(
        "WorkloadPriorityClass",
        priority_class("urgent", 10) | {"metadata": {"name": "urgent", "resourceVersion": "1"}},
    )
    ref = {"group": "berth.dev", "kind": "WorkloadPriorityClass", "name": "urgent"}
    world.apply("Workload", _workload_of(job, "10", priority=10, priorityClassRef=ref))
    world.apply(
        "WorkloadPriorityClass",
        priority_class("urgent", 99) | {"metadata": {"name": "urgent", "resourceVersion": "2"}},
    )
    assert set(world.priority_rewrites) == {key}


def test_a_changed_spec_priority_resorts_the_pending_workload() -> None:
    world, job = _queued_world()
    key = _key(job)
    world.apply("Workload", _workload_of(job, "10", priority=10))
    assert world.queues.pending[key].info.priority == 10
    world.apply("Workload", _workload_of(job, "11", priority=99))
    assert world.queues.pending[key].info.priority == 99


def test_a_deactivated_workload_keeps_its_quota_until_its_admission_is_cleared() -> None:
    world, job = _queued_world()
    key = _key(job)
    admitted = _workload_of(job, "10")
    admitted["status"] = _admitted_status(
        {
            "name": "main",
            "flavors": {"nvidia.com/gpu": "a100"},
            "resourceUsage": {"nvidia.com/gpu": "2"},
        }
    )
    world.apply("Workload", admitted)
    assert key in world.cache.admitted
    inactive = _workload_of(job, "11", active=False) | {"status": admitted["status"]}
    world.apply("Workload", inactive)
    assert key in world.cache.admitted, "the Job still runs: its quota stays counted"
    assert world.infos[key].active is False
    released = _workload_of(job, "12", active=False)
    world.apply("Workload", released)
    assert key not in world.cache.admitted
    assert key not in world.queues.pending
    world.apply("Workload", _workload_of(job, "13", active=True))
    assert key in world.queues.pending
    assert set(world.reactivated) == {key}


def test_an_admission_the_operator_cannot_read_is_no_admission_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The schema lets this exponent through (status is written by the operator and
    # cluster admins only); the model refuses it. The Workload must neither stop the intake
    # nor count as holding quota: it waits in its queue, to be admitted (and written) again.
    world, job = _queued_world()
    key = _key(job)
    unreadable = _workload_of(job, "10")
    unreadable["status"] = _admitted_status(
        {"name": "main", "resourceUsage": {"nvidia.com/gpu": "1e400"}}
    )
    with caplog.at_level(logging.WARNING):
        world.apply("Workload", unreadable)
    assert key not in world.cache.admitted
    assert key in world.queues.pending
    assert not world.admitted_for_job(job)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(key) in m and "status.admission" in m and "1e400" in m for m in warned), warned


def _parked_world() -> tuple[world_mod.World, names.WorkloadKey]:
    world, job = _queued_world()
    key = _key(job)
    world.apply("Workload", _workload_of(job, "10"))
    q = world.queues.queues[names.ClusterQueueName("cq")]
    q.park(world.queues.pending[key])  # as a head found inadmissible is
    return world, key


def test_a_status_write_of_a_queue_leaves_its_inadmissible_workloads_parked() -> None:
    world, key = _parked_world()
    cq = cluster_queue("cq", "team", {"a100": 4})
    cq["metadata"]["resourceVersion"] = "20"
    cq["status"] = {"pendingWorkloads": 1}
    world.apply("ClusterQueue", cq)
    lq = local_queue("lq", "team", "cq")
    lq["metadata"].update(resourceVersion="21", labels={"team": "a"})
    lq["status"] = {"pendingWorkloads": 1}
    world.apply("LocalQueue", lq)
    assert world.queues.queues[names.ClusterQueueName("cq")].is_parked(key)


def test_a_spec_change_of_a_queue_requeues_its_inadmissible_workloads() -> None:
    world, key = _parked_world()
    cq = cluster_queue("cq", "team", {"a100": 8})
    cq["metadata"]["resourceVersion"] = "20"
    world.apply("ClusterQueue", cq)
    q = world.queues.queues[names.ClusterQueueName("cq")]
    assert not q.is_parked(key)
    assert q.active_count == 1


def test_a_queue_deleted_and_created_again_unchanged_is_taken_in_again() -> None:
    world, key = _parked_world()
    lq = local_queue("lq", "team", "cq")
    lq["metadata"]["resourceVersion"] = "20"
    world.remove("LocalQueue", lq)
    assert key in world.queues.outside
    lq["metadata"]["resourceVersion"] = "21"
    world.apply("LocalQueue", lq)
    assert key not in world.queues.outside


def _with_rv(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    return {
        **obj,
        "metadata": {**obj["metadata"], "resourceVersion": rv, "uid": obj["metadata"]["name"]},
    }


def test_a_cluster_queue_the_webhook_never_saw_is_inactive_with_its_errors_and_no_quota() -> None:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    world.apply("ResourceFlavor", _with_rv(flavor("a100", {"gpu": "a100"}), "1"))
    invalid = cluster_queue("cq", "team-a", {"a100": 8})
    groups = invalid["spec"]["resourceGroups"]
    groups.append(dict(groups[0]))  # the same flavor listed twice: the webhook refuses this
    world.apply("ClusterQueue", _with_rv(invalid, "2"))
    info = world.cache.snapshot.cluster_queues[names.ClusterQueueName("cq")]
    assert not info.active
    assert info.inactive_reason == "InvalidSpec"
    assert "spec.resourceGroups[1]" in info.inactive_message
    assert info.groups == (), "nothing of an invalid spec is applied"
    assert world.cache.snapshot.cq_nodes[names.ClusterQueueName("cq")].quotas == {}
    # Fixed, it is taken in whole.
    world.apply("ClusterQueue", _with_rv(cluster_queue("cq", "team-a", {"a100": 8}), "3"))
    info = world.cache.snapshot.cluster_queues[names.ClusterQueueName("cq")]
    assert info.active
    assert len(info.groups) == 1


def test_a_flavor_stored_invalid_makes_its_cluster_queues_say_why_they_are_inactive() -> None:
    """Not only a log line: the ClusterQueue's condition names the flavor and its errors."""
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    bad = flavor("a100", {"gpu": "a100"})
    bad["spec"]["topologyName"] = "default"
    bad["spec"]["nodeLabels"] = {}  # a topology needs node labels: the webhook refuses this
    world.apply("ResourceFlavor", _with_rv(bad, "1"))
    world.apply("ClusterQueue", _with_rv(cluster_queue("cq", "team-a", {"a100": 8}), "2"))
    info = world.cache.snapshot.cluster_queues[names.ClusterQueueName("cq")]
    assert (info.active, info.inactive_reason) == (False, "FlavorNotFound")
    assert "a100 (stored invalid, not applied: spec.nodeLabels" in info.inactive_message
    # Fixed, the flavor is taken in and the queue is active.
    world.apply("ResourceFlavor", _with_rv(flavor("a100", {"gpu": "a100"}), "3"))
    assert world.cache.snapshot.cluster_queues[names.ClusterQueueName("cq")].active
    assert world.cache.refused == {}


def test_a_jobsets_child_jobs_and_their_pods_are_the_jobsets() -> None:
    config = configuration.Configuration(
        integrations=configuration.Integrations(frameworks=[configuration.Framework.JOBSET])
    )
    world = world_mod.World(config, lambda: 1000.0)
    parent = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "team", "uid": "js-uid", "resourceVersion": "1"},
        "spec": {"replicatedJobs": []},
    }
    world.apply("JobSet", parent)
    world.dirty_jobs.take()
    child = gpu_job("train-workers-0", "team", "lq", 2, runs_for="1s")
    child["metadata"].update(
        uid="child-uid",
        resourceVersion="2",
        ownerReferences=[
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "train",
                "uid": "js-uid",
                "controller": True,
            }
        ],
    )
    world.apply("Job", child)
    # The child's change is its parent's news; the child is no job of its own.
    assert set(world.dirty_jobs.take()) == {names.JobKey("JobSet", "team", "train")}
    assert not world.managed(child)
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-workers-0-0",
            "namespace": "team",
            "resourceVersion": "3",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train-workers-0",
                    "uid": "child-uid",
                    "controller": True,
                }
            ],
        },
        "status": {"phase": "Running"},
    }
    world.apply("Pod", pod)
    assert world.pods_left("js-uid") == 1
    assert set(world.dirty_jobs.take()) == {names.JobKey("JobSet", "team", "train")}
    world.remove("Pod", {**pod, "metadata": {**pod["metadata"], "resourceVersion": "4"}})
    assert world.pods_left("js-uid") == 0


def test_trainjobs_naming_a_runtime_are_looked_at_again_when_it_arrives_or_changes() -> None:
    config = configuration.Configuration(
        integrations=configuration.Integrations(
            frameworks=[configuration.Framework.JOBSET, configuration.Framework.TRAINJOB]
        )
    )
    world = world_mod.World(config, lambda: 1000.0)

    def train_job(name: str, runtime: str) -> dict[str, Any]:
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {
                "name": name,
                "namespace": "team",
                "uid": f"{name}-uid",
                "resourceVersion": "2",
                "labels": {"berth.dev/queue-name": "lq"},
            },
            "spec": {"runtimeRef": {"name": runtime}, "suspend": True},
        }

    world.apply("TrainJob", train_job("a", "torch"))
    world.apply("TrainJob", train_job("b", "jax"))
    world.dirty_jobs.take()  # the job controller looked, and no runtime was known
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch", "resourceVersion": "3"},
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": {}}}}}
                    ]
                }
            }
        },
    }
    world.apply("ClusterTrainingRuntime", runtime)
    assert set(world.dirty_jobs.take()) == {names.JobKey("TrainJob", "team", "a")}
    assert world.integrations["TrainJob"].pod_count(train_job("a", "torch")) == 1
    world.remove(
        "ClusterTrainingRuntime", {**runtime, "metadata": {"name": "torch", "resourceVersion": "4"}}
    )
    assert world.integrations["TrainJob"].pod_count(train_job("a", "torch")) == 0
