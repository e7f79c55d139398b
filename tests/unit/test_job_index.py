"""The operator's job index: a child's pods count for its parent, even after the child is gone.

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
