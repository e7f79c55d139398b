"""The pure half of the pod integration: plain Pods admitted as one group.

After Kueue's ``pkg/controller/jobs/pod`` (``pod_controller.go``, ``pod_webhook.go``):

- **Members.** A Pod that names a LocalQueue and that no controller owns is managed. With a
  ``berth.dev/pod-group-name`` label and a ``berth.dev/pod-group-total-count`` annotation it is
  a member of that group of that many pods; without them it is a group of one, named after it.
  The group is the "job": ``group_body`` assembles it from its pods (kind ``Pod``, the group's
  name, a uid of its own from ``group_uid``, the first member's labels, and ``pods``).
- **Runnable.** A member that has not failed and is not deleted before it was bound. The group's
  Workload is made once ``total`` members are runnable; more are *excess* (the newest gated
  ones, in Kueue's order: with Berth's finalizer first, started first, oldest first) and are
  deleted.
- **Pod sets.** One per *role*: members whose admission-relevant spec is the same (Kueue's
  ``SpecShape``: containers' and init containers' requests and ports, node selector, affinity,
  tolerations, runtime class, priority, spread constraints, overhead, resource claims, pod-level
  requests). The role is a hash of that shape, taken when the pod is created and kept in the
  ``berth.dev/role-hash`` annotation (starting a pod changes its node selector). Pod sets are
  named after their role and sorted by it; each counts its members.
- **Start.** Each gated member loses Berth's scheduling gate ``berth.dev/admission`` and gains
  its pod set's label, node selector and tolerations (a strategic merge patch per pod; a gated
  pod's node selector and tolerations may be added to). A member made after the start (a
  replacement) is started the same way while the group stays admitted.
- **Stop.** Pods cannot be suspended: the group's running members are deleted (Kueue deletes
  them too); members still gated keep waiting. Whoever made the pods makes replacements.
- **Finished.** When ``total`` members succeeded (succeeded), or when no member is running and
  one says ``berth.dev/retriable-in-group: "false"`` (failed; Kueue calls this success too).
- **Finalizer.** ``berth.dev/managed`` keeps a finished pod until it is counted:
  ``finalizer_drops`` says which members may go (every member once the Workload finished, a
  deleted member that did not succeed, a failed member once the group has been replaced up to
  ``total``).

``webhook_patch`` and ``create_problems``/``update_problems`` are the webhooks' rules. Used by
``jobs.pod.integration.PodGroupJob`` (simulator and operator), the operator's World (which
assembles groups from Pod events), its job controller and its Pod webhooks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from berth.api import bodies, errors, quantity, workload
from berth.api import topology as api_topology
from berth.api.bodies import Body
from berth.api.labels import POD_SET_LABEL, QUEUE_LABEL
from berth.jobs.framework import labelled, podsets, workload_body

KIND = "Pod"
API_VERSION = "v1"
PLURAL = "pods"
GROUP_LABEL = "berth.dev/pod-group-name"
TOTAL_ANNOTATION = "berth.dev/pod-group-total-count"
RETRIABLE_ANNOTATION = "berth.dev/retriable-in-group"
KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_RETRIABLE_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
ROLE_ANNOTATION = "berth.dev/role-hash"
"""The member's role, written by the Pod webhook when the pod is created."""
GATE = "berth.dev/admission"
"""The scheduling gate that holds a member until its group is admitted."""
MANAGED_LABEL = "berth.dev/managed"
"""``"true"`` on every member: the Pod webhooks' object selector."""
FINALIZER = "berth.dev/managed"
"""Keeps a member until the group's Workload counted it."""
WORKLOAD_LABEL = workload.POD_GROUP_LABEL

_UID_PREFIX = "pod-group-"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MAX_NAME = 253


def _map(value: Any) -> Body:  # noqa: ANN401 - a JSON value
    return value if isinstance(value, dict) else {}


def spec_of(pod: Body) -> Body:
    """A pod's spec."""
    return _map(pod.get("spec"))


def _phase(pod: Body) -> str:
    return str(_map(pod.get("status")).get("phase") or "")


def read_key(values: Body, key: str, kueue_key: str, honor_kueue: bool) -> str | None:
    """Berth's key of a label or annotation map, else Kueue's twin under ``honor_kueue``."""
    value = values.get(key)
    if value is None and honor_kueue:
        value = values.get(kueue_key)
    return None if value is None else str(value)


# Members ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Membership:
    """The group a managed Pod belongs to."""

    name: str
    """The group's name: the pod's own when it is alone."""
    total: int
    grouped: bool
    """False for a pod alone (a group of one, named after it)."""


def group_name(pod: Body, *, honor_kueue: bool = False) -> str | None:
    """The group a pod's label names, if any."""
    return read_key(bodies.labels_of(pod), GROUP_LABEL, KUEUE_GROUP_LABEL, honor_kueue)


def total_key_of(pod: Body, *, honor_kueue: bool) -> str:
    """The annotation that holds the group's size (Kueue's under ``honorKueueLabels``)."""
    notes = bodies.annotations_of(pod)
    if honor_kueue and TOTAL_ANNOTATION not in notes and KUEUE_TOTAL_ANNOTATION in notes:
        return KUEUE_TOTAL_ANNOTATION
    return TOTAL_ANNOTATION


def metadata_problems(pod: Body, *, honor_kueue: bool = False) -> list[errors.FieldError]:
    """What is wrong with a pod's group label and size annotation (both, or neither)."""
    group = group_name(pod, honor_kueue=honor_kueue)
    total_key = total_key_of(pod, honor_kueue=honor_kueue)
    total = bodies.annotations_of(pod).get(total_key)
    label_field = f"metadata.labels[{GROUP_LABEL}]"
    total_field = f"metadata.annotations[{total_key}]"
    both = f"set both the {GROUP_LABEL} label and the {TOTAL_ANNOTATION} annotation, or neither"
    if group is None:
        return [] if total is None else [errors.FieldError(label_field, f"required: {both}")]
    problems = []
    if len(group) > _MAX_NAME or not _NAME.match(group):
        problems.append(
            errors.FieldError(
                label_field,
                f"{group!r} is not a valid Workload name (lower-case letters, digits, '-' and "
                "'.'; it names the group's Workload)",
            )
        )
    if total is None:
        problems.append(errors.FieldError(total_field, f"required: {both}"))
    elif not str(total).isdigit() or int(str(total)) < 1:
        problems.append(
            errors.FieldError(total_field, f"{total!r} is not a whole number of pods above 0")
        )
    return problems


def membership(pod: Body, *, honor_kueue: bool = False) -> Membership | None:
    """The group a pod belongs to (None when its group metadata is invalid)."""
    if metadata_problems(pod, honor_kueue=honor_kueue):
        return None
    group = group_name(pod, honor_kueue=honor_kueue)
    if group is None:
        return Membership(str(bodies.meta(pod).get("name") or ""), 1, grouped=False)
    total = int(str(bodies.annotations_of(pod)[total_key_of(pod, honor_kueue=honor_kueue)]))
    return Membership(group, total, grouped=True)


def controlled(pod: Body) -> bool:
    """Tell whether a controller owns the pod (a Job's pods, a ReplicaSet's): not a member."""
    return bodies.controller(pod) is not None


def is_member(pod: Body) -> bool:
    """Tell whether the Pod webhook made this pod a member (Berth's label on it)."""
    return bodies.labels_of(pod).get(MANAGED_LABEL) == "true" and not controlled(pod)


def group_uid(namespace: str, name: str) -> str:
    """The uid Berth gives a group: its own, since members come and go (a label value)."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()
    return f"{_UID_PREFIX}{digest[:24]}"


def is_gated(pod: Body) -> bool:
    """Tell whether Berth's scheduling gate still holds the pod."""
    gates = spec_of(pod).get("schedulingGates")
    return any(
        isinstance(g, dict) and g.get("name") == GATE
        for g in (gates if isinstance(gates, list) else [])
    )


def is_terminated(pod: Body) -> bool:
    """Succeeded or Failed."""
    return _phase(pod) in {"Succeeded", "Failed"}


def is_runnable(pod: Body) -> bool:
    """Not failed, and not deleted before it was bound (Kueue's ``isPodRunnableOrSucceeded``)."""
    if bodies.meta(pod).get("deletionTimestamp") and not spec_of(pod).get("nodeName"):
        return False
    return _phase(pod) != "Failed"


def _deleted_at(pod: Body) -> bool:
    return bool(bodies.meta(pod).get("deletionTimestamp"))


def _created(pod: Body) -> str:
    return str(bodies.meta(pod).get("creationTimestamp") or "")


def _finalized(pod: Body) -> bool:
    finalizers = bodies.meta(pod).get("finalizers")
    return isinstance(finalizers, list) and FINALIZER in finalizers


def ordered(pods: Iterable[Body]) -> list[Body]:
    """Pods in the order Kueue keeps them (``sortActivePods``), the name last.

    1. with Berth's finalizer first; 2. started (not gated) first; 3. older first; 4. by name.
    """
    return sorted(
        pods,
        key=lambda p: (
            not _finalized(p),
            is_gated(p),
            _created(p),
            str(bodies.meta(p).get("name") or ""),
        ),
    )


def group_body(namespace: str, name: str, pods: Iterable[Body]) -> Body:
    """A group as one job: its pods in Kueue's order, the first one's labels and annotations."""
    members = ordered(pods)
    first = members[0] if members else {}
    meta = bodies.meta(first)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": group_uid(namespace, name),
            "labels": dict(bodies.labels_of(first)),
            "annotations": dict(bodies.annotations_of(first)),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "pods": members,
    }


def pods(group: Body) -> list[Body]:
    """A group's pods, in Kueue's order."""
    found = group.get("pods")
    return [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def total(group: Body, *, honor_kueue: bool = False) -> int:
    """The group's size, as its first runnable member says (1 when none says it well)."""
    for pod in pods(group):
        if is_runnable(pod):
            found = membership(pod, honor_kueue=honor_kueue)
            return 1 if found is None else found.total
    return 1


def runnable(group: Body) -> list[Body]:
    """The runnable members, in order."""
    return [p for p in pods(group) if is_runnable(p)]


def missing(group: Body, *, honor_kueue: bool = False) -> int:
    """How many more runnable members the group needs before its Workload is made."""
    return max(0, total(group, honor_kueue=honor_kueue) - len(runnable(group)))


def excess(group: Body, *, honor_kueue: bool = False) -> list[Body]:
    """Runnable members beyond the group's size (the last in order): they are deleted."""
    return runnable(group)[total(group, honor_kueue=honor_kueue) :]


def is_unretriable(group: Body, *, honor_kueue: bool = False) -> bool:
    """Tell whether any member says the group may not be retried."""
    return any(
        read_key(
            bodies.annotations_of(p), RETRIABLE_ANNOTATION, KUEUE_RETRIABLE_ANNOTATION, honor_kueue
        )
        == "false"
        for p in pods(group)
    )


# Roles and pod sets -----------------------------------------------------------------------------


def _requests(resources: Any) -> dict[str, str]:  # noqa: ANN401 - a JSON value
    """Requests in one spelling each (``1000m`` and ``1`` are one role)."""
    out = {}
    for name, value in _map(_map(resources).get("requests")).items():
        try:
            out[str(name)] = str(quantity.parse(str(name), value))
        except quantity.QuantityError:
            out[str(name)] = str(value)
    return out


def _containers(value: Any) -> list[Body]:  # noqa: ANN401 - a JSON value
    items = value if isinstance(value, list) else []
    return [
        {"requests": _requests(_map(c).get("resources")), "ports": _map(c).get("ports")}
        for c in items
    ]


def role_hash(spec: Body) -> str:
    """8 hex characters of the SHA-256 of the fields Kueue's ``SpecShape`` reads.

    The same fields as Kueue's role hash, in sorted JSON: the values differ from Kueue's.
    """
    shape: Body = {
        "initContainers": _containers(spec.get("initContainers")),
        "containers": _containers(spec.get("containers")),
        **{
            field: spec.get(field)
            for field in (
                "nodeSelector",
                "affinity",
                "tolerations",
                "runtimeClassName",
                "priority",
                "topologySpreadConstraints",
                "overhead",
                "resourceClaims",
            )
        },
    }
    if isinstance(spec.get("resources"), dict):
        shape["resources"] = _requests(spec["resources"])
    text = json.dumps({"spec": shape}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def role_of(pod: Body) -> str:
    """A member's role: as the webhook recorded it, else hashed from its spec now."""
    recorded = bodies.annotations_of(pod).get(ROLE_ANNOTATION)
    return str(recorded) if recorded else role_hash(spec_of(pod))


def _template(pod: Body) -> Body:
    """A member's spec as a pod set template, without Berth's gate."""
    spec = {k: v for k, v in spec_of(pod).items() if k not in {"nodeName", "schedulingGates"}}
    gates = [
        g
        for g in spec_of(pod).get("schedulingGates") or []
        if isinstance(g, dict) and g.get("name") != GATE
    ]
    if gates:
        spec["schedulingGates"] = gates
    return {"spec": spec}


def pod_sets(group: Body, *, honor_kueue: bool = False) -> list[Body]:
    """One pod set per role of the group's first ``total`` runnable members, sorted by role."""
    found: dict[str, Body] = {}
    for pod in runnable(group)[: total(group, honor_kueue=honor_kueue)]:
        role = role_of(pod)
        if role in found:
            found[role]["count"] += 1
        else:
            found[role] = {"name": role, "count": 1, "template": _template(pod)}
    return [found[role] for role in sorted(found)]


def consistency_problems(group: Body, *, honor_kueue: bool = False) -> list[errors.FieldError]:
    """Members that disagree on the group's queue or size (each names the pod)."""
    problems: list[errors.FieldError] = []
    members = [p for p in pods(group) if _phase(p) != "Failed"]
    if not members:
        return problems
    first = members[0]
    queue = labelled.queue_name(first, honor_kueue=honor_kueue)
    size = membership(first, honor_kueue=honor_kueue)
    for pod in members:
        name = bodies.meta(pod).get("name")
        problems += [
            errors.FieldError(f"pods[{name}].{p.path}", p.message)
            for p in metadata_problems(pod, honor_kueue=honor_kueue)
        ]
        if labelled.queue_name(pod, honor_kueue=honor_kueue) != queue:
            problems.append(
                errors.FieldError(
                    f"pods[{name}].metadata.labels[{QUEUE_LABEL}]",
                    f"names LocalQueue {labelled.queue_name(pod, honor_kueue=honor_kueue)!r}, "
                    f"another member {queue!r}: a group has one queue",
                )
            )
        mine = membership(pod, honor_kueue=honor_kueue)
        if size is not None and mine is not None and mine.total != size.total:
            problems.append(
                errors.FieldError(
                    f"pods[{name}].metadata.annotations[{TOTAL_ANNOTATION}]",
                    f"says {mine.total} pods, another member {size.total}: a group has one size",
                )
            )
    return problems


def to_workload(
    group: Body, *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """The group's Workload (named after the group, as Kueue names it), or why not yet."""
    problems = consistency_problems(group, honor_kueue=honor_kueue)
    if problems:
        return None, problems
    short = missing(group, honor_kueue=honor_kueue)
    if short:
        return None, [
            errors.FieldError(
                f"metadata.annotations[{TOTAL_ANNOTATION}]",
                f"the group waits for {short} more runnable pod(s)",
            )
        ]
    sets = pod_sets(group, honor_kueue=honor_kueue)
    first = runnable(group)[0]
    grouped = group_name(first, honor_kueue=honor_kueue) is not None
    name = str(bodies.meta(group).get("name") or "")
    return workload_body.build_workload(
        group,
        uid=uid,
        pod_sets=sets,
        honor_kueue=honor_kueue,
        role=lambda i: (None, f"spec (of the members of role {sets[i]['name']})"),
        kind=KIND,
        group="",
        name=name if grouped else None,
        labels={WORKLOAD_LABEL: name},
    )


# Status -----------------------------------------------------------------------------------------


def finished(group: Body, *, honor_kueue: bool = False) -> tuple[bool, bool]:
    """Tell whether the group finished and whether it succeeded.

    Succeeded: ``total`` members succeeded. Failed: none runs any more and one member says the
    group may not be retried.
    """
    members = pods(group)
    succeeded = sum(_phase(p) == "Succeeded" for p in members)
    size = total(group, honor_kueue=honor_kueue)
    if members and succeeded >= size:
        return True, True
    if (
        members
        and is_unretriable(group, honor_kueue=honor_kueue)
        and all(is_terminated(p) for p in members)
    ):
        return True, False
    return False, False


def _ready(pod: Body) -> bool:
    for c in _map(pod.get("status")).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def pods_ready(group: Body, count: int) -> bool:
    """Tell whether ``count`` members are ready or succeeded (as a Job's ready + succeeded)."""
    return sum(_ready(p) or _phase(p) == "Succeeded" for p in pods(group)) >= count


def active_pods(group: Body) -> int:
    """Members bound to a node that have not finished (running, or still terminating)."""
    return sum(bool(spec_of(p).get("nodeName")) and not is_terminated(p) for p in pods(group))


def is_suspended(group: Body, *, honor_kueue: bool = False) -> bool:
    """Tell whether a member that counts (one of the first ``total`` runnable) is still gated.

    A group with no such member is suspended too.
    """
    counted = runnable(group)[: total(group, honor_kueue=honor_kueue)]
    return not counted or any(is_gated(p) for p in counted)


# Writes -----------------------------------------------------------------------------------------


def start_patch(
    pod: Body,
    *,
    pod_set: str,
    flavors: list[podsets.FlavorPlacement],
    pinned: dict[str, str] | None = None,
) -> Body:
    """The strategic merge patch that starts a gated member on its pod set's flavors.

    Berth's gate goes; the pod set's label, the flavors' node labels and tolerations are added
    (``podsets.placed``), and with a topology placement the node labels of its domain
    (``pinned``) and the ``berth.dev/tas`` label. Tolerations have no merge key, so the list is
    sent whole.
    """
    labels, selector, tolerations = podsets.placed(_template(pod), pod_set=pod_set, flavors=flavors)
    selector.update(pinned or {})
    spec: Body = {"schedulingGates": [{"$patch": "delete", "name": GATE}]}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    added = {POD_SET_LABEL: labels[POD_SET_LABEL]}
    if api_topology.PLACED_LABEL in labels:
        added[api_topology.PLACED_LABEL] = labels[api_topology.PLACED_LABEL]
    return {"metadata": {"labels": added}, "spec": spec}


def owner_references(group: Body) -> list[Body]:
    """Every member not being deleted as an owner of the group's Workload, none its controller.

    The garbage collector deletes the Workload once its last owner is gone, as Kueue's group
    Workloads; no member controls it (``berth.dev/job-uid`` names the group instead).
    """
    return [
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": bodies.meta(p).get("name"),
            "uid": bodies.meta(p).get("uid"),
        }
        for p in pods(group)
        if bodies.meta(p).get("uid") and not _deleted_at(p)
    ]


def owners(group: Body, current: Any) -> list[Body] | None:  # noqa: ANN401 - a JSON value
    """The Workload's owners with the members it lacks added (None: it lacks none)."""
    have = [r for r in (current if isinstance(current, list) else []) if isinstance(r, dict)]
    known = {r.get("uid") for r in have}
    added = [r for r in owner_references(group) if r["uid"] not in known]
    return [*have, *added] if added else None


DROP_FINALIZER: Body = {"metadata": {"$deleteFromPrimitiveList/finalizers": [FINALIZER]}}
"""The strategic merge patch that takes Berth's finalizer off a member."""


def to_stop(group: Body) -> list[Body]:
    """Members to delete when the group is evicted: those started and not finished."""
    return [
        p
        for p in pods(group)
        if not is_gated(p) and not is_terminated(p) and not bodies.meta(p).get("deletionTimestamp")
    ]


def finalizers_of(pod: Body) -> list[Any]:
    """A pod's finalizers."""
    found = bodies.meta(pod).get("finalizers")
    return found if isinstance(found, list) else []


def finalizer_drops(
    group: Body, *, finished_workload: bool, honor_kueue: bool = False
) -> list[Body]:
    """Members whose Berth finalizer may go now.

    Every member once the group's Workload finished; a deleted member that did not succeed
    (its result counts for nothing); a failed member once the group has ``total`` runnable
    members again (replaced, as Kueue's ``finalizePods``), unless the group may not be retried.
    """
    members = [p for p in pods(group) if _finalized(p)]
    if finished_workload:
        return members
    replaced = not missing(group, honor_kueue=honor_kueue)
    unretriable = is_unretriable(group, honor_kueue=honor_kueue)
    return [
        p
        for p in members
        if (_deleted_at(p) and _phase(p) != "Succeeded")
        or (_phase(p) == "Failed" and replaced and not unretriable)
    ]


# Webhooks ---------------------------------------------------------------------------------------
