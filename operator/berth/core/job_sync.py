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
- ``drift``: a suspended Job whose Workload holds no quota is followed by its Workload, as
  Kueue's reconciler does (``jobframework/reconciler.go``: ``UpdateQueueNameIfChanged`` moves
  the Workload to the Job's queue; a Workload no longer ``EquivalentToWorkload`` is deleted and
  made again from the Job).
- ``over_admission``: a running Job asking for more pods at once than its admission counts.
  The webhook refuses that change; if it gets past (webhook down or bypassed), the controller
  holds the Job at its admitted count.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from berth.api import workload as api_workload
from berth.core import integrations, job_kind

_BATCH_JOB = integrations.BatchJob()
"""The integration the rules read a Job through when the caller binds none (unit tables)."""

Body = dict[str, Any]

OWN_KINDS = frozenset({("batch", "CronJob")})
"""Controllers whose Jobs are ordinary Jobs."""

UNSUPPORTED_OWNER_LABEL = integrations.UNSUPPORTED_OWNER_LABEL
"""On the Workload of a Job whose controller is a kind Berth does not integrate: that kind.
The World never queues such a Workload, and the Workload webhook keeps the label."""


@dataclasses.dataclass(frozen=True, slots=True)
class Parent:
    """The integrated job a child Job belongs to."""

    kind: str
    name: str
    uid: str


def _controller(job: Body) -> dict[str, Any] | None:
    for ref in (job.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def parent(job: Body, enabled: Mapping[str, job_kind.Integration]) -> Parent | None:
    """The Job's controller when it is another job kind Berth integrates, else None."""
    ref = _controller(job)
    if ref is None:
        return None
    found = integrations.by_api_version(
        enabled, str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
    )
    if found is None or found.kind == "Job":
        return None
    return Parent(found.kind, str(ref.get("name") or ""), str(ref.get("uid") or ""))


def foreign_owner(job: Body, enabled: Mapping[str, job_kind.Integration] = {}) -> str | None:
    """``Kind/name`` of the Job's controller when it is a kind Berth does not integrate.

    None for any other Job: one whose controller is one of ``enabled`` is a parent's child.
    """
    if parent(job, enabled) is not None:
        return None
    for ref in (job.get("metadata") or {}).get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        if (group, ref.get("kind")) in OWN_KINDS:
            return None
        return f"{ref.get('kind')}/{ref.get('name')}"
    return None


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
    integration: job_kind.Integration = _BATCH_JOB,
) -> tuple[Drift, str | None]:
    """How ``job`` differs from ``workload``, and the Job's queue."""
    queue = integration.queue_name(job)
    wanted, problems = integration.to_workload(
        job, uid=str((job.get("metadata") or {}).get("uid") or "")
    )
    if wanted is None or problems:
        return Drift.NONE, queue  # an invalid Job keeps its Workload; its create was refused
    if wanted.spec.pod_sets != workload.spec.pod_sets:
        return Drift.POD_SETS, queue
    if queue is not None and queue != workload.spec.queue_name:
        return Drift.QUEUE, queue
    return Drift.NONE, queue


def over_admission(
    job: Body, admitted_count: int, integration: job_kind.Integration = _BATCH_JOB
) -> bool:
    """Whether a running job asks for more pods at once than its admission counts."""
    return not integration.is_suspended(job) and integration.pod_count(job) > admitted_count
