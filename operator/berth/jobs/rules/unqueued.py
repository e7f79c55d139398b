"""What becomes of work that names no LocalQueue in a namespace Berth manages.

With ``manageJobsWithoutQueueName`` a namespace ``managedJobsNamespaceSelector`` selects is
closed to work outside the queue (``jobs.rules.managed`` rule 4 says which jobs that covers). Every
way a pod could start there is answered, first match wins:

1. **A job of an integrated kind, or a bare Pod with the pod integration on, naming no queue**
   is queued in the namespace's LocalQueue named ``default`` when there is one (Kueue's
   ``LocalQueueDefaulting``, stable since v0.17: the job gets the queue label at creation), and
   refused at creation otherwise, the message naming the label and the namespace's LocalQueues.
   Kueue leaves such a job suspended until someone labels it; a refusal says at once what to
   do, and nothing is left holding a name (docs/scheduling.md).
2. **A workload kind Berth does not queue** (Deployment, StatefulSet, ReplicaSet, DaemonSet,
   ReplicationController) is refused at creation: its pods would run outside every quota.
   Kueue's documented answer is a ValidatingAdmissionPolicy an admin writes
   (``site/.../enforce_job_management/setup_job_admission_policy.md``); here it ships.
3. **A Pod that names no queue** is let through only when its controller is a job Berth runs:
   an enabled kind (or a RayJob's RayCluster) whose object, when that kind is watched, exists
   with the uid the reference names, and the Pod carries the labels that controller selects
   its pods by (so it counts the Pod, and removes one too many). A bare Pod is rule 1's; a Pod
   of any other controller, or whose controller reference is forged, is refused. This also
   closes the JobSet-child escape: a Job claiming a JobSet without the ``jobset-name`` label is
   sent to the same hooks as any other unlabelled Job in the namespace, and its start is
   checked as a child's.

The operator's webhooks (``operator.webhooks``) call these; the chart and ``berth run``
register the hooks only while ``manageJobsWithoutQueueName`` is on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping

from berth.api import bodies, errors
from berth.api.bodies import Body
from berth.api.labels import QUEUE_LABEL
from berth.jobs import ray
from berth.jobs.framework import protocol
from berth.jobs.rules import job_sync

DEFAULT_LOCAL_QUEUE = "default"
"""The LocalQueue a job naming none is queued in (Kueue's ``LocalQueueDefaulting``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class UnqueuedKind:
    """A workload kind Berth does not queue, as the webhooks select it."""

    group: str
    version: str
    plural: str
    kind: str


UNQUEUED_KINDS = (
    UnqueuedKind("apps", "v1", "deployments", "Deployment"),
    UnqueuedKind("apps", "v1", "statefulsets", "StatefulSet"),
    UnqueuedKind("apps", "v1", "replicasets", "ReplicaSet"),
    UnqueuedKind("apps", "v1", "daemonsets", "DaemonSet"),
    UnqueuedKind("", "v1", "replicationcontrollers", "ReplicationController"),
)
"""Kinds that make pods and that no integration queues (the chart lists the same)."""

_LABEL = f"metadata.labels[{QUEUE_LABEL}]"


def default_queue(namespace_queues: Collection[str]) -> str | None:
    """The LocalQueue a job naming none is queued in, if the namespace has one."""
    return DEFAULT_LOCAL_QUEUE if DEFAULT_LOCAL_QUEUE in namespace_queues else None


def _queues(namespace_queues: Collection[str]) -> str:
    if not namespace_queues:
        return "this namespace has no LocalQueue yet; ask an admin for one"
    return f"this namespace's LocalQueues: {', '.join(sorted(namespace_queues))}"


def no_queue(kind: str, namespace: str, namespace_queues: Collection[str]) -> errors.FieldError:
    """Rule 1's refusal: a job naming no queue where none is the default."""
    return errors.FieldError(
        _LABEL,
        f"required: Berth queues every {kind} in namespace {namespace}; name a LocalQueue with "
        f"the label {QUEUE_LABEL} ({_queues(namespace_queues)}), or ask an admin for "
        f"a LocalQueue named {DEFAULT_LOCAL_QUEUE}, which takes the jobs that name none",
    )


def unqueued_kind(kind: str, namespace: str) -> errors.FieldError:
    """Rule 2's refusal: a kind whose pods Berth cannot queue."""
    return errors.FieldError(
        "kind",
        f"Berth does not queue {kind} objects, and namespace {namespace} runs only queued "
        "work (manageJobsWithoutQueueName): its pods would run outside every quota. Run it "
        "as a queued job, or in a namespace Berth does not manage",
    )


def pod_owner_kinds(enabled: Mapping[str, protocol.Integration]) -> frozenset[str]:
    """Controllers whose pods are a queued job's: the enabled kinds, and a RayJob's cluster."""
    kinds = set(enabled)
    if ray.RAYJOB.kind in enabled:
        kinds.add(ray.RAYCLUSTER.kind)
    return frozenset(kinds)


def pod_refusal(
    pod: Body,
    enabled: Mapping[str, protocol.Integration],
    seen: Callable[[str], Body | None],
) -> errors.FieldError | None:
    """Rule 3: why a Pod naming no queue may not run here (None: it is a queued job's).

    ``seen`` finds a job by uid as the operator last saw it. A bare Pod is refused too: the pod
    integration (rule 1) queues bare Pods before this is asked.
    """
    namespace = bodies.namespace(pod, "default")
    ref = bodies.controller(pod)
    if ref is None:
        return errors.FieldError(
            _LABEL,
            f"required: namespace {namespace} runs only queued work; a Pod of its own must "
            f"name a LocalQueue with the label {QUEUE_LABEL} (Berth's pod integration "
            "queues it), or run as a queued job",
        )
    kind, name, uid = str(ref.get("kind")), str(ref.get("name")), str(ref.get("uid"))
    if kind not in pod_owner_kinds(enabled):
        return errors.FieldError(
            "metadata.ownerReferences",
            f"its controller is a {kind}, which Berth does not queue, and namespace "
            f"{namespace} runs only queued work: its pods would run outside every quota",
        )
    if kind not in enabled:
        return None  # a RayJob's cluster with the RayCluster integration off: not watched
    found = seen(uid)
    if found is None or found.get("kind", "Job") != kind:
        return errors.FieldError(
            "metadata.ownerReferences",
            f"its controller {kind} {namespace}/{name} (uid {uid}) is no job Berth knows; a "
            "queued job's controller makes its pods",
        )
    labels = bodies.labels_of(pod)
    selectors = [_selector(enabled[kind], found)]
    # A child's pods may carry its parent's label instead (a RayJob's cluster: Berth labels the
    # pods of every role with the RayJob's uid), so the parent's selector counts too.
    parent = job_sync.parent(found, enabled)
    above = None if parent is None else seen(parent.uid)
    if parent is not None and above is not None:
        selectors.append(_selector(enabled[parent.kind], above))
    if not any(all(labels.get(k) == v for k, v in wanted.items()) for wanted in selectors):
        shown = ", ".join(f"{k}={v}" for k, v in selectors[0].items())
        return errors.FieldError(
            "metadata.labels",
            f"it claims {kind} {namespace}/{name} as its controller without the labels that "
            f"controller puts on its pods ({shown}), so that controller would never count it: "
            "only the controller makes its pods",
        )
    return None


def _selector(integration: protocol.Integration, job: Body) -> dict[str, str]:
    """The labels an integration's controller puts on every pod of ``job``."""
    return dict(p.split("=", 1) for p in integration.pod_selector(job).split(",") if "=" in p)
