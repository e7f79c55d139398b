"""``api.workload_view.WorkloadView`` reads stored Workload bodies as the API server stores them.

Each row is a body as kube-apiserver returns it (or missing parts of it) and what every reader
must get from it: identity, owner, spec defaults, conditions with their transition times, the
admission as the model ``core.admission.to_status`` writes, and ``requeueState``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import builders
import worlds
from berth.api import names, workload_view
from berth.core import admission as core_admission

T0 = "2026-11-25T10:00:00Z"
T0_EPOCH = 1795600800.0
TEAM_KEY = names.WorkloadKey("team", "job-a-1")


def _body(**parts: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job-a-1", "namespace": "team", "uid": "u1", "resourceVersion": "7"},
        "spec": {"podSets": [{"name": "main", "count": 2}]},
    }
    body.update(parts)
    return body


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    body: dict[str, Any]
    key: names.WorkloadKey = TEAM_KEY
    rv: str | None = "7"
    owner: str | None = None
    priority: int = 0
    active: bool = True
    ref: tuple[str, str] | None = None
    true: frozenset[str] = frozenset()
    cluster_queue: str | None = None
    requeue_count: int = 0


ROWS = [
    Row("bare body: defaults", _body()),
    Row("empty body: no key, no version", {}, key=names.WorkloadKey("", ""), rv=None),
    Row(
        "owned by a batch Job",
        _body(
            metadata={
                "name": "job-a-1",
                "namespace": "team",
                "resourceVersion": "7",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": "rs"},
                    {"apiVersion": "batch/v1", "kind": "Job", "uid": "job-uid"},
                ],
            }
        ),
        owner="job-uid",
    ),
    Row(
        "spec fields",
        _body(
            spec={
                "podSets": [],
                "priority": 100,
                "active": False,
                "priorityClassRef": {"kind": "WorkloadPriorityClass", "name": "high"},
            }
        ),
        priority=100,
        active=False,
        ref=("WorkloadPriorityClass", "high"),
    ),
    Row(
        "admitted: conditions and admission",
        _body(
            status={
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "lastTransitionTime": T0},
                    {"type": "Admitted", "status": "True", "lastTransitionTime": T0},
                    {"type": "Evicted", "status": "False", "lastTransitionTime": T0},
                ],
                "admission": {
                    "clusterQueue": "gpu",
                    "podSetAssignments": [
                        {
                            "name": "main",
                            "flavors": {"nvidia.com/gpu": "a100"},
                            "resourceUsage": {"nvidia.com/gpu": "2"},
                            "count": 2,
                        }
                    ],
                },
            }
        ),
        true=frozenset({"QuotaReserved", "Admitted"}),
        cluster_queue="gpu",
    ),
    Row(
        "an empty admission is none",
        _body(status={"admission": {}}),
    ),
    Row(
        "requeue state after a pods-ready timeout",
        _body(status={"requeueState": {"count": 3, "requeueAt": T0}}),
        requeue_count=3,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_view_reads_the_stored_body(row: Row) -> None:
    view = workload_view.WorkloadView(row.body)
    assert view.key == row.key
    assert view.resource_version == row.rv
    assert view.owner_job_uid == row.owner
    assert (view.priority, view.active, view.priority_class_ref) == (
        row.priority,
        row.active,
        row.ref,
    )
    assert {kind for kind, c in view.conditions.items() if c.status} == row.true
    for kind in row.true:
        assert view.is_true(kind)
        assert view.transition_time(kind) == T0_EPOCH
    assert view.transition_time("Finished") == 0.0
    adm = view.admission
    assert (None if adm is None else adm.cluster_queue) == row.cluster_queue
    assert view.requeue_count == row.requeue_count


def test_a_false_condition_is_read_with_its_reason() -> None:
    view = workload_view.WorkloadView(
        _body(
            status={
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "False",
                        "reason": "Pending",
                        "message": "couldn't assign flavors",
                        "lastTransitionTime": T0,
                    }
                ]
            }
        )
    )
    c = view.condition("QuotaReserved")
    assert c == workload_view.Condition(
        "QuotaReserved", False, "Pending", "couldn't assign flavors", T0_EPOCH
    )
    assert not view.is_true("QuotaReserved")


def test_the_admission_the_core_writes_reads_back_the_same() -> None:
    w = worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        builders.ClusterQueueBuilder("gpu").flavor_quotas("a100", {"nvidia.com/gpu": 8}),
        builders.LocalQueueBuilder("q", "default").cluster_queue("gpu"),
    )
    info = w.info(
        builders.WorkloadBuilder("w").queue("q").pod_set("main", 2, {"nvidia.com/gpu": 1})
    )
    admitted = w.admit(info, "gpu")
    view = workload_view.WorkloadView(
        _body(status={"admission": core_admission.to_status(admitted)})
    )
    assert view.admission is not None
    assert view.admission_problems == []
    assert core_admission.from_status(info, view.admission) == admitted
    # Parsed at each read, not kept in the view: equal models, never the same object.
    assert view.admission == view.admission
    assert view.admission is not view.admission


@pytest.mark.parametrize(
    "status",
    [{}, {"admission": None}, {"admission": {}}, {"conditions": []}],
    ids=["no status", "null", "empty", "conditions only"],
)
def test_a_workload_without_an_admission_has_none(status: dict[str, Any]) -> None:
    view = workload_view.WorkloadView(_body(status=status))
    assert view.admission is None
    assert view.admission_problems == []


def test_an_admission_that_does_not_load_is_none_and_says_which_field() -> None:
    raw = {
        "clusterQueue": "gpu",
        "podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": "1e400"}}],
    }
    view = workload_view.WorkloadView(_body(status={"admission": raw}))
    assert view.admission is None
    (problem,) = view.admission_problems
    assert problem.path == "status.admission.podSetAssignments[0].resourceUsage"
    assert "1e400" in problem.message


def test_the_body_is_never_changed() -> None:
    body = _body(status={"conditions": [{"type": "Admitted", "status": "True"}]})
    before = repr(body)
    view = workload_view.WorkloadView(body)
    _ = (view.conditions, view.admission, view.raw_conditions, view.labels, view.pod_sets)
    assert repr(body) == before
