"""The pure half of the Job integration: start and restore patches, and reading a Job's status."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from berth.api.labels import POD_SET_LABEL
from berth.jobs import batchjob
from berth.jobs.framework import podsets

GPU_TOLERATION = {
    "key": "berth.dev/flavor",
    "operator": "Equal",
    "value": "h100",
    "effect": "NoSchedule",
}


def job(
    *,
    parallelism: int = 4,
    selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    suspend: bool = True,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if selector is not None:
        spec["nodeSelector"] = selector
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "suspend": suspend,
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {"metadata": {"labels": labels or {}}, "spec": spec},
        },
        "status": status or {},
    }


ORIGINAL = job(selector={"team": "a"})["spec"]["template"]


@dataclasses.dataclass(frozen=True)
class StartCase:
    id: str
    count: int
    flavors: list[podsets.FlavorPlacement]
    want_selector: dict[str, Any]
    want_tolerations: list[dict[str, str]] | None
    want_parallelism: int | None


START_CASES = [
    StartCase(
        "one-flavor-adds-its-node-labels",
        4,
        [podsets.FlavorPlacement({"gpu": "a100"})],
        {"gpu": "a100"},
        None,
        None,
    ),
    StartCase(
        "tainted-flavor-adds-its-toleration",
        4,
        [podsets.FlavorPlacement({"gpu": "h100"}, (GPU_TOLERATION,))],
        {"gpu": "h100"},
        [GPU_TOLERATION],
        None,
    ),
    StartCase(
        "two-flavors-union-of-labels",
        4,
        [podsets.FlavorPlacement({"gpu": "a100"}), podsets.FlavorPlacement({"cpu": "spot"})],
        {"gpu": "a100", "cpu": "spot"},
        None,
        None,
    ),
    StartCase(
        "partial-admission-sets-parallelism",
        2,
        [podsets.FlavorPlacement({"gpu": "a100"})],
        {"gpu": "a100"},
        None,
        2,
    ),
]


@pytest.mark.parametrize("case", START_CASES, ids=lambda c: c.id)
def test_start_patch(case: StartCase) -> None:
    patch = batchjob.start_patch(
        job(selector={"team": "a"}),
        ORIGINAL,
        pod_set="main",
        count=case.count,
        flavors=case.flavors,
    )
    spec = patch["spec"]
    assert spec["suspend"] is False
    template = spec["template"]
    assert template["metadata"]["labels"] == {POD_SET_LABEL: "main"}
    assert template["spec"]["nodeSelector"] == case.want_selector
    assert template["spec"].get("tolerations") == case.want_tolerations
    assert spec.get("parallelism") == case.want_parallelism


@dataclasses.dataclass(frozen=True)
class RestoreCase:
    id: str
    job: dict[str, Any]
    want: dict[str, Any] | None


RESTORE_CASES = [
    RestoreCase("unchanged-template-needs-nothing", job(selector={"team": "a"}), None),
    RestoreCase(
        "injected-labels-and-tolerations-are-removed",
        job(
            selector={"team": "a", "gpu": "h100"},
            tolerations=[GPU_TOLERATION],
            labels={POD_SET_LABEL: "main"},
        ),
        {
            "spec": {
                "template": {
                    "metadata": None,
                    "spec": {"nodeSelector": {"gpu": None}, "tolerations": None},
                }
            }
        },
    ),
    RestoreCase(
        "partial-parallelism-is-restored",
        job(parallelism=2, selector={"team": "a"}),
        {"spec": {"parallelism": 4}},
    ),
]


@pytest.mark.parametrize("case", RESTORE_CASES, ids=lambda c: c.id)
def test_restore_patch(case: RestoreCase) -> None:
    assert batchjob.restore_patch(case.job, ORIGINAL, count=4) == case.want


@dataclasses.dataclass(frozen=True)
class StatusCase:
    id: str
    status: dict[str, Any]
    want_finished: tuple[bool, bool]
    want_ready: bool
    want_active: int


STATUS_CASES = [
    StatusCase("new-job", {}, (False, False), False, 0),
    StatusCase("all-ready", {"active": 4, "ready": 4}, (False, False), True, 4),
    StatusCase(
        "ready-plus-succeeded", {"active": 2, "ready": 2, "succeeded": 2}, (False, False), True, 2
    ),
    StatusCase("terminating-pods-are-active", {"terminating": 3}, (False, False), False, 3),
    StatusCase(
        "complete",
        {"succeeded": 4, "conditions": [{"type": "Complete", "status": "True"}]},
        (True, True),
        True,
        0,
    ),
    StatusCase(
        "failed", {"conditions": [{"type": "Failed", "status": "True"}]}, (True, False), False, 0
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES, ids=lambda c: c.id)
def test_job_status(case: StatusCase) -> None:
    j = job(status=case.status)
    assert batchjob.finished(j) == case.want_finished
    assert batchjob.pods_ready(j, 4) == case.want_ready
    assert batchjob.active_pods(j) == case.want_active
