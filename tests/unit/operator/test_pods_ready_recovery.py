"""Pods that were ready and are not any more: the ``PodsReady`` reasons and the recovery timeout.

Kueue's job reconciler writes ``PodsReady`` (``generatePodsReadyCondition``): False with
``WaitForStart`` until the pods are first ready, ``Started`` once they are, ``WaitForRecovery``
when one is lost afterwards, ``Recovered`` when they are back. Its workload controller
(``admittedNotReadyWorkload``) times a workload waiting to start from its admission, and one
waiting to recover from the PodsReady transition, against ``recoveryTimeout``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from berth.api import conditions, names, workload_view
from berth.operator import jobcontroller, lifecycle

_PODS = conditions.PodsReadyReason


def _condition(status: bool, reason: str) -> workload_view.Condition:
    return workload_view.Condition("PodsReady", status, reason, "", 0.0)


@dataclasses.dataclass(frozen=True)
class Step:
    id: str
    ready: bool
    current: workload_view.Condition | None
    want: _PODS | None
    """The reason written; None: nothing is written."""


STEPS = [
    Step("first look, not ready yet", False, None, _PODS.WAIT_FOR_START),
    Step("still starting", False, _condition(False, _PODS.WAIT_FOR_START), None),
    Step("started", True, _condition(False, _PODS.WAIT_FOR_START), _PODS.STARTED),
    Step("ready at the first look", True, None, _PODS.STARTED),
    Step("still ready", True, _condition(True, _PODS.STARTED), None),
    Step("a pod lost", False, _condition(True, _PODS.STARTED), _PODS.WAIT_FOR_RECOVERY),
    Step("still recovering", False, _condition(False, _PODS.WAIT_FOR_RECOVERY), None),
    Step("recovered", True, _condition(False, _PODS.WAIT_FOR_RECOVERY), _PODS.RECOVERED),
    Step("lost again", False, _condition(True, _PODS.RECOVERED), _PODS.WAIT_FOR_RECOVERY),
    Step("an older Berth's reason starts", True, _condition(False, "PodsReady"), _PODS.STARTED),
]


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.id)
def test_the_pods_ready_condition_written(step: Step) -> None:
    reason, message = jobcontroller.pods_ready_condition(step.ready, step.current)
    assert reason == step.want
    assert bool(message) == (step.want is not None)


def _workload(*conds: tuple[str, bool, str, str]) -> workload_view.WorkloadView:
    body: dict[str, Any] = {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": t,
                    "status": "True" if s else "False",
                    "reason": r,
                    "message": "",
                    "lastTransitionTime": at,
                }
                for t, s, r, at in conds
            ]
        },
    }
    return workload_view.WorkloadView(body)


ADMITTED_AT = "2026-12-02T10:00:00Z"
LOST_AT = "2026-12-02T11:00:00Z"


def test_a_workload_waiting_to_start_is_timed_from_its_admission() -> None:
    view = _workload(
        ("Admitted", True, "Admitted", ADMITTED_AT),
        ("PodsReady", False, _PODS.WAIT_FOR_START, LOST_AT),
    )
    got = lifecycle.admitted_of(view, active=True)
    assert (got.key, got.pods_ready, got.recovering) == (names.WorkloadKey("ns", "w"), False, False)
    assert got.ready_since == workload_view.parse_time(ADMITTED_AT)


def test_a_workload_waiting_to_recover_is_timed_from_losing_its_pods() -> None:
    view = _workload(
        ("Admitted", True, "Admitted", ADMITTED_AT),
        ("PodsReady", False, _PODS.WAIT_FOR_RECOVERY, LOST_AT),
    )
    got = lifecycle.admitted_of(view, active=True)
    assert (got.pods_ready, got.recovering) == (False, True)
    assert got.ready_since == workload_view.parse_time(LOST_AT)


def test_ready_pods_are_neither() -> None:
    view = _workload(
        ("Admitted", True, "Admitted", ADMITTED_AT),
        ("PodsReady", True, _PODS.RECOVERED, LOST_AT),
    )
    got = lifecycle.admitted_of(view, active=True)
    assert (got.pods_ready, got.recovering) == (True, False)
