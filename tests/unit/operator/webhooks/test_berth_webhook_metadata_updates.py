"""``/validate-berth`` on an update that changes only metadata of an object stored invalid.

An object created while the webhook was absent may be invalid; the operator still has to add
its finalizer and remove it when it is deleted, so such an update is not refused for problems
the stored spec already had. A change of the spec is checked in full, and a Workload's metadata
rules (the unsupported-owner label) still apply.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import builders
from berth.operator.webhooks import berth_admission

GPU = "nvidia.com/gpu"
Body = dict[str, Any]
FINALIZER = "berth.dev/resource-in-use"


def _invalid_cluster_queue() -> Body:
    """A flavor listed twice: refused by the webhook, stored while it was absent."""
    return (
        builders.ClusterQueueBuilder("cq")
        .flavor_quotas("a100", {GPU: 4})
        .flavor_quotas("a100", {GPU: 4})
        .raw()
    )


def _add_finalizer(body: Body) -> None:
    body["metadata"]["finalizers"] = [FINALIZER]


def _remove_finalizer(body: Body) -> None:
    body["metadata"]["finalizers"] = []


def _label(body: Body) -> None:
    body["metadata"].setdefault("labels", {})["team"] = "ml"


def _cohort(body: Body) -> None:
    body["spec"]["cohortName"] = "org"


def _held_workload() -> Body:
    b = builders.WorkloadBuilder("w", "team").queue("lq").pod_set("main", 1, {GPU: 1})
    body = b.raw()
    body["metadata"]["labels"] = {"berth.dev/unsupported-owner": "true"}
    return body


def _drop_labels(body: Body) -> None:
    body["metadata"]["labels"] = {}


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    old: Callable[[], Body]
    change: Callable[[Body], None]
    old_finalized: bool
    want_allowed: bool
    want_in_message: str = ""


CASES = [
    Case("finalizer-added-to-invalid-queue", _invalid_cluster_queue, _add_finalizer, False, True),
    Case(
        "finalizer-removed-from-invalid-queue",
        _invalid_cluster_queue,
        _remove_finalizer,
        True,
        True,
    ),
    Case("label-added-to-invalid-queue", _invalid_cluster_queue, _label, False, True),
    Case(
        "spec-change-of-invalid-queue-is-checked",
        _invalid_cluster_queue,
        _cohort,
        False,
        False,
        "spec.resourceGroups",
    ),
    Case(
        "workload-metadata-rules-still-apply",
        _held_workload,
        _drop_labels,
        False,
        False,
        "berth.dev/unsupported-owner",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_metadata_only_updates(case: Case) -> None:
    old = case.old()
    if case.old_finalized:
        _add_finalizer(old)
    new = copy.deepcopy(old)
    case.change(new)
    response = berth_admission.validate_berth(
        {"operation": "UPDATE", "object": new, "oldObject": old}
    )
    assert response["allowed"] == case.want_allowed, response
    if not case.want_allowed:
        assert case.want_in_message in response["status"]["message"]
