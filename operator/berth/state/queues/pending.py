"""A pending workload as its queue remembers it, and what it was told with its shape.

``PendingWorkload`` is one queued workload (its ClusterQueue, scan progress, backoff, shape,
order and note); ``Note`` is why a head was not admitted, kept once for the workloads parked
with its shape; ``Told`` names a workload that a shared note told something new. Called by
``queues.groups``, ``queues.cluster_queue``, ``queues.manager`` and their drivers.
"""

from __future__ import annotations

import dataclasses
import typing

from berth.api import names
from berth.core import cycle, ordering, workload
from berth.state.queues.shapes import Shape

Order = tuple[bool, int, float, str]


@dataclasses.dataclass(frozen=True, slots=True)
class Note:
    """Why a head was not admitted, as the workloads of its shape parked with it were told."""

    reason: str
    message: str


class Told(typing.NamedTuple):
    """A workload parked with a head's shape that held another reason, or its driver's word.

    ``before`` is the note it held (None: what its driver told it itself).
    """

    pw: PendingWorkload
    before: Note | None


@dataclasses.dataclass(slots=True)
class PendingWorkload:
    """A workload waiting for admission, and what the queue remembers about it."""

    info: workload.WorkloadInfo
    cluster_queue: names.ClusterQueueName | None = None
    progress: cycle.ScanProgress | None = None
    requeue_at: float = 0.0
    """Not before this time (backoff after a pods-ready timeout)."""
    shape: Shape = dataclasses.field(init=False)
    """Set when it is placed in a ClusterQueue, which files it by it (``shapes.queue_shape``)."""
    preemptor: bool = False
    """It issued preemptions and waits for the room they make."""
    preempted_for: tuple[int, ...] | None = None
    """The pod counts its preemptions were decided for, when partial admission reduced them."""
    order: Order = (False, 0, 0.0, "")
    """Its ``ordering.queue_key``, kept: a parked workload is pushed back after every release
    in its quota tree, and its info never changes while it is queued."""
    note: Note | None = None
    """What it was told with its shape, while it does not share its group's note (None: what
    its driver told it itself holds)."""
    own_word: bool = False
    """Its driver told it something itself once (else, with ``note`` None, it was told nothing
    yet)."""

    @property
    def fresh(self) -> bool:
        """Told nothing yet, by its driver or with its shape (while it shares no group's note)."""
        return self.note is None and not self.own_word

    def __post_init__(self) -> None:
        self.order = ordering.queue_key(self.info)


def takes_held(pw: PendingWorkload, note: Note) -> bool:
    """Whether a workload not sharing a group's note is told a held head's ``note``.

    Yes if it was told nothing yet, or that reason before; one waiting for another reason
    keeps it.
    """
    return pw.fresh or (pw.note is not None and pw.note.reason == note.reason)


def differs(before: Note | None, note: Note) -> bool:
    """Whether a workload that held ``before`` is told another reason by ``note``."""
    return before is None or before.reason != note.reason
