"""What the job webhooks answer: jobs of every integrated kind, their child jobs, their ``scale``.

- ``mutate_job`` (``/mutate-job``): a job (any integrated kind) that Berth manages and that is
  not suspended is created suspended; so is a child Job of an integrated parent (a JobSet's)
  that is not admitted, or whose owner reference names no job Berth knows.
- ``validate_job`` (``/validate-job``): a new job must make a valid Workload
  (``berth.dev/job-min-parallelism`` included); an update must keep the rules of
  ``jobs.rules.job_updates`` (no start by hand, no queue change while it runs or holds quota, no
  queue removal while its Workload is unfinished, no pod set above its admission, nothing its
  create would have been refused for). A child Job of an integrated parent may not be started
  while its parent is not admitted, nor lose the label that marks it as the parent's.
- ``validate_scale`` (``/validate-scale``): a change through a job's ``scale`` subresource (an
  HPA's, or ``kubectl scale``) is checked as the job would be at that size, by the same rules;
  it has no labels for an object selector, so every such request comes, and the job is read as
  stored now.

Decisions read the ``World`` only (``ports.WebhookWorld``). Called by ``routes``.
"""

from __future__ import annotations

from typing import Any

from berth.api import bodies
from berth.api.labels import QUEUE_LABEL
from berth.jobs import registry
from berth.jobs.framework import merge, protocol
from berth.jobs.rules import child_jobs, job_updates, unqueued
from berth.operator import ports
from berth.operator.webhooks import reviews


def mutate_job(
    world: ports.WebhookWorld, request: dict[str, Any], parent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Suspend a managed job at creation, and a child job that may not run (``why_child_waits``).

    A managed job naming no LocalQueue is queued in the namespace's ``default`` one, if any
    (``jobs.rules.unqueued`` rule 1). ``parent``: a child's parent as just read from the API,
    instead of as last seen.
    """
    job = reviews.job_of(request)
    if request.get("operation") != "CREATE":
        return reviews.allow()
    integ = world.integration(job)
    ops: list[dict[str, Any]] = []
    default = world.default_queue(job)
    if default is not None:
        ops = reviews.label_patch(job, QUEUE_LABEL, default)
    if integ.is_suspended(job):
        return reviews.allow(ops)
    warnings = []
    if world.parent_of(job) is not None:
        why = why_child_waits(world, job, parent)
        if not why:
            return reviews.allow(ops)
        warnings.append(f"Berth created this {integ.kind} suspended: {why}")
    elif not world.managed(job):
        return reviews.allow(ops)
    # The whole spec, suspended where the job's kind keeps the switch (a Job's spec.suspend, a
    # training job's spec.runPolicy.suspend): one patch for every kind, parent fields included.
    spec = merge.suspended_spec(integ, job)
    ops.append({"op": "add" if "spec" not in job else "replace", "path": "/spec", "value": spec})
    answer = reviews.allow(ops)
    if warnings:
        answer["warnings"] = warnings
    return answer


def why_child_waits(
    world: ports.WebhookWorld,
    job: dict[str, Any],
    parent: dict[str, Any] | None = None,
    *,
    running: bool = False,
) -> str:
    """Why a child job of an integrated parent may not run now ('' when it may).

    It runs only while its parent is admitted, and only if it is a child the parent's
    controller makes, no larger (``jobs.rules.child_jobs``). ``parent``: the parent as just read
    from the API, instead of as last seen. ``running``: the child runs already and changes; its
    parent's admission is not asked again (a parent gone or evicted stops it anyway).
    """
    ref = world.parent_of(job)
    if ref is None:
        return ""
    namespace = (job.get("metadata") or {}).get("namespace")
    name = f"{ref.kind} {namespace}/{ref.name}"
    found = parent if parent is not None else world.job_seen(ref.uid)
    if found is None or (found.get("metadata") or {}).get("uid") != ref.uid:
        if running:
            return ""
        return f"metadata.ownerReferences: its controller {name} (uid {ref.uid}) does not exist"
    if not running and not world.admitted_for_job(found):
        kind = world.integration(job).kind
        return (
            f"{name} is not admitted; its controller starts the {kind} once Berth admits it, "
            "and unsuspending it by hand is not allowed"
        )
    refused = child_jobs.refusal(found, job, world.integration(job), world.integration(found))
    return "" if refused is None else f"it is no child {name}'s controller makes: {refused}"


def _child_refusals(
    world: ports.WebhookWorld,
    old: dict[str, Any],
    job: dict[str, Any],
    parent: dict[str, Any] | None,
) -> list[str] | None:
    """What a child job of an integrated parent may not do (None: the job is no such child)."""
    if world.parent_of(job) is None and world.parent_of(old) is None:
        return None
    integ = world.integration(job)
    problems = []
    kind = integ.kind
    if not integ.is_suspended(job):
        field, why = "spec.suspend", ""
        if integ.is_suspended(old) and world.parent_of(job) is None:
            field = "metadata.ownerReferences"
            why = (
                "its controller reference may be dropped only while it stays suspended (it then "
                "queues as a job of its own); dropping it to start the job is not allowed"
            )
        elif integ.is_suspended(old):
            why = why_child_waits(world, job, parent)
        elif job.get("spec") != old.get("spec"):
            # A running child may change only within what its controller makes (a Job's
            # parallelism may change while it runs).
            field, why = "spec", why_child_waits(world, job, parent, running=True)
        if why:
            problems.append(f"{field}: this {kind} is part of a job Berth queues: {why}")
    for label in {c.label for c in registry.CHILD_KINDS if c.label is not None}:
        had = label in bodies.labels_of(old)
        if had and label not in bodies.labels_of(job):
            problems.append(
                f"metadata.labels[{label}]: this {kind} is part of a job Berth queues; the "
                "label may not be removed while its ownerReferences name that controller"
            )
    return problems


def validate_job(
    world: ports.WebhookWorld, request: dict[str, Any], parent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Check a new job makes a valid Workload, and an update keeps the rules of job updates.

    ``parent``: a child's parent as just read from the API, instead of as last seen.
    """
    job = reviews.job_of(request)
    old = reviews.job_of(request, "oldObject")
    integ = world.integration(job)
    if request.get("operation") == "CREATE":
        if not world.managed(job):
            return reviews.allow()
        if integ.queue_name(job) is None:
            # Managed without a queue, and no default LocalQueue took it (jobs.rules.unqueued 1).
            namespace = bodies.namespace(job, "default")
            no_queue = unqueued.no_queue(integ.kind, namespace, world.local_queue_names(namespace))
            return reviews.deny(str(no_queue), 422)
        problems = job_updates.create_problems(job, integ)
        if problems:
            return reviews.deny("; ".join(str(p) for p in problems), 422)
        return reviews.allow()
    if request.get("operation") != "UPDATE":
        return reviews.allow()
    child = _child_refusals(world, old, job, parent)
    if child is not None:
        return reviews.deny("; ".join(child)) if child else reviews.allow()
    # A job gaining a queue label is managed as the new object: it is checked too.
    if not (world.managed(job) or world.managed(old)):
        return reviews.allow()
    refused = job_updates.refusals(old, job, world.workload_state(old), integ)
    if refused:
        return reviews.deny("; ".join(f"{p.path}: {p.message}" for p in refused))
    return reviews.allow()


def scaled_integration(
    world: ports.WebhookWorld, request: dict[str, Any]
) -> protocol.Integration | None:
    """The enabled integration whose ``scale`` subresource a review is about, if any."""
    resource = request.get("resource") or {}
    for integ in world.integrations.values():
        group = integ.api_version.rpartition("/")[0]
        if integ.plural == resource.get("resource") and group == resource.get("group"):
            return integ
    return None


def validate_scale(
    world: ports.WebhookWorld, request: dict[str, Any], job: dict[str, Any] | None
) -> dict[str, Any]:
    """Check a change of a job's replicas through ``/scale`` as the job's own update would be.

    ``job`` is the job as stored now (None: it does not exist, and the API server says so).
    """
    integ = scaled_integration(world, request)
    if (
        request.get("operation") != "UPDATE"
        or request.get("subResource") != "scale"
        or job is None
        or not isinstance(integ, protocol.Scalable)
    ):
        return reviews.allow()
    replicas = ((request.get("object") or {}).get("spec") or {}).get("replicas")
    new = None if not isinstance(replicas, int) else integ.scaled(job, replicas)
    if new is None or not world.managed(job):
        return reviews.allow()
    refused = job_updates.refusals(job, new, world.workload_state(job), integ)
    if refused:
        return reviews.deny("; ".join(f"{p.path}: {p.message}" for p in refused))
    return reviews.allow()
