"""``/validate-berth`` on a Workload's ``berth.dev/priority-boost``: who may set it, and its value.

``jobs.rules.workload_updates`` rule 4: a boost (KEP-7990) is set, changed or removed only by a
request whose user or group the Configuration lists in ``priorityBoost.setters``; a value that
is no integer is refused on a metadata-only update too (the update that sets it is one).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import builders
from berth.api import workload
from berth.operator.webhooks import berth_admission

BOOST = workload.PRIORITY_BOOST_ANNOTATION
BOOSTER = "system:serviceaccount:ml-platform:booster"
USER = {"username": "system:serviceaccount:team-a:default", "groups": ["system:serviceaccounts"]}


def _workload(boost: str | None) -> dict[str, Any]:
    b = builders.WorkloadBuilder("w", "team-a").queue("lq").pod_set("main", 1, {"cpu": 1})
    if boost is not None:
        b.annotations({BOOST: boost})
    return b.raw()


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    before: str | None
    """The stored boost; a creation when ``create``."""
    after: str | None
    user: dict[str, Any]
    allowed: bool
    message: str = ""
    create: bool = False


SETTERS = [BOOSTER, "platform-controllers"]
CASES = [
    Case("a named controller sets a boost", None, "100", {"username": BOOSTER}, True),
    Case(
        "a controller of a named group changes one",
        "100",
        "-20",
        {"username": "x", "groups": ["platform-controllers"]},
        True,
    ),
    Case("a batch user sets one", None, "100", USER, False, "priorityBoost.setters"),
    Case("a batch user removes one", "100", None, USER, False, "priorityBoost.setters"),
    Case("a batch user creates a boosted Workload", None, "5", USER, False, "is not", True),
    Case("an unchanged boost needs nobody", "100", "100", USER, True),
    Case(
        "a named controller still writes an integer",
        None,
        "lots",
        {"username": BOOSTER},
        False,
        "write e.g. 100 or -50",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_who_may_set_a_priority_boost(case: Case) -> None:
    old = _workload(case.before)
    new = _workload(case.after)
    new["metadata"]["finalizers"] = ["berth.dev/resource-in-use"]  # and what else changes
    request: dict[str, Any] = {"operation": "UPDATE", "object": new, "oldObject": old}
    if case.create:
        request = {"operation": "CREATE", "object": copy.deepcopy(new)}
    request["userInfo"] = case.user
    response = berth_admission.validate_berth(request, boost_setters=SETTERS)
    assert response["allowed"] == case.allowed, response
    if not case.allowed:
        assert case.message in response["status"]["message"]
        assert f"metadata.annotations[{BOOST}]" in response["status"]["message"]
