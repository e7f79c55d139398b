"""What the Pod webhooks answer: pod groups' members, and pods placed by topology.

- ``mutate_pod`` (``/mutate-pod``): a new managed Pod becomes a member of its pod group, held by
  Berth's scheduling gate (the ``pod`` integration, ``jobs.pod.group``).
- ``validate_pod`` (``/validate-pod``): a member's group metadata is checked at creation, and a
  change keeps ``jobs.pod.group``'s rules (the gate comes off only while its group is admitted).
- ``mutate_placed_pod`` (``/mutate-placed-pod``): a new pod of a pod set placed by topology
  waits at Berth's topology gate until the ungater pins it to its domain.

Decisions read the ``World`` only (``ports.WebhookWorld``). Called by ``routes``;
``composed_of`` by ``configurations`` too.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from berth.api import bodies, topology
from berth.api.labels import QUEUE_LABEL
from berth.jobs.framework import pod_placement, protocol
from berth.operator import ports
from berth.operator.webhooks import reviews


def composed_of(
    integrations: Mapping[str, protocol.Integration], member_kind: str
) -> protocol.ComposedIntegration | None:
    """The enabled composed kind whose jobs are made of ``member_kind`` objects (pods), if any."""
    for integ in integrations.values():
        if isinstance(integ, protocol.ComposedIntegration) and integ.member_kind == member_kind:
            return integ
    return None


def mutate_pod(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Make a new managed Pod a pod group's member: held by Berth's gate (the pod integration).

    A pod a controller owns (a Job's) is its controller's business, never a member.
    """
    pod = reviews.job_of(request)
    integ = composed_of(world.integrations, str(pod.get("kind") or ""))
    if request.get("operation") != "CREATE" or integ is None:
        return reviews.allow()  # not a create, or the pod integration is off
    if integ.group_of_new(pod) is None or not world.managed(pod):
        return reviews.allow()
    default = world.default_queue(pod)
    if default is None:
        return reviews.allow(integ.admit_member(pod))
    # Queued in the namespace's default LocalQueue (jobs.rules.unqueued 1), then made a member.
    labelled = copy.deepcopy(pod)
    labelled.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_LABEL] = default
    return reviews.allow(
        reviews.label_patch(pod, QUEUE_LABEL, default) + integ.admit_member(labelled)
    )


def mutate_placed_pod(request: dict[str, Any]) -> dict[str, Any]:
    """Hold a new pod of a pod set placed by topology at Berth's topology gate.

    The ungater (``operator.ungater``) pins it to its domain and removes the gate.
    """
    pod = reviews.job_of(request)
    labels = bodies.labels_of(pod)
    if request.get("operation") != "CREATE" or topology.PLACED_LABEL not in labels:
        return reviews.allow()
    return reviews.allow(pod_placement.gate_patch(pod))


def validate_pod(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Check a new member's group metadata, and that a change keeps ``jobs.pod.group``'s rules.

    Berth's scheduling gate comes off only while the member's group is admitted.
    """
    pod = reviews.job_of(request)
    old = reviews.job_of(request, "oldObject")
    integ = composed_of(world.integrations, str(pod.get("kind") or ""))
    if integ is None or not (integ.is_member(pod) or integ.is_member(old)):
        return reviews.allow()
    if request.get("operation") == "CREATE":
        problems = integ.new_member_problems(pod)
    elif request.get("operation") == "UPDATE":
        group = world.pod_group(old)
        admitted = group is not None and world.admitted_for_job(group)
        problems = integ.member_update_problems(
            old, pod, admitted=admitted, may_drop_finalizer=_may_drop(world, integ, group, old)
        )
    else:
        return reviews.allow()
    if problems:
        return reviews.deny("; ".join(str(p) for p in problems), 422)
    return reviews.allow()


def _may_drop(
    world: ports.WebhookWorld,
    integ: protocol.ComposedIntegration,
    group: dict[str, Any] | None,
    pod: dict[str, Any],
) -> bool:
    """Tell whether a member's finalizer may come off now (the job controller's own rule)."""
    if group is None:
        return True  # no group to count it any more
    state = world.workload_state(group)
    done = state.exists_finished or (not state.exists_unfinished and integ.finished(group)[0])
    return integ.may_drop_finalizer(group, pod, finished_workload=done)
