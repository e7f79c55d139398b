"""Priority resolution: the priority a workload gets when it is created, and from which class.

Order, as in Kueue: for a job, the WorkloadPriorityClass named by its ``berth.dev/priority-class``
label; else the PriorityClass named by the pod template's ``priorityClassName``; else the
PriorityClass marked ``globalDefault``; else 0. A Workload created directly has its own
``spec.priority`` (0 if unset; its ``priorityClassRef``'s value when only that is given). When a
WorkloadPriorityClass's value changes, Kueue rewrites the priority of every Workload naming it;
the callers do that with the value ``resolve`` returns. Called by the simulator and the
operator's job integration.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class PriorityClasses:
    """Known priority classes: WorkloadPriorityClasses and Kubernetes PriorityClasses."""

    workload_classes: dict[str, int] = dataclasses.field(default_factory=dict)
    pod_classes: dict[str, int] = dataclasses.field(default_factory=dict)
    global_default: str | None = None


class UnknownPriorityClassError(LookupError):
    """A workload names a priority class that does not exist."""


@dataclasses.dataclass(frozen=True, slots=True)
class Resolved:
    """A resolved priority and the class it came from (None for the default 0)."""

    value: int
    class_name: str | None
    class_kind: str | None


def resolve(
    classes: PriorityClasses,
    *,
    workload_class: str | None = None,
    pod_class: str | None = None,
    explicit: int | None = None,
    use_global_default: bool = True,
) -> Resolved:
    """Resolve a priority; raise ``UnknownPriorityClassError`` for a class that is not defined."""
    if workload_class is not None:
        if workload_class not in classes.workload_classes:
            raise UnknownPriorityClassError(f"WorkloadPriorityClass {workload_class} not found")
        value = classes.workload_classes[workload_class]
        return Resolved(
            value if explicit is None else explicit, workload_class, "WorkloadPriorityClass"
        )
    if pod_class is not None:
        if pod_class not in classes.pod_classes:
            raise UnknownPriorityClassError(f"PriorityClass {pod_class} not found")
        value = classes.pod_classes[pod_class]
        return Resolved(value if explicit is None else explicit, pod_class, "PriorityClass")
    if explicit is not None:
        return Resolved(explicit, None, None)
    if use_global_default and classes.global_default is not None:
        name = classes.global_default
        return Resolved(classes.pod_classes[name], name, "PriorityClass")
    return Resolved(0, None, None)
