"""Where a head that was not admitted goes: the requeue rules, as a table.

For every queueing strategy and ``cycle.RequeueReason`` the table says whether the head goes
straight back into its ClusterQueue's heap, what it is parked with if not, and what becomes of
the queue's sticky head. The rules are Kueue's (``pkg/cache/queue/cluster_queue.go``:
StrictFIFO requeues immediately on every reason but a namespace mismatch, which must not block
other namespaces; BestEffortFIFO only after a failure after nomination or while waiting for its
preemptions), with Berth's additions: BestEffortFIFO also retries a head waiting for pods to be
ready, a head that issued preemptions stays the head until it is admitted or found inadmissible
(sticky), workloads of a head's shape are parked with it, and Backfill is BestEffortFIFO whose
heads held for a reservation are parked with their shape as held. Pure data; ``decide`` adds
the two facts of the moment. Called by ``queues.manager``.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools

from berth.api import clusterqueue
from berth.core import cycle

_S = clusterqueue.QueueingStrategy
_R = cycle.RequeueReason


class Parked(enum.Enum):
    """What a head that does not go straight back is parked with."""

    ALONE = "alone"
    WITH_SHAPE = "with-shape"
    """Its shape's workloads are parked with it and told its reason: they would not fit either."""
    HELD_WITH_SHAPE = "held-with-shape"
    """As WITH_SHAPE, held for a reservation: they go back when the tree's holders change."""


class Sticky(enum.Enum):
    """What the queue's sticky head (one that issued preemptions) becomes."""

    KEEP = "keep"
    BECOME = "become"
    """This head becomes sticky: it stays the head until admitted or found inadmissible."""
    NONE = "none"
    """No head is sticky (StrictFIFO: its head blocks the queue anyway)."""
    RELEASE = "release"
    """If this head was sticky, it is no longer."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    """One row: what a strategy does with a head requeued for a reason."""

    immediate: bool
    """Straight back into the heap (it stays the head unless another is ahead)."""
    parked: Parked
    """What it is parked with when it is not immediate."""
    sticky: Sticky


def _rule(strategy: clusterqueue.QueueingStrategy, reason: cycle.RequeueReason) -> Rule:
    strict = strategy == _S.STRICT_FIFO
    if strict:
        immediate = reason != _R.NAMESPACE_MISMATCH
    else:
        immediate = reason in {
            _R.FAILED_AFTER_NOMINATION,
            _R.PENDING_PREEMPTION,
            _R.WAITING_FOR_PODS_READY,
        }
    if not strict and reason in {_R.NO_FIT, _R.PREEMPTION_NO_CANDIDATES}:
        parked = Parked.WITH_SHAPE
    elif strategy == _S.BACKFILL and reason == _R.RESERVATION:
        # Its shape holds what its estimate is made from (``shapes.queue_shape``); held in
        # another queue (while borrowing), others of its shape may be shorter.
        parked = Parked.HELD_WITH_SHAPE
    else:
        parked = Parked.ALONE
    if reason == _R.PENDING_PREEMPTION:
        sticky = Sticky.NONE if strict else Sticky.BECOME
    elif reason in {_R.NO_FIT, _R.PREEMPTION_NO_CANDIDATES, _R.NAMESPACE_MISMATCH, _R.RESERVATION}:
        sticky = Sticky.RELEASE
    else:
        sticky = Sticky.KEEP
    return Rule(immediate, parked, sticky)


RULES: dict[tuple[clusterqueue.QueueingStrategy, cycle.RequeueReason], Rule] = {
    (strategy, reason): _rule(strategy, reason) for strategy, reason in itertools.product(_S, _R)
}
"""Every strategy and reason."""


@dataclasses.dataclass(frozen=True, slots=True)
class Where:
    """Where one head goes now."""

    back: bool
    """Into the heap; else parked as ``parked`` says."""
    parked: Parked
    sticky: Sticky


def decide(
    strategy: clusterqueue.QueueingStrategy,
    reason: cycle.RequeueReason,
    *,
    requeued_since_popped: bool,
    flavors_left: bool,
) -> Where:
    """Where a head goes, given the moment.

    It goes back into the heap, whatever the rule, if the queue's parked workloads were
    requeued since it was popped (what it waited for may have come) or its flavor scan has
    flavors left to try (Kueue's ``requeueIfNotPresent`` and pending flavors).
    """
    rule = RULES[strategy, reason]
    back = rule.immediate or requeued_since_popped or flavors_left
    return Where(back, rule.parked, rule.sticky)
