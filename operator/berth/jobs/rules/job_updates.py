"""What an update of a managed job (any integrated kind) may change, given its Workload's state.

``refusals(old, new, state)`` returns every rule the update breaks, each a field error naming the
field and what to do instead; the validating webhook denies an update with any. Rules:

1. **Starting by hand** — ``spec.suspend`` may go from true to false only once the Workload is
   admitted (Berth starts it then).
2. **The queue of a running Job** — the queue label may not change while the Job is not
   suspended: neither added (a running Job would be suspended and its pods lost, or its start
   refused for ever), nor removed or moved. Kueue's rule (``jobframework/validation.go``,
   ``validateUpdateForQueueName``: the queue name is immutable unless the job is suspended).
3. **The queue of a queued Job** — while the Job has an unfinished Workload the label may not be
   removed (the Job could then be started by hand outside any quota); it may move to another
   LocalQueue while the Job is suspended and its Workload holds no quota. Kueue has no such rule
   (docs/scheduling.md says why Berth does).
4. **An admitted job's size, pod set by pod set** — while the job runs, or its Workload is
   admitted, no pod set may run more pods at once than its admission counts for it (a Job's
   ``spec.parallelism`` bounded by ``spec.completions``; a training job's replicas per replica
   type; a RayCluster's worker group as KubeRay sizes it), whatever another pod set gives up:
   those pods would run outside the quota. A pod set the admission does not count may not
   appear. The same rule answers a change through the ``scale`` subresource (an HPA's).
   Kueue refuses parallelism changes of a running job under partial admission
   (``jobs/job/job_webhook.go``, ``validatePartialAdmissionUpdate``) and otherwise stops and
   requeues it (``jobframework/reconciler.go``, ``EquivalentToWorkload``); Berth refuses every
   raise, and past the webhook the job controller holds or stops the job
   (``jobs.rules.job_sync.divergences``).
5. **The pods of a running job** — while the job is not suspended, no pod set's template may
   change: a Kubeflow training-operator makes pods from its templates for as long as the job
   runs (a deleted pod is made again), so an edit would run pods — more GPUs, another flavor's
   nodes — outside what was admitted. Kubernetes already keeps a started Job's template fixed
   and JobSet's webhook a running JobSet's; Kueue has no such rule for training jobs
   (docs/scheduling.md). While suspended the templates may change: Berth's own start and
   restore write them, and a queued job's Workload follows an edit (``jobs.rules.job_sync``).
6. **The runtime bound of a backfilled job** — while a Backfill queue's admission holds quota
   for the job, its ``activeDeadlineSeconds`` may not be removed or raised: the queue may have
   admitted it beside a reservation because that bound ends first. Lowering it is allowed. Kueue
   has no Backfill strategy, hence no such rule.

7. **Fail closed** — an update of a queued job may not make it what its create would have been
   refused for (``create_problems``: it no longer makes a Workload, or breaks a rule of its
   kind, such as a RayCluster's in-tree autoscaler or a worker group named ``head``): every
   other rule reads the job as a Workload, so one that cannot be read would pass them all.
   Kueue's job webhooks run their create checks on every update too (``ValidateUpdate``).

The rules read the job through its integration (suspension, size, queue, pod sets); a JobSet's
size can only change through its replicated jobs, which JobSet's own webhook keeps immutable.
Used by the operator's Job webhook (``operator/webhooks``), for the job and its ``scale``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from berth.api import bodies, duration, errors, validation, workload
from berth.api.bodies import Body
from berth.api.labels import QUEUE_LABEL
from berth.jobs import batchjob
from berth.jobs.framework import protocol

_BATCH_JOB = batchjob.BatchJob()
"""The integration the rules read a Job through when the caller binds none (unit tables)."""


@dataclasses.dataclass(frozen=True, slots=True)
class WorkloadState:
    """What the webhook knows of a Job's Workload."""

    exists_unfinished: bool = False
    """The Job has a Workload that has not finished."""
    exists_finished: bool = False
    """The Job's Workload has finished."""
    holds_quota: bool = False
    """Its admission reserves quota (admitted, or being evicted but not yet released)."""
    admitted: bool = False
    """Admitted and not being evicted: Berth may start the Job."""
    admitted_counts: Mapping[str, int] | None = None
    """Pods the admission counts for each pod set, by name, when it holds quota."""
    runtime_limit: float | None = None
    """The runtime bound a Backfill queue planned its admission with (its Workload's
    ``berth.dev/runtime-limit``), while it holds quota there; None elsewhere."""


def refusals(
    old: Body,
    new: Body,
    state: WorkloadState,
    integration: protocol.Integration = _BATCH_JOB,
) -> list[errors.FieldError]:
    """Every rule the update ``old`` → ``new`` breaks (empty: allowed)."""
    out: list[errors.FieldError] = []
    name = f"{integration.kind} {bodies.namespaced_name(new)}"
    old_queue = integration.queue_name(old)
    new_queue = integration.queue_name(new)
    label = f"metadata.labels[{QUEUE_LABEL}]"
    suspended = integration.is_suspended(new)
    was_suspended = integration.is_suspended(old)
    if was_suspended and not suspended and not state.admitted and old_queue:
        out.append(
            errors.FieldError(
                "spec.suspend",
                f"{name} is queued in LocalQueue {old_queue}: Berth starts it when its "
                "Workload is admitted; setting spec.suspend to false by hand is not allowed",
            )
        )
    if old_queue != new_queue:
        if not suspended or not was_suspended:
            out.append(
                errors.FieldError(
                    label,
                    f"{name} is not suspended: its LocalQueue cannot be "
                    f"{_change(old_queue, new_queue)} while it runs; create a new one that names "
                    "the queue (or suspend this one first)",
                )
            )
        elif new_queue is None and state.exists_unfinished:
            out.append(
                errors.FieldError(
                    label,
                    f"{name} is queued in LocalQueue {old_queue}: the label may not be "
                    "removed while its Workload is unfinished; delete it instead, or move "
                    "it to another LocalQueue",
                )
            )
        elif state.holds_quota:
            out.append(
                errors.FieldError(
                    label,
                    f"{name} is admitted in LocalQueue {old_queue}: its queue may not change "
                    "while it holds quota",
                )
            )
    running = not suspended or not was_suspended
    # While the Workload is being evicted the Job is suspended and nothing can start; Berth
    # then gives it its original size back before releasing the quota.
    if (running or state.admitted) and old_queue is not None:
        out += _size_refusals(old, new, state, name, integration)
    if not was_suspended and old_queue is not None:
        out += _template_refusals(old, new, name, integration)
    if state.holds_quota and state.runtime_limit is not None:
        out += _bound_refusals(new, state.runtime_limit, name, integration)
    if new_queue is not None:
        out += _invalid_refusals(old, new, name, integration)
    return out


def create_problems(job: Body, integration: protocol.Integration) -> list[errors.FieldError]:
    """What a create of ``job`` is refused for: no Workload made from it, or a placement rule."""
    obj, problems = integration.to_workload(job, uid=str(bodies.uid(job) or "new"))
    if obj is not None:
        problems = [*problems, *validation.validate_placement_annotations(obj)]
    return problems


def _invalid_refusals(
    old: Body, new: Body, name: str, integration: protocol.Integration
) -> list[errors.FieldError]:
    """Rule 7: an update may not bring a problem its create would have been refused for."""
    before = {(p.path, p.message) for p in create_problems(old, integration)}
    return [
        errors.FieldError(
            p.path,
            f"{p.message} ({name} is queued; Berth refuses an update that makes it a job it "
            "would not have accepted)",
        )
        for p in create_problems(new, integration)
        if (p.path, p.message) not in before
    ]


def _counts(job: Body, integration: protocol.Integration) -> dict[str, int] | None:
    """Pods each pod set runs at once, by name (None: the job makes no Workload)."""
    obj, _problems = integration.to_workload(job, uid="check")
    return None if obj is None else {ps.name: ps.count for ps in obj.spec.pod_sets}


def _size_refusals(
    old: Body,
    new: Body,
    state: WorkloadState,
    name: str,
    integration: protocol.Integration,
) -> list[errors.FieldError]:
    """Rule 4: no pod set above what its admission (or, without one, the job before) counts."""
    before, after = _counts(old, integration), _counts(new, integration)
    if after is None:
        return []  # rule 7 names why the job makes no Workload
    limits = state.admitted_counts if state.admitted_counts is not None else before or {}
    out = []
    for pod_set, wanted in after.items():
        limit = limits.get(pod_set, 0)
        if wanted <= limit or wanted <= (before or {}).get(pod_set, 0):
            continue
        out.append(
            errors.FieldError(
                integration.count_field(new, pod_set),
                f"{name}: pod set {pod_set} is admitted for {limit} pod(s) at a time; raising "
                f"it to {wanted} would run pods outside its quota (what another pod set gives "
                "up does not count). Create a new one of the new size (or delete this one and "
                "resubmit it); a suspended one that holds no quota may be resized and is "
                "queued again at its new size",
            )
        )
    return out


def _bound_refusals(
    new: Body, planned: float, name: str, integration: protocol.Integration
) -> list[errors.FieldError]:
    """Rule 6: the bound a Backfill queue planned with may only come down."""
    obj, _problems = integration.to_workload(new, uid="check")
    notes = {} if obj is None else obj.metadata.annotations
    value = notes.get(workload.RUNTIME_LIMIT_ANNOTATION)
    bound = None if value is None else duration.parse(value)
    if bound is not None and bound <= planned:
        return []
    spec = new.get("spec") or {}
    field = (
        "spec.runPolicy.activeDeadlineSeconds"
        if "runPolicy" in spec
        else "spec.activeDeadlineSeconds"
    )
    return [
        errors.FieldError(
            field,
            f"{name} was admitted by a Backfill queue that counts on it ending within "
            f"{duration.format(planned)}; the bound may be lowered, not raised or removed, "
            "while it holds quota",
        )
    ]


def _templates(job: Body, integration: protocol.Integration) -> dict[str, Any]:
    obj, _problems = integration.to_workload(job, uid="check")
    return {} if obj is None else {ps.name: ps.template for ps in obj.spec.pod_sets}


def _template_refusals(
    old: Body, new: Body, name: str, integration: protocol.Integration
) -> list[errors.FieldError]:
    """Rule 5: the pod templates of a running job are fixed."""
    before, after = _templates(old, integration), _templates(new, integration)
    return [
        errors.FieldError(
            "spec",
            f"{name} is running: the pod template of pod set {pod_set} may not change (its "
            "controller makes pods from it while it runs, outside what was admitted); suspend "
            "it first, or create a new one",
        )
        for pod_set, template in before.items()
        if pod_set in after and after[pod_set] != template
    ] + [
        errors.FieldError(
            "spec",
            f"{name} is running: pod set {pod_set} is new; a running job's roles are fixed "
            "(suspend it first, or create a new one)",
        )
        for pod_set in after
        if before and pod_set not in before
    ]


def _change(old: str | None, new: str | None) -> str:
    if old is None:
        return f"set to {new}"
    if new is None:
        return f"removed (it is {old})"
    return f"moved from {old} to {new}"
