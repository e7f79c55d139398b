"""Typed identifiers for the objects Berth schedules, and the workload key.

Used across every layer so that a ClusterQueue name cannot be passed where a flavor name is
expected. ``WorkloadKey`` identifies a namespaced object as ``namespace/name``, ``JobKey`` a job
of any integrated kind.
"""

from __future__ import annotations

import dataclasses
from typing import NewType

ClusterQueueName = NewType("ClusterQueueName", str)
CohortName = NewType("CohortName", str)
FlavorName = NewType("FlavorName", str)
ResourceName = NewType("ResourceName", str)
LocalQueueName = NewType("LocalQueueName", str)
PriorityClassName = NewType("PriorityClassName", str)
PodSetName = NewType("PodSetName", str)


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class WorkloadKey:
    """The namespace and name of a namespaced object; prints as ``namespace/name``."""

    namespace: str
    name: str
    _hash: int = dataclasses.field(init=False, repr=False, compare=False)
    """Kept: the queues and the cache look keys up millions of times in a long replay."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.namespace, self.name)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[WorkloadKey], tuple[str, str]]:
        # Pickled by its fields only: a string's hash differs from one process to the next.
        return (WorkloadKey, (self.namespace, self.name))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> WorkloadKey:
        """Parse ``namespace/name``; a bare name lands in the ``default`` namespace."""
        namespace, sep, name = text.partition("/")
        if not sep:
            return cls("default", namespace)
        return cls(namespace, name)


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class JobKey:
    """A job of any integrated kind: its kind, namespace and name; prints as ``Kind ns/name``."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def object_key(self) -> WorkloadKey:
        """Its namespace and name."""
        return WorkloadKey(self.namespace, self.name)
