"""What must be evicted now: deactivation, stopped queues and pods-ready timeouts, decided once.

``due`` is pure: given what each driver knows of its admitted workloads (``Admitted``), the
workloads of queues stopped with ``HoldAndDrain`` (``state.cache.Cache.drained``) and the
``waitForPodsReady`` settings, it returns the evictions to make at ``now``, in key order. The
rules, first match wins (Kueue's ``pkg/controller/core/workload_controller.go``):

1. ``spec.active: false`` → ``Deactivated``;
2. a LocalQueue or ClusterQueue stopped with ``HoldAndDrain`` → ``LocalQueueStopped`` or
   ``ClusterQueueStopped``;
3. pods not all ready within ``waitForPodsReady.timeout`` of admission, or, once they were
   ready and one is not any more, within ``recoveryTimeout`` of that (which defaults to
   ``timeout``; ``0s`` lets a workload recover for as long as it takes) →
   ``PodsReadyTimeout``, requeued after ``core.podsready``'s backoff, or deactivated once the
   requeuing limit is exceeded.

A workload already being evicted is skipped. The simulator asks at the instants its timers and
documents say; the operator's lifecycle task asks on every pass over every admitted workload.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from berth.api import conditions, configuration, names
from berth.core import podsready

_EVICT = conditions.EvictionReason
STOPPED_MESSAGES = {
    _EVICT.LOCAL_QUEUE_STOPPED: "The LocalQueue is stopped",
    _EVICT.CLUSTER_QUEUE_STOPPED: "The ClusterQueue is stopped",
}
"""The eviction message of a workload drained by a stopped queue."""
DEACTIVATED_MESSAGE = "The workload is deactivated"


@dataclasses.dataclass(frozen=True, slots=True)
class Admitted:
    """What the eviction rules read of one admitted workload."""

    key: names.WorkloadKey
    active: bool = True
    evicting: bool = False
    """Already on its way out (``Evicted=True``)."""
    pods_ready: bool = True
    ready_since: float = 0.0
    """When its pods-ready clock started: the admission, or the pods last becoming unready."""
    recovering: bool = False
    """Its pods were all ready once since admission (the recovery timeout applies)."""
    requeue_count: int = 0
    """Pods-ready timeouts so far (``status.requeueState.count``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Eviction:
    """One eviction to make now."""

    key: names.WorkloadKey
    reason: conditions.EvictionReason
    message: str
    requeue: podsready.Requeue | podsready.Deactivate | None = None
    """For a pods-ready timeout: requeue after a backoff, or deactivate (the limit exceeded)."""


def due(
    admitted: Iterable[Admitted],
    drained: Mapping[names.WorkloadKey, conditions.EvictionReason],
    wait_for_pods_ready: configuration.WaitForPodsReady | None,
    now: float,
) -> list[Eviction]:
    """The evictions to make at ``now``, in key order."""
    out: list[Eviction] = []
    for w in sorted(admitted, key=lambda a: a.key):
        if w.evicting:
            continue
        if not w.active:
            out.append(Eviction(w.key, _EVICT.DEACTIVATED, DEACTIVATED_MESSAGE))
        elif w.key in drained:
            reason = drained[w.key]
            out.append(Eviction(w.key, reason, STOPPED_MESSAGES[reason]))
        elif wait_for_pods_ready is not None and _timed_out(w, wait_for_pods_ready, now):
            decision = podsready.after_timeout(
                wait_for_pods_ready.requeuing_strategy, w.requeue_count, now
            )
            out.append(
                Eviction(
                    w.key,
                    _EVICT.PODS_READY_TIMEOUT,
                    f"Exceeded the PodsReady timeout {w.key}",
                    decision,
                )
            )
    return out


def _timed_out(w: Admitted, settings: configuration.WaitForPodsReady, now: float) -> bool:
    """Kueue's ``admittedNotReadyWorkload``: the timeout of starting, or of recovering."""
    if w.pods_ready:
        return False
    if not w.recovering:
        return podsready.timed_out(w.ready_since, settings.timeout, now)
    recovery = settings.effective_recovery_timeout
    return recovery > 0 and podsready.timed_out(w.ready_since, recovery, now)
