"""What a Workload update may change (``jobs.rules.workload_updates``), as its webhook decides."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from berth.api import labels
from berth.jobs.rules import workload_updates

CLASSES = {"low": 10, "high": 1000}


def workload(*, admitted: bool, priority: int = 10, klass: str | None = "low") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "queueName": "lq",
        "priority": priority,
        "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
    }
    if klass is not None:
        spec["priorityClassRef"] = {
            "group": "berth.dev",
            "kind": "WorkloadPriorityClass",
            "name": klass,
        }
    status = {"admission": {"clusterQueue": "cq"}} if admitted else {}
    return {
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "team-a", "labels": {}},
        "spec": spec,
        "status": status,
    }


def edit(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def apply(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        change(new)
        return new

    return apply


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            obj = obj[int(part)] if part.isdigit() else obj[part]  # type: ignore[index]
        obj[last] = value

    return change


def _both(
    first: Callable[[dict[str, Any]], None], then: Callable[[dict[str, Any]], None]
) -> Callable[[dict[str, Any]], None]:
    """One change that makes ``first``, then ``then``."""

    def change(obj: dict[str, Any]) -> None:
        first(obj)
        then(obj)

    return change


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    name: str
    old: dict[str, Any]
    change: Callable[[dict[str, Any]], dict[str, Any]]
    refused: tuple[str, ...]
    job_class: str | None = None
    """The class the Workload's Job names now (None: no Job, or it names none)."""


ADMITTED = workload(admitted=True)
PENDING = workload(admitted=False)
HELD = copy.deepcopy(PENDING)
HELD["metadata"]["labels"][labels.UNSUPPORTED_OWNER_LABEL] = "JobSet"
ROWS = (
    Row(
        "raise its own priority",
        ADMITTED,
        edit(_set("spec.priority", 2_000_000_000)),
        ("spec.priority",),
    ),
    Row("raise a pending one's", PENDING, edit(_set("spec.priority", 1000)), ("spec.priority",)),
    Row("its class's new value", ADMITTED, edit(_set("spec.priority", 10)), ()),
    Row(
        "swap its class",
        PENDING,
        edit(_set("spec.priorityClassRef.name", "high")),
        ("spec.priorityClassRef",),
    ),
    Row(
        "follow its Job's new class, at the class's value",
        PENDING,
        edit(_both(_set("spec.priorityClassRef.name", "high"), _set("spec.priority", 1000))),
        (),
        job_class="high",
    ),
    Row(
        "follow its Job's new class but keep the old value",
        PENDING,
        edit(_set("spec.priorityClassRef.name", "high")),
        ("spec.priority",),
        job_class="high",
    ),
    Row(
        "take a class its Job does not name",
        PENDING,
        edit(_both(_set("spec.priorityClassRef.name", "high"), _set("spec.priority", 1000))),
        ("spec.priorityClassRef",),
        job_class="low",
    ),
    Row(
        "grow an admitted one's pods",
        ADMITTED,
        edit(_set("spec.podSets.0.count", 8)),
        ("spec.podSets",),
    ),
    Row(
        "move an admitted one", ADMITTED, edit(_set("spec.queueName", "other")), ("spec.queueName",)
    ),
    Row("move a pending one", PENDING, edit(_set("spec.queueName", "other")), ()),
    Row("grow a pending one's pods", PENDING, edit(_set("spec.podSets.0.count", 8)), ()),
    Row("deactivate", ADMITTED, edit(_set("spec.active", False)), ()),
    Row(
        "release a child Job's Workload",
        HELD,
        edit(lambda w: w["metadata"]["labels"].pop(labels.UNSUPPORTED_OWNER_LABEL)),
        (f"metadata.labels[{labels.UNSUPPORTED_OWNER_LABEL}]",),
    ),
)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_what_a_workload_update_may_change(row: Row) -> None:
    new = row.change(row.old)
    refused = workload_updates.refusals(row.old, new, CLASSES, row.job_class)
    assert tuple(p.path for p in refused) == row.refused
    for problem in refused:
        assert "team-a/w" in problem.message
