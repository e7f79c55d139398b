"""The Pod webhooks' rules for a pod group's members: what a new member gets, what none may change.

``webhook_patch`` makes a new Pod a member (Berth's label, gate, finalizer and its role hashed
from its spec); ``create_problems`` and ``update_problems`` say why a member's create or change is
refused. Reached by the operator's Pod webhooks through the pod integration
(``jobs.pod.integration.PodGroupJob``), and by the simulator's load-time checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.api import bodies, errors
from berth.api.bodies import Body
from berth.api.labels import KUEUE_QUEUE_LABEL, QUEUE_LABEL
from berth.jobs.framework import labelled
from berth.jobs.pod import group as pod_group
from berth.jobs.pod.group import (
    FINALIZER,
    GATE,
    GROUP_LABEL,
    KUEUE_GROUP_LABEL,
    KUEUE_RETRIABLE_ANNOTATION,
    KUEUE_TOTAL_ANNOTATION,
    MANAGED_LABEL,
    RETRIABLE_ANNOTATION,
    ROLE_ANNOTATION,
    TOTAL_ANNOTATION,
)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def webhook_patch(pod: Body, *, honor_kueue: bool = False) -> list[Body]:
    """The JSON patch the Pod webhook applies to a new member.

    Berth's label, scheduling gate and finalizer, and its role (hashed from the spec as
    created, replacing any role the request carried: a role decides the pod set a pod counts in).
    With ``honor_kueue``, Kueue's group label and size annotation are copied to Berth's, so
    everything after the webhook reads Berth's alone.
    """
    meta = bodies.meta(pod)
    spec = pod_group.spec_of(pod)
    ops: list[Body] = []
    labels = {MANAGED_LABEL: "true"}
    notes = {ROLE_ANNOTATION: pod_group.role_hash(spec)}
    if honor_kueue:
        group = pod_group.group_name(pod, honor_kueue=True)
        if group is not None:
            labels[GROUP_LABEL] = group
        total_key = pod_group.total_key_of(pod, honor_kueue=True)
        if total_key in bodies.annotations_of(pod):
            notes[TOTAL_ANNOTATION] = str(bodies.annotations_of(pod)[total_key])
    for field, values in (("labels", labels), ("annotations", notes)):
        if field not in meta:
            ops.append({"op": "add", "path": f"/metadata/{field}", "value": {}})
        ops += [
            {"op": "add", "path": f"/metadata/{field}/{_escape(k)}", "value": v}
            for k, v in values.items()
        ]
    finalizers = meta.get("finalizers")
    if not isinstance(finalizers, list):
        ops.append({"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]})
    elif FINALIZER not in finalizers:
        ops.append({"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER})
    gates = spec.get("schedulingGates")
    if not isinstance(gates, list):
        ops.append({"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GATE}]})
    elif not pod_group.is_gated(pod):
        ops.append({"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": GATE}})
    return ops


def create_problems(pod: Body, *, honor_kueue: bool = False) -> list[errors.FieldError]:
    """Why a new member is refused.

    Its group metadata, a node chosen past the queue, or Berth's label on a pod Berth did not
    make a member (no queue, or not gated).
    """
    problems = pod_group.metadata_problems(pod, honor_kueue=honor_kueue)
    claimed = MANAGED_LABEL in bodies.labels_of(pod)
    if claimed and (
        labelled.queue_name(pod, honor_kueue=honor_kueue) is None or not pod_group.is_gated(pod)
    ):
        problems.append(
            errors.FieldError(
                f"metadata.labels[{MANAGED_LABEL}]",
                f"is Berth's, on the pods it queues; name a LocalQueue with {QUEUE_LABEL} instead",
            )
        )
    if pod_group.spec_of(pod).get("nodeName"):
        problems.append(
            errors.FieldError(
                "spec.nodeName",
                "a queued pod may not name its node: it is placed once its group is admitted",
            )
        )
    return problems


def _same(old: Mapping[str, Any], new: Mapping[str, Any], key: str) -> bool:
    return old.get(key) == new.get(key)


def update_problems(
    old: Body,
    new: Body,
    *,
    admitted: bool,
    may_drop_finalizer: bool = False,
    honor_kueue: bool = False,
) -> list[errors.FieldError]:
    """Why a change to a member is refused.

    Its queue, group, size, role and Berth's label stay as created; a group that may not be
    retried stays so (Kueue's rule); Berth's scheduling gate comes off only while the group
    is ``admitted`` (Berth's start) — otherwise a member would run outside any quota; and
    Berth's finalizer comes off only when ``finalizer_drops`` lets it go
    (``may_drop_finalizer``): a member gone before its group counted it would be replaced, or
    its success lost.
    """
    problems = []
    if (
        FINALIZER in pod_group.finalizers_of(old)
        and FINALIZER not in pod_group.finalizers_of(new)
        and not may_drop_finalizer
    ):
        problems.append(
            errors.FieldError(
                "metadata.finalizers",
                f"{FINALIZER} is removed by Berth once the pod's group no longer counts it; "
                "delete the pod instead",
            )
        )
    old_labels, new_labels = bodies.labels_of(old), bodies.labels_of(new)
    old_notes, new_notes = bodies.annotations_of(old), bodies.annotations_of(new)
    fixed = [
        ("labels", old_labels, new_labels, QUEUE_LABEL),
        ("labels", old_labels, new_labels, KUEUE_QUEUE_LABEL),
        ("labels", old_labels, new_labels, GROUP_LABEL),
        ("labels", old_labels, new_labels, KUEUE_GROUP_LABEL),
        ("labels", old_labels, new_labels, MANAGED_LABEL),
        ("annotations", old_notes, new_notes, TOTAL_ANNOTATION),
        ("annotations", old_notes, new_notes, KUEUE_TOTAL_ANNOTATION),
        ("annotations", old_notes, new_notes, ROLE_ANNOTATION),
    ]
    for where, before, after, key in fixed:
        if not _same(before, after, key):
            problems.append(
                errors.FieldError(
                    f"metadata.{where}[{key}]",
                    "is fixed once a queued pod is created; delete the pod and create it again",
                )
            )
    was = pod_group.read_key(
        old_notes, RETRIABLE_ANNOTATION, KUEUE_RETRIABLE_ANNOTATION, honor_kueue
    )
    now = pod_group.read_key(
        new_notes, RETRIABLE_ANNOTATION, KUEUE_RETRIABLE_ANNOTATION, honor_kueue
    )
    if was == "false" and now != "false":
        problems.append(
            errors.FieldError(
                f"metadata.annotations[{RETRIABLE_ANNOTATION}]",
                "a group that may not be retried cannot become retriable",
            )
        )
    if pod_group.is_gated(old) and not pod_group.is_gated(new) and not admitted:
        problems.append(
            errors.FieldError(
                "spec.schedulingGates",
                f"{GATE} is removed by Berth when the pod's group is admitted; the group is not",
            )
        )
    return problems
