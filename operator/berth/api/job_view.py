"""A read-only, typed view of a job's identity, beside ``workload_view`` for Workloads.

Any job kind Berth integrates (a Job, a JobSet, a training job, a RayCluster, a pod group as
assembled) is kept as the API server sent it; what every driver asks of one alike is its
identity: kind, namespace, name and uid (``key``), its labels and annotations, its controller
(``ownerReferences`` with ``controller: true``) and whether it is being deleted. The kind's own
fields (pod sets, suspension, status) are its integration's (``berth.jobs``). Nothing here
writes. Used by the operator's job index and job controller.
"""

from __future__ import annotations

from berth.api import bodies, names
from berth.api.bodies import Body


class JobView:
    """A stored job body, read through typed properties."""

    __slots__ = ("body", "kind")

    def __init__(self, body: Body, kind: str | None = None) -> None:
        """``kind``: the integrated kind it is known by (default: its ``kind`` field)."""
        self.body = body
        self.kind = kind if kind is not None else bodies.kind(body)

    @property
    def key(self) -> names.JobKey:
        """Kind, namespace and name."""
        return names.JobKey(self.kind, self.namespace, self.name)

    @property
    def namespace(self) -> str:
        """``metadata.namespace``."""
        return bodies.namespace(self.body)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return bodies.name(self.body)

    @property
    def uid(self) -> str:
        """``metadata.uid``."""
        return bodies.uid(self.body)

    @property
    def labels(self) -> dict[str, str]:
        """A copy of ``metadata.labels``."""
        return bodies.labels_of(self.body)

    @property
    def annotations(self) -> dict[str, str]:
        """A copy of ``metadata.annotations``."""
        return bodies.annotations_of(self.body)

    @property
    def controller(self) -> bodies.OwnerReference | None:
        """The owner reference marked as its controller, if any."""
        return bodies.controller(self.body)

    @property
    def deleting(self) -> bool:
        """Tell whether it is being deleted."""
        return bodies.deleting(self.body)
