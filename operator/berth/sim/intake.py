"""Scenario documents that become workloads: a Job through its integration, or a Workload.

Pure translation for the simulator: ``from_job`` builds a Job's Workload exactly as the operator's
job controller does (the ``batch/v1`` integration, ``jobs.registry``) and resolves its
priority; ``from_workload`` resolves a Workload document's priority; ``job_priority_change``
tells what a replaced Job's priority-class label changes. Each raises ``ScenarioError`` naming the
document and field that is wrong. Called by ``engine.Simulator``.
"""

from __future__ import annotations

from berth.api import errors
from berth.api import workload as api_workload
from berth.core import priority
from berth.jobs.framework import protocol, workload_body
from berth.jobs.rules import job_sync
from berth.sim import documents


def _unknown_class(
    doc: documents.Document, field: str, err: priority.UnknownPriorityClassError
) -> documents.ScenarioError:
    return documents.ScenarioError([(doc.location, errors.FieldError(field, str(err)))])


def from_job(
    doc: documents.Document,
    job: protocol.Integration,
    classes: priority.PriorityClasses,
    uid: str,
) -> workload_body.NewWorkload:
    """The Workload of a Job document (raises ``ScenarioError`` if it cannot be built)."""
    new, problems = workload_body.new_workload(job, doc.raw, classes, uid=uid)
    if new is None:
        raise documents.ScenarioError([(doc.location, p) for p in problems])
    return new


def from_workload(
    doc: documents.Document, obj: api_workload.Workload, classes: priority.PriorityClasses
) -> workload_body.NewWorkload:
    """A Workload document with its priority.

    A Workload's priority is its spec.priority (Kueue resolves classes only for jobs); a
    priorityClassRef without a priority takes the class's value instead of failing.
    """
    ref = obj.spec.priority_class_ref
    try:
        resolved = priority.resolve(
            classes,
            workload_class=ref.name
            if ref is not None and ref.kind == "WorkloadPriorityClass"
            else None,
            pod_class=ref.name if ref is not None and ref.kind == "PriorityClass" else None,
            explicit=obj.spec.priority,
            use_global_default=False,
        )
    except priority.UnknownPriorityClassError as err:
        raise _unknown_class(doc, "spec.priorityClassRef", err) from err
    return workload_body.NewWorkload(obj, resolved)


def job_priority_change(
    doc: documents.Document,
    job: protocol.Integration,
    classes: priority.PriorityClasses,
    current: tuple[str | None, str | None],
) -> priority.Resolved | None:
    """The new priority of a replaced Job, or None when its class label did not change.

    ``current`` is (kind, name) of the class its priority came from. A Job's pod template is
    immutable, but its priority-class label is not.
    """
    wanted = job_sync.class_named_anew(doc.raw, current, job)
    if wanted is None:
        return None
    try:
        return priority.resolve(classes, workload_class=wanted)
    except priority.UnknownPriorityClassError as err:
        raise _unknown_class(doc, "metadata.labels", err) from err
