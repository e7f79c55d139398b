"""The operator's job index: a child's pods count for the root of its chain of parents.

KubeRay deletes the RayCluster of a suspended RayJob, and the garbage collector deletes its pods
only afterwards: until the last is gone the RayJob's quota must stay held.
"""

from __future__ import annotations

from typing import Any

from berth.api import names
from berth.operator import job_index


def _obj(kind: str, name: str, uid: str, owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": uid}
    if owner is not None:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X"}]
    return {"kind": kind, "metadata": meta, "status": {"phase": "Running"}}


def test_a_deleted_childs_pods_still_count_for_the_parent_until_they_go() -> None:
    index = job_index.JobIndex()
    parent = names.JobKey("RayJob", "ml", "train")
    assert index.take_job("RayJob", _obj("RayJob", "train", "rj"), deleted=False) == parent
    cluster = _obj("RayCluster", "train-x", "rc", owner="rj")
    assert index.take_job("RayCluster", cluster, deleted=False, parent_uid="rj") == parent
    pods = [_obj("Pod", f"p{i}", f"pod{i}", owner="rc") for i in range(3)]
    for pod in pods:
        assert index.take_pod(pod, deleted=False) == parent
    assert index.pods_left("rj") == 3

    # The cluster goes first; its pods after it, one by one.
    assert index.take_job("RayCluster", cluster, deleted=True, parent_uid="rj") == parent
    assert index.pods_left("rj") == 3
    for left, pod in zip((2, 1, 0), pods, strict=True):
        assert index.take_pod(pod, deleted=True) == parent
        assert index.pods_left("rj") == left

    # Forgetting the parent forgets its children too.
    index.take_job("RayJob", _obj("RayJob", "train", "rj"), deleted=True)
    assert index.parent_of == {}
    assert index.children_of == {}


def test_parents_chain_a_trainjobs_jobsets_jobs_pods_count_for_the_trainjob() -> None:
    index = job_index.JobIndex()
    root = names.JobKey("TrainJob", "ml", "train")
    assert index.take_job("TrainJob", _obj("TrainJob", "train", "tj"), deleted=False) == root
    jobset = _obj("JobSet", "train", "js", owner="tj")
    assert index.take_job("JobSet", jobset, deleted=False, parent_uid="tj") == root
    jobs = [_obj("Job", f"train-node-{i}", f"j{i}", owner="js") for i in range(2)]
    for job in jobs:
        assert index.take_job("Job", job, deleted=False, parent_uid="js") == root
    pods = [_obj("Pod", f"p{i}", f"pod{i}", owner=f"j{i % 2}") for i in range(4)]
    for pod in pods:
        assert index.take_pod(pod, deleted=False) == root
    assert index.root("j1") == "tj"
    assert index.pods_left("tj") == 4
    assert index.pods_left("js") == 4

    # The JobSet is deleted before its Jobs' pods: they still count for the TrainJob.
    assert index.take_job("JobSet", jobset, deleted=True, parent_uid="tj") == root
    assert index.pods_left("tj") == 4
    for pod in pods:
        index.take_pod(pod, deleted=True)
    assert index.pods_left("tj") == 0
    index.take_job("TrainJob", _obj("TrainJob", "train", "tj"), deleted=True)
    assert index.parent_of == {}
    assert index.children_of == {}


def test_owner_references_that_loop_end_the_walk() -> None:
    index = job_index.JobIndex()
    index.take_job("JobSet", _obj("JobSet", "a", "a", owner="b"), deleted=False, parent_uid="b")
    index.take_job("TrainJob", _obj("TrainJob", "b", "b", owner="a"), deleted=False, parent_uid="a")
    assert index.root("a") in {"a", "b"}
    assert index.pods_left("a") == 0
