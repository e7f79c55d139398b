"""``core.podsready``: Kueue's backoff after a pods-ready timeout, and deactivation at the limit."""

from __future__ import annotations

import dataclasses

import pytest

from berth.api import configuration
from berth.core import podsready


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    strategy: configuration.RequeuingStrategy
    requeue_count: int
    want: podsready.Requeue | podsready.Deactivate


def _strategy(**kw: object) -> configuration.RequeuingStrategy:
    return configuration.RequeuingStrategy.model_validate(kw)


CASES = [
    Case(
        "first timeout waits the base and queues by eviction time",
        _strategy(backoffBaseSeconds=10),
        0,
        podsready.Requeue(1, 10.0, 110.0, 100.0),
    ),
    Case(
        "the third timeout waits base times four",
        _strategy(backoffBaseSeconds=10),
        2,
        podsready.Requeue(3, 40.0, 140.0, 100.0),
    ),
    Case(
        "the backoff is capped by backoffMaxSeconds",
        _strategy(backoffBaseSeconds=10, backoffMaxSeconds=25),
        5,
        podsready.Requeue(6, 25.0, 125.0, 100.0),
    ),
    Case(
        "the Creation timestamp keeps the queue order time",
        _strategy(backoffBaseSeconds=1, timestamp="Creation"),
        0,
        podsready.Requeue(1, 1.0, 101.0, None),
    ),
    Case(
        "a timeout within the limit still requeues",
        _strategy(backoffBaseSeconds=1, backoffLimitCount=2),
        1,
        podsready.Requeue(2, 2.0, 102.0, 100.0),
    ),
    Case(
        "the timeout past backoffLimitCount deactivates",
        _strategy(backoffBaseSeconds=1, backoffLimitCount=2),
        2,
        podsready.Deactivate(),
    ),
    Case(
        "a limit of zero deactivates at the first timeout",
        _strategy(backoffLimitCount=0),
        0,
        podsready.Deactivate(),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_after_timeout(case: Case) -> None:
    assert podsready.after_timeout(case.strategy, case.requeue_count, 100.0) == case.want


def test_timed_out_at_the_deadline_not_before() -> None:
    assert not podsready.timed_out(10.0, 5.0, 14.9)
    assert podsready.timed_out(10.0, 5.0, 15.0)
