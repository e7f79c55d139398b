"""The priority classes known now: WorkloadPriorityClasses, PriorityClasses and the default.

Both drivers keep one ``Registry``: the simulator from its documents, the operator from watch
events. A WorkloadPriorityClass whose value changes makes Kueue's controller rewrite the priority
of every Workload naming it; ``set_workload_class`` tells the caller so. ``classes`` hands the
core (``core.priority.resolve``) a consistent copy.
"""

from __future__ import annotations

from berth.core import priority


class Registry:
    """Priority class values by name, and the PriorityClass marked ``globalDefault``."""

    def __init__(self) -> None:
        self.workload_classes: dict[str, int] = {}
        self.pod_classes: dict[str, int] = {}
        self.global_default: str | None = None

    def set_workload_class(self, name: str, value: int) -> bool:
        """Add or change a WorkloadPriorityClass; tell whether a known value changed."""
        old = self.workload_classes.get(name)
        self.workload_classes[name] = value
        return old is not None and old != value

    def drop_workload_class(self, name: str) -> None:
        """Forget a WorkloadPriorityClass."""
        self.workload_classes.pop(name, None)

    def set_pod_class(self, name: str, value: int, *, global_default: bool) -> None:
        """Add or change a PriorityClass (the default class when ``global_default``)."""
        self.pod_classes[name] = value
        if global_default:
            self.global_default = name

    def drop_pod_class(self, name: str) -> None:
        """Forget a PriorityClass (and the default, if it was the default)."""
        self.pod_classes.pop(name, None)
        if self.global_default == name:
            self.global_default = None

    def classes(self) -> priority.PriorityClasses:
        """A copy of what is known now, for ``core.priority.resolve``."""
        return priority.PriorityClasses(
            dict(self.workload_classes), dict(self.pod_classes), self.global_default
        )
