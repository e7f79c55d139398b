"""The Workload a job makes, and how each admitted pod set runs.

``build_workload`` turns a kind's pod sets into a Workload named as Kueue names it; ``new_workload``
resolves its priority and ``NewWorkload.body`` is the body to create, owned by the job;
``originals`` are the pod sets as a Workload recorded them and ``runs`` how an admission runs
each. The queue and priority-class labels every kind reads alike are here too. Used by every
kind, the simulator and the operator's job controller.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from berth.api import base, bodies, duration, errors, kinds, names, resourceflavor, workload
from berth.api import topology as api_topology
from berth.api.bodies import Body
from berth.api.labels import JOB_UID_LABEL, UNSUPPORTED_OWNER_LABEL
from berth.core import priority, topology
from berth.jobs.framework import labelled, podsets, protocol
from berth.jobs.framework.protocol import Integration, PodSetOriginal, PodSetRun

_MAX_NAME = 253
_HASH = 5
_BOOSTS = (workload.PRIORITY_BOOST_ANNOTATION, workload.KUEUE_PRIORITY_BOOST_ANNOTATION)
"""Refused on a job: its submitter would set its own priority (Kueue keeps KEP-7990's boost on
Workloads only for the same reason)."""


def workload_name(job_name: str, job_uid: str, *, kind: str = "Job", group: str = "batch") -> str:
    """The Workload name for a job: ``<kind>-<name>-<hash>``, at most 253 characters.

    Kueue's ``jobframework.GetWorkloadNameForOwnerWithGVK``: the lower-cased kind and the job's
    name, then 5 hex characters of the SHA-1 of kind, group, name and uid.
    """
    digest = hashlib.sha1(  # noqa: S324 - a name suffix, not a security hash
        f"{kind}\n{group}\n{job_name}\n{job_uid}".encode()
    ).hexdigest()
    prefix = f"{kind.lower()}-{job_name}"[: _MAX_NAME - 1 - _HASH]
    return f"{prefix}-{digest[:_HASH]}"


def deadline(spec: dict[str, Any]) -> float | None:
    """A job's ``activeDeadlineSeconds`` (its controller's hard runtime bound), if positive.

    One longer than any duration (``duration.LONGEST``, about 292 years) bounds nothing a plan
    could use and could not be written as one: the job has none.
    """
    value = spec.get("activeDeadlineSeconds")
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= duration.LONGEST:
        return float(value)
    return None


RolePaths = Callable[[int], tuple[str | None, str]]
"""Where pod set ``i`` lives in its job: the role's path (None: leave other paths as they are)
and its pod template's path. Errors are named in the job's own terms."""


def build_workload(
    job: dict[str, Any],
    *,
    uid: str,
    pod_sets: Sequence[dict[str, Any]],
    honor_kueue: bool,
    role: RolePaths,
    kind: str = "Job",
    group: str = "batch",
    runtime_limit: float | None = None,
    name: str | None = None,
    labels: dict[str, str] | None = None,
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """The Workload of a job of any kind from its pod sets, or the field errors that prevent it.

    Named as Kueue names it (``workload_name``, unless ``name`` is given), owned by nothing yet
    (``jobs.registry`` adds the owner), labelled with the job's uid (and ``labels``), in the
    job's LocalQueue. The job's
    ``berth.dev/expected-runtime`` annotation is copied and its hard ``runtime_limit`` written
    as ``berth.dev/runtime-limit``, for the Backfill strategy's estimates; so is its
    ``berth.dev/checkpointed-at``, for the order of preemption victims. A job that carries a
    priority boost is refused.
    """
    meta = bodies.meta(job)
    annotations = meta.get("annotations") or {}
    boosted = [a for a in _BOOSTS if a in annotations]
    if boosted:
        return None, [
            errors.FieldError(
                f"metadata.annotations[{boosted[0]}]",
                "a priority boost is set on the job's Workload, by a controller allowed to patch "
                "Workloads, never on the job; remove it (or ask for a higher priority class)",
            )
        ]
    notes = {
        name: str(annotations[name])
        for name in (workload.EXPECTED_RUNTIME_ANNOTATION, workload.CHECKPOINTED_AT_ANNOTATION)
        if annotations.get(name) is not None
    }
    if runtime_limit is not None:
        notes[workload.RUNTIME_LIMIT_ANNOTATION] = duration.format(runtime_limit)
    doc: dict[str, Any] = {
        "apiVersion": base.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name or workload_name(str(meta.get("name") or ""), uid, kind=kind, group=group),
            "namespace": str(meta.get("namespace") or "default"),
            "labels": {JOB_UID_LABEL: uid, **(labels or {})},
            **({"annotations": notes} if notes else {}),
        },
        "spec": {
            "podSets": list(pod_sets),
            "queueName": labelled.queue_name(job, honor_kueue=honor_kueue),
        },
    }
    obj, problems = kinds.try_load(doc)
    if obj is None or problems:
        return None, [errors.FieldError(_job_path(p.path, role), p.message) for p in problems]
    assert isinstance(obj, workload.Workload)  # noqa: S101 - kinds.try_load returns the kind asked for
    return obj, []


def _job_path(path: str, role: RolePaths) -> str:
    """A Workload field path in the job's terms: pod set i is role i, its template the role's."""
    prefix = "spec.podSets["
    if not path.startswith(prefix):
        return path
    index, _, rest = path[len(prefix) :].partition("]")
    if not index.isdigit():
        return path
    role_path, template_path = role(int(index))
    if rest.startswith(".template"):
        return template_path + rest[len(".template") :]
    return path if role_path is None else role_path + rest


@dataclasses.dataclass(frozen=True, slots=True)
class NewWorkload:
    """A job's Workload as it will be created, with its resolved priority."""

    obj: workload.Workload
    resolved: priority.Resolved

    def body(self, job: Body, integration: Integration, foreign_owner: str | None = None) -> Body:
        """The full body to create: owned by the job, with its priority and class.

        ``foreign_owner`` (``Kind/name``) marks the Workload of a child job controlled by a kind
        Berth does not integrate: it is never queued (``jobs.rules.job_sync``), and the Workload
        webhook keeps the label.
        """
        meta = bodies.meta(job)
        body = self.obj.to_yaml_dict()
        body["metadata"]["ownerReferences"] = (
            integration.owner_references(job)
            if isinstance(integration, protocol.Composed)
            else [
                {
                    "apiVersion": integration.api_version,
                    "kind": integration.kind,
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        )
        body["spec"]["priority"] = self.resolved.value
        if self.resolved.class_name is not None:
            workload_class = self.resolved.class_kind == "WorkloadPriorityClass"
            body["spec"]["priorityClassRef"] = {
                "group": "berth.dev" if workload_class else "scheduling.k8s.io",
                "kind": self.resolved.class_kind,
                "name": self.resolved.class_name,
            }
        if foreign_owner is not None:
            labels = body["metadata"].setdefault("labels", {})
            labels[UNSUPPORTED_OWNER_LABEL] = foreign_owner.split("/")[0]
        return body


def new_workload(
    integration: Integration, job: Body, classes: priority.PriorityClasses, *, uid: str
) -> tuple[NewWorkload | None, list[errors.FieldError]]:
    """A job's Workload and priority, or the field errors that keep it from being made.

    The priority comes from the WorkloadPriorityClass the job names, else the first pod set's
    ``priorityClassName``, else the cluster's default PriorityClass (``core.priority``); a class
    that does not exist is an error on the job's labels.
    """
    obj, problems = integration.to_workload(job, uid=uid)
    if obj is None:
        return None, problems
    try:
        resolved = priority.resolve(
            classes,
            workload_class=integration.priority_class(job),
            pod_class=integration.pod_priority_class(job),
        )
    except priority.UnknownPriorityClassError as err:
        return None, [errors.FieldError("metadata.labels", str(err))]
    return NewWorkload(obj, resolved), []


def originals(pod_sets: list[Body]) -> list[PodSetOriginal]:
    """The pod sets as a Workload recorded them (``spec.podSets``: templates before any start)."""
    return [
        PodSetOriginal(
            str(ps.get("name", "main")), ps.get("template") or {}, int(ps.get("count", 1))
        )
        for ps in pod_sets
    ]


def runs(
    admission: workload.Admission | None,
    flavors: Mapping[names.FlavorName, resourceflavor.ResourceFlavor],
    default_count: int,
    *,
    job_uid: str = "",
) -> list[PodSetRun]:
    """How each admitted pod set runs: its count and its flavors' node labels and tolerations.

    A pod set admitted without a count runs ``default_count`` pods; a flavor deleted since the
    admission adds nothing. A pod set placed by topology also labels its pods with ``job_uid``
    (``berth.dev/tas``): the webhook gates them and the ungater pins each to its domain.
    """
    out = []
    for psa in [] if admission is None else admission.pod_set_assignments:
        placed = topology.from_status(psa.topology_assignment)
        placements = tuple(
            podsets.FlavorPlacement(
                dict(rf.spec.node_labels),
                tuple(t.to_yaml_dict() for t in rf.spec.tolerations),
                ((api_topology.PLACED_LABEL, job_uid),)
                if placed is not None and rf.spec.topology_name is not None
                else (),
            )
            for rf in (flavors.get(name) for name in sorted(set(psa.flavors.values())))
            if rf is not None
        )
        out.append(PodSetRun(psa.name, psa.count or default_count, placements, placed))
    return out
