"""History rows as plain values, and the port that takes them.

A ``Record`` is one workload transition (queued, admitted, evicted, preempted, requeued,
finished, deactivated, deleted) with its queues, priority, flavors and resources; ``t`` is in
seconds since the run started. A ``QuotaRow`` is one cell of a ClusterQueue's quota from time
``t`` on. ``RecordSink`` is what producers write to: the simulator's buffer or the operator's
asynchronous writer. Used by ``berth.sim.observe``, ``store``, ``writer`` and ``figures``.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Protocol

from berth.core import workload
from berth.state import cache as cache_mod


class EventKind(enum.StrEnum):
    """The transitions the store keeps."""

    QUEUED = "Queued"
    ADMITTED = "Admitted"
    EVICTED = "Evicted"
    PREEMPTED = "Preempted"
    REQUEUED = "Requeued"
    FINISHED = "Finished"
    DEACTIVATED = "Deactivated"
    DELETED = "Deleted"


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """One workload transition."""

    t: float
    kind: EventKind
    workload: str
    uid: str
    job: str | None
    namespace: str
    local_queue: str
    cluster_queue: str
    priority: int
    priority_class: str | None
    reason: str = ""
    message: str = ""
    by: str | None = None
    """Preempted: the preemptor's workload."""
    flavors: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    """Pod set -> resource -> flavor of the admission concerned."""
    resources: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    """Flavor -> resource -> amount (canonical units) the admission counts against."""
    wait_seconds: float | None = None
    """Admitted: time since it was queued (its queue-order time)."""


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaRow:
    """One cell of a ClusterQueue's quota, in force from ``t`` until the next rows."""

    t: float
    cluster_queue: str
    cohort: str | None
    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


class RecordSink(Protocol):
    """Where producers put history; it must never block them."""

    def submit(self, record: Record) -> None:
        """Take one transition."""

    def quotas(self, t: float, rows: list[QuotaRow]) -> None:
        """Take the whole quota table as it is from ``t`` on."""

    def end(self, t: float) -> None:
        """Note that the run ends at ``t``."""


def flavors_of(admission: workload.Admission) -> dict[str, dict[str, str]]:
    """The flavor of every resource of every pod set of an admission."""
    return {ps.name: {str(r): str(f) for r, f in ps.flavors.items()} for ps in admission.pod_sets}


def usage_of(admission: workload.Admission) -> dict[str, dict[str, int]]:
    """What an admission counts against, per flavor and resource."""
    out: dict[str, dict[str, int]] = {}
    for fr in sorted(admission.usage):
        out.setdefault(fr.flavor, {})[fr.resource] = admission.usage[fr]
    return out


def quota_rows(cache: cache_mod.Cache, t: float = 0.0) -> list[QuotaRow]:
    """The quota table of every ClusterQueue in the cache."""
    snap = cache.snapshot
    rows: list[QuotaRow] = []
    for name in sorted(snap.cluster_queues):
        info = snap.cluster_queues[name]
        node = snap.cq_nodes[name]
        rows.extend(
            QuotaRow(
                t=t,
                cluster_queue=name,
                cohort=info.cohort,
                flavor=fr.flavor,
                resource=fr.resource,
                nominal=q.nominal,
                borrowing_limit=q.borrowing_limit,
                lending_limit=q.lending_limit,
            )
            for fr, q in sorted(node.quotas.items())
        )
    return rows
