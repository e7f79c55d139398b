"""How a job and its Workload have drifted apart, and what the job controller does.

Pure decisions for the operator's job controller (``operator/jobcontroller``):

- ``parent``: a Job controlled by a kind Berth integrates (a JobSet's child Jobs) is part of
  that job: its parent is admitted and started whole, and the Job is never a job of its own
  (Kueue's ``jobframework.IsOwnerManagedByKueue``).
- ``foreign_owner``: a Job controlled by another workload kind, one Berth does not integrate, is
  never a gang of its own either. It stays suspended and its Workload is never admitted —
  admitting each child Job alone is the partial gang start Berth exists to prevent. A Job
  controlled by a CronJob is an ordinary Job, as in Kueue (``jobs/job``'s integration treats
  CronJob-made Jobs as jobs; other parents are integrations of their own, ``jobframework``'s
  parent-workload handling).
- ``class_named_anew``: the WorkloadPriorityClass a job's label names now, when its Workload's
  priority came from another (Kueue's reconciler follows it).
- ``drift``: a suspended Job whose Workload holds no quota is followed by its Workload, as
  Kueue's reconciler does (``jobframework/reconciler.go``: ``UpdateQueueNameIfChanged`` moves
  the Workload to the Job's queue; a Workload no longer ``EquivalentToWorkload`` is deleted and
  made again from the Job).
- ``divergences``: how a running job differs from what its admission started, pod set by pod
  set — Kueue's ``EquivalentToWorkload`` (``jobframework/reconciler.go``; the comparison of
  ``pkg/util/equality/podset.go``: counts, tolerations, container resources), with the node
  selector, affinity, node name and pod priority compared too (each moves pods onto capacity or
  ahead of pods their admission did not count). The webhooks refuse such changes; one that gets
  past them (webhook down or bypassed) is answered by the job controller with the
  divergence's ``Remedy``: a batch Job asking for more pods is **held** at its admitted
  count (Kubernetes' Job controller removes the extra pods at once, and nothing but a user
  sizes a Job); anything else is **stopped and queued again** at its new shape, as Kueue does:
  a training job's or a RayCluster's replicas are set by autoscalers (an HPA through
  ``/scale``, an ``elasticPolicy``, Ray's autoscaler) that a hold would fight pod by pod, and
  a changed template, a new role or a job that no longer makes a Workload has no admitted
  shape to be held at.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

from berth.api import bodies, pod
from berth.api import workload as api_workload
from berth.api.bodies import Body
from berth.jobs import batchjob, registry, trainjob
from berth.jobs.framework import merge, protocol

_BATCH_JOB = batchjob.BatchJob()
"""The integration the rules read a Job through when the caller binds none (unit tables)."""


OWN_KINDS = frozenset({("batch", "CronJob")})
"""Controllers whose Jobs are ordinary Jobs."""


@dataclasses.dataclass(frozen=True, slots=True)
class Parent:
    """The integrated job a child Job belongs to."""

    kind: str
    name: str
    uid: str


def parent(job: Body, enabled: Mapping[str, protocol.Integration]) -> Parent | None:
    """The Job's controller when it is another job kind Berth integrates, else None."""
    ref = bodies.controller(job)
    if ref is None:
        return None
    found = registry.by_api_version(
        enabled, str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
    )
    if found is None or found.kind == "Job":
        return None
    return Parent(found.kind, str(ref.get("name") or ""), str(ref.get("uid") or ""))


def foreign_owner(job: Body, enabled: Mapping[str, protocol.Integration] = {}) -> str | None:
    """``Kind/name`` of the Job's controller when it is a kind Berth does not integrate.

    None for any other Job: one whose controller is one of ``enabled`` is a parent's child.
    """
    if parent(job, enabled) is not None:
        return None
    ref = bodies.controller(job)
    if ref is None:
        return None
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    if (group, ref.get("kind")) in OWN_KINDS:
        return None
    return f"{ref.get('kind')}/{ref.get('name')}"


WORKLOAD_CLASS = "WorkloadPriorityClass"


def class_named_anew(
    job: Body, current: tuple[str | None, str | None] | None, integration: protocol.Integration
) -> str | None:
    """The WorkloadPriorityClass a job's label names now, when its Workload's came from another.

    ``current`` is (kind, name) of the class the Workload's priority came from. As Kueue's job
    reconciler, a Workload follows its job's priority-class label (a Job's pod template is
    fixed, its labels are not): the operator's job controller writes it, the simulator replays
    it (``sim.intake.job_priority_change``). None when the label names no class, or the same.
    """
    wanted = integration.priority_class(job)
    if wanted is None or current == (WORKLOAD_CLASS, wanted):
        return None
    return wanted


class Drift(enum.Enum):
    """How a suspended Job differs from its Workload."""

    NONE = "None"
    QUEUE = "Queue"
    """Only the queue: the Workload's queueName is updated in place."""
    POD_SETS = "PodSets"
    """Its pods (count, minimum, template): the Workload is made again from the Job."""


def drift(
    job: Body,
    workload: api_workload.Workload,
    integration: protocol.Integration = _BATCH_JOB,
) -> tuple[Drift, str | None]:
    """How ``job`` differs from ``workload``, and the Job's queue."""
    queue = integration.queue_name(job)
    wanted, problems = integration.to_workload(job, uid=bodies.uid(job))
    if wanted is None or problems:
        return Drift.NONE, queue  # an invalid Job keeps its Workload; its create was refused
    if wanted.spec.pod_sets != workload.spec.pod_sets:
        return Drift.POD_SETS, queue
    if queue is not None and queue != workload.spec.queue_name:
        return Drift.QUEUE, queue
    return Drift.NONE, queue


class Remedy(enum.Enum):
    """What the job controller does about a running job that left its admitted shape."""

    HOLD = "Hold"
    """Lower the job back to its admitted counts (the kind's hold patch)."""
    STOP = "Stop"
    """Stop the job and queue it again at its new shape (its Workload evicted, ``JobChanged``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Divergence:
    """One way a running job left its admitted shape."""

    pod_set: str
    """The pod set it concerns ('' when the job no longer makes a Workload at all)."""
    message: str
    remedy: Remedy


_MANAGED = ("nodeSelector", "tolerations")
"""Template fields Berth's start writes (the template's own plus the flavors'): compared with
what the start would write now."""
_OWN = (
    "containers",
    "initContainers",
    "resources",
    "overhead",
    "affinity",
    "nodeName",
    "priorityClassName",
    "priority",
    "runtimeClassName",
)
"""Template fields that decide where and how much the pods take: compared with the template
the Workload recorded."""
_TEMPLATES_FROM_ELSEWHERE = frozenset({trainjob.KIND})
"""Kinds whose running pods come from objects made at start (a TrainJob's JobSet, held by the
child rules of ``jobs.rules.child_jobs``): their templates, read through a training runtime that an
admin may edit, are not compared."""


def _spec(template: Any) -> dict[str, Any]:  # noqa: ANN401 - a JSON pod template
    """A template's spec as the Workload's model writes it (one form for both sides)."""
    loaded = pod.PodTemplateSpec.model_validate(template or {})
    spec = pod.raw_template(loaded).get("spec") or {}
    for key in ("containers", "initContainers"):
        if key in spec:
            spec[key] = [c.get("resources") or {} for c in spec[key]]
    return spec


def _differs(a: dict[str, Any], b: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    return [f for f in fields if a.get(f) != b.get(f)]


def divergences(
    job: Body,
    originals: Sequence[protocol.PodSetOriginal],
    runs: Sequence[protocol.PodSetRun],
    integration: protocol.Integration = _BATCH_JOB,
) -> list[Divergence]:
    """How a running job differs from what its admission started (empty: it is equivalent).

    ``originals`` are the pod sets the Workload recorded, ``runs`` how the admission runs each.
    """
    uid = bodies.uid(job)
    running, problems = integration.to_workload(job, uid=uid)
    if running is None:
        why = "; ".join(str(p) for p in problems)
        return [Divergence("", f"it no longer makes a Workload: {why}", Remedy.STOP)]
    admitted = {r.name: r.count for r in runs}
    recorded = {o.name: o.template for o in originals}
    started, _ = integration.to_workload(
        merge.merge_patch(job, integration.start_patch(job, list(originals), list(runs))),
        uid=uid,
    )
    started_sets = {} if started is None else {str(ps.name): ps for ps in started.spec.pod_sets}
    out = []
    for ps in running.spec.pod_sets:
        name = str(ps.name)
        if name not in admitted:
            if ps.count > 0:
                message = f"pod set {name} is not part of its admission ({ps.count} pod(s))"
                out.append(Divergence(name, message, Remedy.STOP))
            continue
        if ps.count > admitted[name]:
            held = Remedy.HOLD if isinstance(integration, protocol.HeldAtCount) else Remedy.STOP
            message = f"pod set {name} runs {ps.count} pod(s), its admission {admitted[name]}"
            out.append(Divergence(name, message, held))
        if integration.kind in _TEMPLATES_FROM_ELSEWHERE:
            continue
        now = _spec(pod.raw_template(ps.template))
        fields = _differs(now, _spec(recorded.get(name)), _OWN)
        if name in started_sets:
            fields += _differs(now, _spec(pod.raw_template(started_sets[name].template)), _MANAGED)
        if fields:
            message = f"pod set {name}'s template changed since its start ({', '.join(fields)})"
            out.append(Divergence(name, message, Remedy.STOP))
    return out
