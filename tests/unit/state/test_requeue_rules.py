"""``state.queues.requeue``: where a head that was not admitted goes, by strategy and reason.

Kueue's rules (``pkg/cache/queue/cluster_queue.go``, ``requeueIfNotPresent``): StrictFIFO puts a
head straight back on every reason but a namespace mismatch; BestEffortFIFO only after a failure
after nomination or while its preemptions are pending. Berth's additions: BestEffortFIFO also
retries a head waiting for pods to be ready; what does not go back is parked with its shape when
it did not fit (or found no victims); Backfill parks a head held for a reservation with its shape,
as held; a head that issued preemptions becomes the queue's sticky head (not under StrictFIFO,
whose head blocks anyway) until it no longer fits or is held. Every row is written out here, so a
change to any cell is a change to this table.
"""

from __future__ import annotations

import itertools
import typing

import pytest

from berth.api import clusterqueue
from berth.core import cycle
from berth.state.queues import requeue

S = clusterqueue.QueueingStrategy
R = cycle.RequeueReason
P = requeue.Parked
K = requeue.Sticky

STRICT, BEST, BACKFILL = S.STRICT_FIFO, S.BEST_EFFORT_FIFO, S.BACKFILL


class Row(typing.NamedTuple):
    strategy: S
    reason: R
    immediate: bool
    parked: requeue.Parked
    sticky: requeue.Sticky


TABLE = [
    Row(*row)
    for row in [
        (STRICT, R.GENERIC, True, P.ALONE, K.KEEP),
        (STRICT, R.NO_FIT, True, P.ALONE, K.RELEASE),
        (STRICT, R.PREEMPTION_NO_CANDIDATES, True, P.ALONE, K.RELEASE),
        (STRICT, R.FAILED_AFTER_NOMINATION, True, P.ALONE, K.KEEP),
        (STRICT, R.PENDING_PREEMPTION, True, P.ALONE, K.NONE),
        (STRICT, R.NAMESPACE_MISMATCH, False, P.ALONE, K.RELEASE),
        (STRICT, R.WAITING_FOR_PODS_READY, True, P.ALONE, K.KEEP),
        (STRICT, R.RESERVATION, True, P.ALONE, K.RELEASE),
        (BEST, R.GENERIC, False, P.ALONE, K.KEEP),
        (BEST, R.NO_FIT, False, P.WITH_SHAPE, K.RELEASE),
        (BEST, R.PREEMPTION_NO_CANDIDATES, False, P.WITH_SHAPE, K.RELEASE),
        (BEST, R.FAILED_AFTER_NOMINATION, True, P.ALONE, K.KEEP),
        (BEST, R.PENDING_PREEMPTION, True, P.ALONE, K.BECOME),
        (BEST, R.NAMESPACE_MISMATCH, False, P.ALONE, K.RELEASE),
        (BEST, R.WAITING_FOR_PODS_READY, True, P.ALONE, K.KEEP),
        (BEST, R.RESERVATION, False, P.ALONE, K.RELEASE),
        (BACKFILL, R.GENERIC, False, P.ALONE, K.KEEP),
        (BACKFILL, R.NO_FIT, False, P.WITH_SHAPE, K.RELEASE),
        (BACKFILL, R.PREEMPTION_NO_CANDIDATES, False, P.WITH_SHAPE, K.RELEASE),
        (BACKFILL, R.FAILED_AFTER_NOMINATION, True, P.ALONE, K.KEEP),
        (BACKFILL, R.PENDING_PREEMPTION, True, P.ALONE, K.BECOME),
        (BACKFILL, R.NAMESPACE_MISMATCH, False, P.ALONE, K.RELEASE),
        (BACKFILL, R.WAITING_FOR_PODS_READY, True, P.ALONE, K.KEEP),
        (BACKFILL, R.RESERVATION, False, P.HELD_WITH_SHAPE, K.RELEASE),
    ]
]
IDS = [f"{row.strategy}-{row.reason}" for row in TABLE]


def test_the_table_covers_every_strategy_and_reason_once() -> None:
    rows = [(row.strategy, row.reason) for row in TABLE]
    assert sorted(rows) == sorted(itertools.product(S, R))
    assert set(requeue.RULES) == set(rows)


@pytest.mark.parametrize("row", TABLE, ids=IDS)
def test_rule(row: Row) -> None:
    assert requeue.RULES[row.strategy, row.reason] == requeue.Rule(
        row.immediate, row.parked, row.sticky
    )


@pytest.mark.parametrize("row", TABLE, ids=IDS)
@pytest.mark.parametrize(
    ("requeued_since_popped", "flavors_left"), [(False, False), (True, False), (False, True)]
)
def test_decide_sends_back_what_may_fit_now(
    row: Row, requeued_since_popped: bool, flavors_left: bool
) -> None:
    where = requeue.decide(
        row.strategy,
        row.reason,
        requeued_since_popped=requeued_since_popped,
        flavors_left=flavors_left,
    )
    assert where.back == (row.immediate or requeued_since_popped or flavors_left)
    assert (where.parked, where.sticky) == (row.parked, row.sticky)
