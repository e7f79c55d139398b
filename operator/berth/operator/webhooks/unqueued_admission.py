"""What a namespace Berth closes to unqueued work refuses (``jobs.rules.unqueued`` rules 2 and 3).

With ``manageJobsWithoutQueueName`` a managed namespace runs only queued work:

- ``validate_unqueued_pod`` (``/validate-unqueued-pod``): a Pod naming no queue is refused
  unless a queued job's controller made it (rule 3).
- ``validate_unqueued_kind`` (``/validate-unqueued-kind``): a workload kind Berth does not queue
  (Deployments, StatefulSets, ...) is refused (rule 2).

Rule 1 (a job naming no queue goes to the namespace's ``default`` LocalQueue) is the job and pod
webhooks' (``job_admission``, ``pod_admission``). Decisions read the ``World`` only. Called by
``routes``.
"""

from __future__ import annotations

from typing import Any

from berth.api.labels import KUEUE_QUEUE_LABEL, QUEUE_LABEL
from berth.jobs.rules import unqueued
from berth.operator import ports
from berth.operator.webhooks import reviews


def validate_unqueued_pod(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Refuse a Pod naming no queue in a managed namespace unless a queued job's controller made it.

    ``jobs.rules.unqueued`` rule 3; the hook sees only namespaces Berth manages without a queue
    name.
    """
    pod = reviews.job_of(request)
    if request.get("operation") != "CREATE" or not world.config.manage_jobs_without_queue_name:
        return reviews.allow()
    if world.integration(pod).queue_name(pod) is not None:
        return reviews.allow()
    if not world.managed({"kind": "Pod", "metadata": _unlabelled(pod)}):
        # kube-system, the operator's namespace, or one the selector leaves out
        return reviews.allow()
    refused = unqueued.pod_refusal(pod, world.integrations, world.job_seen)
    return reviews.allow() if refused is None else reviews.deny(str(refused), 422)


def validate_unqueued_kind(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Refuse a workload kind Berth does not queue in a managed namespace (``unqueued`` rule 2)."""
    obj = reviews.job_of(request)
    if request.get("operation") != "CREATE" or not world.config.manage_jobs_without_queue_name:
        return reviews.allow()
    kind = str((request.get("kind") or {}).get("kind") or obj.get("kind") or "")
    if not world.managed({"kind": kind, "metadata": _unlabelled(obj)}):
        return reviews.allow()
    namespace = str((obj.get("metadata") or {}).get("namespace") or request.get("namespace") or "")
    return reviews.deny(str(unqueued.unqueued_kind(kind, namespace)), 422)


def _unlabelled(obj: dict[str, Any]) -> dict[str, Any]:
    """An object's metadata without its queue labels: whether its namespace is managed at all."""
    meta = dict(obj.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    labels.pop(QUEUE_LABEL, None)
    labels.pop(KUEUE_QUEUE_LABEL, None)
    meta["labels"] = labels
    meta.pop("ownerReferences", None)
    return meta
