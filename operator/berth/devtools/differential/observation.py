"""What one scheduler was seen to decide at each quiescent point of a case.

Both drivers (``berth_run``, ``kueue_run``) reduce a run to a `Trace`: one `Point` per step (and
one for the setup, step 0), holding the workloads admitted at that point (ClusterQueue, and per
pod set its count and flavor per resource), the preemptions made while reaching it (victim,
reason, preemptor) and the pending reason and message of each pending workload whose scheduler
gave one.
Names are the case's own, without the prefix a driver used. ``compare`` reads two traces.
"""

from __future__ import annotations

import dataclasses

PodSetAdmission = tuple[str, int, tuple[tuple[str, str], ...]]
"""(pod set, count, ((resource, flavor), ...) sorted by resource)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Admission:
    """Where a workload is admitted."""

    cluster_queue: str
    pod_sets: tuple[PodSetAdmission, ...]

    def __str__(self) -> str:
        sets = ", ".join(
            f"{name}x{count} on {'/'.join(f for _, f in flavors)}"
            for name, count, flavors in self.pod_sets
        )
        return f"{self.cluster_queue}[{sets}]"


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Preemption:
    """One eviction by preemption."""

    victim: str
    reason: str
    """InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing, ..."""
    preemptor: str

    def __str__(self) -> str:
        return f"{self.victim} by {self.preemptor} ({self.reason})"


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    """The state once a step has settled."""

    admitted: dict[str, Admission]
    preemptions: tuple[Preemption, ...]
    """Sorted, so two sides compare as multisets."""
    pending_reasons: dict[str, str]
    pending_messages: dict[str, str] = dataclasses.field(default_factory=dict)
    """The message of each pending workload's last scheduling attempt, where one was made."""


@dataclasses.dataclass(frozen=True, slots=True)
class Trace:
    """One run of a case: a point per step, step 0 the setup; ``error`` if the run failed."""

    points: tuple[Point, ...]
    error: str | None = None
