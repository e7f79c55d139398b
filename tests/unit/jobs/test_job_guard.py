"""Which Jobs Berth manages, and what an update of one may change.

``jobs.rules.managed`` and ``jobs.rules.job_updates``: the rules the webhooks and the job
controller share.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from berth.api import configuration, selector
from berth.jobs.rules import job_updates, managed

QUEUE = "berth.dev/queue-name"


def job(
    *,
    namespace: str = "team-a",
    queue: str | None = "lq",
    suspend: bool = True,
    parallelism: int | None = 4,
    completions: int | None = None,
) -> dict[str, Any]:
    labels = {} if queue is None else {QUEUE: queue}
    spec: dict[str, Any] = {"suspend": suspend, "template": {"spec": {"containers": []}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {
        "metadata": {"name": "train", "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def changed(base: dict[str, Any], **edits: Any) -> dict[str, Any]:
    """``base`` with ``queue``, ``suspend``, ``parallelism`` or ``completions`` changed."""
    out = copy.deepcopy(base)
    if "queue" in edits:
        if edits["queue"] is None:
            out["metadata"]["labels"].pop(QUEUE, None)
        else:
            out["metadata"]["labels"][QUEUE] = edits["queue"]
    for field in ("suspend", "parallelism", "completions"):
        if field in edits:
            out["spec"][field] = edits[field]
    return out


Why = managed.Why
"""The rule's reasons, named outside ``ManagedRow``, whose ``managed`` field hides the module."""


@dataclasses.dataclass(frozen=True, slots=True)
class ManagedRow:
    name: str
    job: dict[str, Any]
    without_queue_name: bool
    namespace_selector: selector.LabelSelector | None
    namespace_labels: dict[str, str] | None
    managed: bool
    why: Why


TEAMS = selector.LabelSelector.model_validate({"matchLabels": {"berth.dev/team": "true"}})
MANAGED_ROWS = (
    ManagedRow("labelled", job(), False, None, None, True, managed.Why.NAMES_A_QUEUE),
    ManagedRow(
        "labelled in kube-system",
        job(namespace="kube-system"),
        True,
        None,
        None,
        False,
        managed.Why.PROTECTED_NAMESPACE,
    ),
    ManagedRow(
        "unlabelled in the operator's namespace",
        job(namespace="berth-system", queue=None),
        True,
        None,
        None,
        False,
        managed.Why.PROTECTED_NAMESPACE,
    ),
    ManagedRow(
        "unlabelled, not managing those",
        job(queue=None),
        False,
        None,
        None,
        False,
        managed.Why.NO_QUEUE_NOT_MANAGED,
    ),
    ManagedRow(
        "unlabelled, every namespace",
        job(queue=None),
        True,
        None,
        None,
        True,
        managed.Why.NO_QUEUE_MANAGED,
    ),
    ManagedRow(
        "unlabelled in kube-system, every namespace",
        job(namespace="kube-system", queue=None),
        True,
        None,
        None,
        False,
        managed.Why.PROTECTED_NAMESPACE,
    ),
    ManagedRow(
        "unlabelled, namespace selected",
        job(queue=None),
        True,
        TEAMS,
        {"berth.dev/team": "true"},
        True,
        managed.Why.NO_QUEUE_MANAGED,
    ),
    ManagedRow(
        "unlabelled, namespace not selected",
        job(queue=None),
        True,
        TEAMS,
        {},
        False,
        managed.Why.NO_QUEUE_NAMESPACE_NOT_SELECTED,
    ),
    ManagedRow(
        "unlabelled, namespace not seen yet",
        job(queue=None),
        True,
        TEAMS,
        None,
        False,
        managed.Why.NO_QUEUE_NAMESPACE_NOT_SELECTED,
    ),
    ManagedRow(
        "labelled, namespace not selected (the selector is for unlabelled Jobs, as Kueue's)",
        job(),
        True,
        TEAMS,
        {},
        True,
        managed.Why.NAMES_A_QUEUE,
    ),
)


@pytest.mark.parametrize("row", MANAGED_ROWS, ids=lambda r: r.name)
def test_which_jobs_are_managed(row: ManagedRow) -> None:
    config = configuration.Configuration(
        manage_jobs_without_queue_name=row.without_queue_name,
        managed_jobs_namespace_selector=row.namespace_selector,
    )
    decision = managed.decide(row.job, row.namespace_labels, config)
    assert (decision.managed, decision.why) == (row.managed, row.why)


PENDING = job_updates.WorkloadState(exists_unfinished=True)
ADMITTED = job_updates.WorkloadState(
    exists_unfinished=True, holds_quota=True, admitted=True, admitted_counts={"main": 4}
)
PARTLY = job_updates.WorkloadState(
    exists_unfinished=True, holds_quota=True, admitted=True, admitted_counts={"main": 2}
)
EVICTING = job_updates.WorkloadState(
    exists_unfinished=True, holds_quota=True, admitted=False, admitted_counts={"main": 2}
)
NONE = job_updates.WorkloadState()
BACKFILLED = job_updates.WorkloadState(
    exists_unfinished=True,
    holds_quota=True,
    admitted=True,
    admitted_counts={"main": 4},
    runtime_limit=600.0,
)
"""Admitted by a Backfill queue that planned with its 10-minute activeDeadlineSeconds."""
RUNNING = job(suspend=False)
QUEUED = job()
UNLABELLED_RUNNING = job(queue=None, suspend=False)


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateRow:
    name: str
    old: dict[str, Any]
    new: dict[str, Any]
    state: job_updates.WorkloadState
    refused: tuple[str, ...]
    """The fields refused (empty: allowed)."""


LABEL = f"metadata.labels[{QUEUE}]"


def _deadline(body: dict[str, Any], seconds: int | None) -> dict[str, Any]:
    out = copy.deepcopy(body)
    if seconds is None:
        out["spec"].pop("activeDeadlineSeconds", None)
    else:
        out["spec"]["activeDeadlineSeconds"] = seconds
    return out


BOUNDED = _deadline(RUNNING, 600)
DEADLINE = "spec.activeDeadlineSeconds"
UPDATE_ROWS = (
    UpdateRow(
        "lift the bound a Backfill queue admitted it with",
        BOUNDED,
        _deadline(BOUNDED, None),
        BACKFILLED,
        (DEADLINE,),
    ),
    UpdateRow(
        "raise the bound a Backfill queue admitted it with",
        BOUNDED,
        _deadline(BOUNDED, 3600),
        BACKFILLED,
        (DEADLINE,),
    ),
    UpdateRow(
        "raise the bound past Go's longest duration",
        BOUNDED,
        _deadline(BOUNDED, 2**62),
        BACKFILLED,
        (DEADLINE,),
    ),
    UpdateRow("lower that bound", BOUNDED, _deadline(BOUNDED, 300), BACKFILLED, ()),
    UpdateRow(
        "raise the bound in a queue that does not plan with it",
        BOUNDED,
        _deadline(BOUNDED, 3600),
        ADMITTED,
        (),
    ),
    UpdateRow(
        "raise the bound of a pending Job",
        _deadline(QUEUED, 600),
        _deadline(QUEUED, 3600),
        PENDING,
        (),
    ),
    UpdateRow("start by hand", QUEUED, changed(QUEUED, suspend=False), PENDING, ("spec.suspend",)),
    UpdateRow("Berth starts it", QUEUED, changed(QUEUED, suspend=False), ADMITTED, ()),
    UpdateRow(
        "Berth starts a partial admission",
        QUEUED,
        changed(QUEUED, suspend=False, parallelism=2),
        PARTLY,
        (),
    ),
    UpdateRow(
        "raise the parallelism of a running Job",
        RUNNING,
        changed(RUNNING, parallelism=16),
        ADMITTED,
        ("spec.parallelism",),
    ),
    UpdateRow(
        "raise it through completions",
        job(suspend=False, parallelism=16, completions=4),
        changed(job(suspend=False, parallelism=16, completions=4), completions=16),
        ADMITTED,
        ("spec.parallelism",),
    ),
    UpdateRow("lower it", RUNNING, changed(RUNNING, parallelism=1), ADMITTED, ()),
    UpdateRow(
        "raise it while admitted, not yet started",
        QUEUED,
        changed(QUEUED, parallelism=8),
        ADMITTED,
        ("spec.parallelism",),
    ),
    UpdateRow("resize a pending Job", QUEUED, changed(QUEUED, parallelism=8), PENDING, ()),
    UpdateRow(
        "Berth restores a stopped partial admission",
        job(parallelism=2),
        job(parallelism=4),
        EVICTING,
        (),
    ),
    UpdateRow(
        "label a running Job",
        UNLABELLED_RUNNING,
        changed(UNLABELLED_RUNNING, queue="lq"),
        NONE,
        (LABEL,),
    ),
    UpdateRow("unlabel a running Job", RUNNING, changed(RUNNING, queue=None), ADMITTED, (LABEL,)),
    UpdateRow("move a running Job", RUNNING, changed(RUNNING, queue="other"), ADMITTED, (LABEL,)),
    UpdateRow("unlabel a queued Job", QUEUED, changed(QUEUED, queue=None), PENDING, (LABEL,)),
    UpdateRow(
        "unlabel then start in one go",
        QUEUED,
        changed(QUEUED, queue=None, suspend=False),
        PENDING,
        ("spec.suspend", LABEL),
    ),
    UpdateRow("move a queued Job", QUEUED, changed(QUEUED, queue="other"), PENDING, ()),
    UpdateRow(
        "move a Job that holds quota", QUEUED, changed(QUEUED, queue="other"), ADMITTED, (LABEL,)
    ),
    UpdateRow("unlabel a finished Job's", QUEUED, changed(QUEUED, queue=None), NONE, ()),
    UpdateRow("Berth stops it", RUNNING, changed(RUNNING, suspend=True), EVICTING, ()),
)


@pytest.mark.parametrize("row", UPDATE_ROWS, ids=lambda r: r.name)
def test_what_an_update_may_change(row: UpdateRow) -> None:
    refused = job_updates.refusals(row.old, row.new, row.state)
    assert tuple(p.path for p in refused) == row.refused
    for problem in refused:
        assert "train" in problem.message
