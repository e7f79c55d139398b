"""``/validate-berth`` on a LocalQueue's ``fairSharing.weight``: who may give one.

Under admission fair sharing a LocalQueue's weight divides its usage, so a namespace admin (the
chart aggregates LocalQueue create and update into the namespace ``admin`` role) who set their
own queue's weight to 1000 would take the next head of a shared ClusterQueue ahead of every
other team. ``jobs.rules.workload_updates`` rule 5: a weight other than the default at creation,
or a change of it, only by the users or groups of the Configuration's
``admissionFairSharing.weightSetters`` (default: ``system:masters``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import builders
from berth.operator.webhooks import berth_admission

NAMESPACE_ADMIN = {"username": "alice", "groups": ["system:authenticated"]}
CLUSTER_ADMIN = {"username": "root", "groups": ["system:masters"]}
SETTERS = ["system:masters", "queue-admins"]


def _lq(weight: str | None) -> dict[str, Any]:
    b = builders.LocalQueueBuilder("lq", "team-a").cluster_queue("shared")
    if weight is not None:
        b.set("spec.fairSharing", {"weight": weight})
    return b.raw()


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    before: str | None
    """The stored weight; None with ``create`` for a creation."""
    after: str | None
    user: dict[str, Any]
    allowed: bool
    create: bool = False


CASES = [
    Case("a namespace admin raises its own weight", "1", "1000", NAMESPACE_ADMIN, False),
    Case("a namespace admin creates a heavy LocalQueue", None, "50", NAMESPACE_ADMIN, False, True),
    Case(
        "a namespace admin creates one of the default weight",
        None,
        None,
        NAMESPACE_ADMIN,
        True,
        True,
    ),
    Case("a namespace admin writes the default weight out", None, "1", NAMESPACE_ADMIN, True, True),
    Case("a cluster admin gives a weight", "1", "3", CLUSTER_ADMIN, True),
    Case(
        "a queue admin's group removes one",
        "3",
        None,
        {"username": "q", "groups": ["queue-admins"]},
        True,
    ),
    Case("a namespace admin changes something else", "3", "3", NAMESPACE_ADMIN, True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_who_may_give_a_local_queue_weight(case: Case) -> None:
    new = _lq(case.after)
    request: dict[str, Any] = {"operation": "CREATE", "object": new}
    if not case.create:
        new["spec"]["stopPolicy"] = "Hold"  # and something else changes
        request = {"operation": "UPDATE", "object": new, "oldObject": _lq(case.before)}
    request["userInfo"] = case.user
    response = berth_admission.validate_berth(request, weight_setters=SETTERS)
    assert response["allowed"] == case.allowed, response
    if not case.allowed:
        message = response["status"]["message"]
        assert "spec.fairSharing.weight" in message
        assert "admissionFairSharing.weightSetters" in message
