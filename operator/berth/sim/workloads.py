"""A workload's life in the simulation: its phase, its timers' token and what observers read.

``SimWorkload`` is the simulator's record of one workload (``engine.Simulator.workloads``);
``saved_by`` is the checkpoint model (the engine's, and the trace benchmark's count of lost work);
events (``events``), the summary (``summary``), the text outputs (``output``) and the observers
(``observe``) read it.
"""

from __future__ import annotations

import dataclasses
import enum

from berth.api import conditions, names
from berth.core import workload


class Phase(enum.StrEnum):
    """Where a workload stands in the simulation."""

    PENDING = "pending"
    ADMITTED = "admitted"
    FINISHED = "finished"
    DEACTIVATED = "deactivated"
    DELETED = "deleted"


@dataclasses.dataclass(slots=True)
class SimWorkload:
    """A workload's life in the simulation."""

    info: workload.WorkloadInfo
    job: names.WorkloadKey | None
    duration: float | None
    ready_after: float | None
    state: Phase = Phase.PENDING
    token: int = 0
    """Bumped at every admission and eviction: a timer set under an older token is stale."""
    ready: bool = False
    admitted_at: float | None = None
    reason: str = ""
    message: str = ""
    requeue_count: int = 0
    stopped_by: conditions.EvictionReason | None = None
    """``ClusterQueueStopped`` or ``LocalQueueStopped`` while drained by a stop policy."""
    waited: list[float] = dataclasses.field(default_factory=list)
    """Each admission's wait: from its creation, or from its latest requeue (Kueue's
    ``QueuedWaitTime``: the Requeued condition's transition time when it has one)."""
    requeued_at: float | None = None
    class_kind: str | None = None
    """Kind of the priority class its priority came from: WorkloadPriorityClass or PriorityClass."""
    admission: workload.Admission | None = None
    """Its latest admission (kept after it ends, for observers)."""
    estimated_start: float | None = None
    """When its reservation was first estimated to start in this wait (Backfill queues)."""
    held_until: tuple[float | None, float | None] = (None, None)
    """When the protection and the budget that last kept its preemption back let it go (each
    told once)."""
    start_errors: list[float] = dataclasses.field(default_factory=list)
    """Each admission's start minus the start first estimated for it (Backfill queues)."""
    checkpoint_every: float | None = None
    """How often it saves a checkpoint while it runs (``sim.berth.dev/checkpoint-every``)."""
    saved: float = 0.0
    """The work its checkpoints saved, in seconds of run: an eviction loses only what came after,
    and its next run resumes from there."""

    @property
    def remaining(self) -> float | None:
        """How long its next run lasts (None: until the end)."""
        return None if self.duration is None else self.duration - self.saved


def saved_by(ran: float, every: float | None) -> float:
    """The part of a run of ``ran`` seconds that checkpoints every ``every`` seconds saved."""
    if every is None or every <= 0:
        return 0.0
    return (ran // every) * every
