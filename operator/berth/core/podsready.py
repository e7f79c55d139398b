"""What follows a pods-ready timeout: requeue after Kueue's backoff, or deactivate.

Kueue (``waitForPodsReady.requeuingStrategy``) evicts an admitted workload whose pods are not all
ready within the timeout. The n-th such eviction requeues it after ``backoffBaseSeconds·2^(n-1)``
seconds, capped by ``backoffMaxSeconds``; the eviction that would exceed ``backoffLimitCount``
deactivates it instead. With the ``Eviction`` timestamp a requeued workload queues by its
eviction time, with ``Creation`` it keeps its place. Pure; called by the simulator and the
operator's pods-ready watch, so both decide the same.
"""

from __future__ import annotations

import dataclasses

from berth.api import configuration


@dataclasses.dataclass(frozen=True, slots=True)
class Requeue:
    """Evict and requeue: the new requeue count, when to requeue, and the new queue order time."""

    count: int
    backoff: float
    requeue_at: float
    order_time: float | None
    """The queue order time to use from now on; None keeps the current one."""


@dataclasses.dataclass(frozen=True, slots=True)
class Deactivate:
    """Evict and deactivate: the requeuing limit is exceeded."""

    message: str = (
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    )


def after_timeout(
    strategy: configuration.RequeuingStrategy, requeue_count: int, now: float
) -> Requeue | Deactivate:
    """Decide what a pods-ready timeout does to a workload already requeued ``requeue_count``."""
    limit = strategy.backoff_limit_count
    if limit is not None and requeue_count + 1 > limit:
        return Deactivate()
    count = requeue_count + 1
    backoff = backoff_seconds(strategy, count)
    order_time = now if strategy.timestamp == configuration.RequeueTimestamp.EVICTION else None
    return Requeue(count, backoff, now + backoff, order_time)


def backoff_seconds(strategy: configuration.RequeuingStrategy, count: int) -> float:
    """The wait before the ``count``-th requeue (``count`` ≥ 1)."""
    return min(
        float(strategy.backoff_base_seconds) * float(2 ** (count - 1)),
        float(strategy.backoff_max_seconds),
    )


def timed_out(admitted_at: float, timeout: float, now: float) -> bool:
    """Tell whether pods not ready since ``admitted_at`` have run out of time at ``now``."""
    return now >= admitted_at + timeout
