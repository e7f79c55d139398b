"""What an update of a Workload's spec may change: the rules the Workload webhook applies.

Needed because Kueue's ``workload-editor`` role lets a user update Workloads: without these a
low-priority Workload could raise its own priority and never be preempted, or grow its pod sets
while admitted. ``refusals(old, new, class_values)`` returns every rule broken:

1. **While quota is reserved** (``status.admission`` set) ``spec.podSets`` and
   ``spec.queueName`` are immutable — Kueue's ``pkg/webhooks/workload_webhook.go``
   (``ValidateWorkloadUpdate``: pod sets, queue name and priority class source/name are immutable
   while the workload has a quota reservation).
2. **Priority only through its class** — ``spec.priority`` and ``spec.priorityClassRef`` never
   change by hand. Two changes are allowed:
   - ``spec.priority`` becoming the current value of the WorkloadPriorityClass it names (what
     Kueue's WorkloadPriorityClass controller, and Berth's lifecycle task, write when the class's
     value changes);
   - ``spec.priorityClassRef`` becoming the WorkloadPriorityClass the owning Job's
     ``berth.dev/priority-class`` label names now, with that class's value (what the job
     controller writes when the label changes, as Kueue's job reconciler updates the Workload's
     priority).

   Stricter than Kueue, which lets a priority-class-less Workload's priority change:
   docs/scheduling.md says why.
3. **A child Job's Workload stays held** — the ``berth.dev/unsupported-owner`` label, which keeps
   the Workload of a Job controlled by a kind Berth does not integrate out of every queue, may not
   be removed or changed.
4. **The priority boost only from a named controller** — ``berth.dev/priority-boost``
   (KEP-7990) may be set, changed or removed, at creation or later, only by a request whose user
   or one of whose groups the Configuration lists in ``priorityBoost.setters`` (``boost_refusals``).
   Kueue leaves this to RBAC on Workloads; Berth also names who may, since rule 2 keeps every
   other Workload editor from changing a priority.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from berth.api import bodies, errors, labels, workload
from berth.api.bodies import Body


def _class_ref(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec.get("priorityClassRef") or {}


def refusals(
    old: Body, new: Body, class_values: Mapping[str, int], job_class: str | None = None
) -> list[errors.FieldError]:
    """Every rule the update ``old`` → ``new`` breaks (empty: allowed).

    ``job_class`` is the WorkloadPriorityClass the Workload's Job names now, if it has a Job.
    """
    out: list[errors.FieldError] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    meta = bodies.meta(new)
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    if (old.get("status") or {}).get("admission"):
        out.extend(
            errors.FieldError(
                f"spec.{field}",
                f"Workload {name} holds quota: its {field} cannot change until it is "
                "finished or evicted",
            )
            for field in ("podSets", "queueName")
            if old_spec.get(field) != new_spec.get(field)
        )
    new_ref = _class_ref(new_spec)
    follows_job = (
        job_class is not None
        and new_ref.get("kind") == "WorkloadPriorityClass"
        and new_ref.get("name") == job_class
    )
    if _class_ref(old_spec) != new_ref and not follows_job:
        out.append(
            errors.FieldError(
                "spec.priorityClassRef",
                f"Workload {name}: the priority class is set when the Workload is made; "
                "resubmit the job with another class",
            )
        )
    if old_spec.get("priority") != new_spec.get("priority") or (
        follows_job and _class_ref(old_spec) != new_ref
    ):
        ref = new_ref
        current = (
            class_values.get(str(ref.get("name")))
            if ref.get("kind") == "WorkloadPriorityClass"
            else None
        )
        if current is None or new_spec.get("priority") != current:
            out.append(
                errors.FieldError(
                    "spec.priority",
                    f"Workload {name}: the priority follows its WorkloadPriorityClass and is "
                    "never set by hand"
                    + (f" (the class's value is {current})" if current is not None else ""),
                )
            )
    label = labels.UNSUPPORTED_OWNER_LABEL
    old_labels = bodies.labels_of(old)
    new_labels = meta.get("labels") or {}
    if label in old_labels and old_labels.get(label) != new_labels.get(label):
        out.append(
            errors.FieldError(
                f"metadata.labels[{label}]",
                f"Workload {name} belongs to a Job of a kind Berth does not integrate yet; "
                "the label keeps it from being admitted alone and cannot change",
            )
        )
    return out


def boost_refusals(
    old: Body | None, new: Body, user: Mapping[str, Any], setters: Sequence[str]
) -> list[errors.FieldError]:
    """Rule 4: a change of the boost by ``user`` (a review's ``userInfo``) not among ``setters``.

    ``old`` is None for a creation.
    """
    name = workload.PRIORITY_BOOST_ANNOTATION
    before = None if old is None else bodies.annotations_of(old).get(name)
    if bodies.annotations_of(new).get(name) == before:
        return []
    if requested_by(user, setters):
        return []
    return [
        errors.FieldError(
            f"metadata.annotations[{name}]",
            f"only a controller named in the Configuration's priorityBoost.setters may set it, "
            f"and {user.get('username') or 'this user'} is not; ask an admin to add it there",
        )
    ]


def requested_by(user: Mapping[str, Any], setters: Sequence[str]) -> bool:
    """Tell whether a review's ``userInfo`` names one of ``setters`` (a user or a group)."""
    who = {str(user.get("username") or ""), *(str(g) for g in user.get("groups") or [])}
    return bool(who & set(setters))
