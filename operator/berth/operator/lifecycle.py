"""Workload lifecycle on the leader: evictions that are not preemptions, and priority rewrites.

Each pass asks ``state.evictions.due`` — the rules the simulator follows too — what must be
evicted now among the admitted workloads: deactivated ones (``Deactivated``), those of queues
stopped with ``HoldAndDrain`` (``LocalQueueStopped``/``ClusterQueueStopped``), and those whose
pods were not all ready within ``waitForPodsReady.timeout`` (``PodsReadyTimeout`` with
``status.requeueState``, or ``spec.active: false`` once the requeuing limit is exceeded). This
task only writes them.

It then rewrites ``spec.priority`` of the Workloads whose WorkloadPriorityClass value changed,
and sets ``Requeued=True`` as Kueue's workload controller does (the simulator's ``Requeued``
events): ``Reactivated`` with a cleared ``requeueState`` for a reactivated Workload,
``BackoffFinished`` (clearing ``requeueAt``) once a pods-ready timeout's backoff is over — until
then the workload stays out of its queue — and ``LocalQueueRestarted``/``ClusterQueueRestarted``
once a stopped queue runs again. An eviction writes only the ``Evicted`` condition (and
``requeueState``); the Job controller stops the Job and then clears the admission, which
releases the quota. Every write carries the resourceVersion it was decided from; a conflict is
decided again on the next pass.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from berth.adapters import wakeup
from berth.adapters.kube import client, errors, events, workloads
from berth.api import conditions, names, workload_view
from berth.core import podsready
from berth.operator import mailbox, ports
from berth.state import evictions

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_EVICT = conditions.EvictionReason
_PERIOD = 0.5
"""Seconds between passes: the resolution of pods-ready timeouts."""
_RESTARTED = {
    _EVICT.LOCAL_QUEUE_STOPPED: (
        "LocalQueueRestarted",
        "The LocalQueue was restarted after being stopped",
    ),
    _EVICT.CLUSTER_QUEUE_STOPPED: (
        "ClusterQueueRestarted",
        "The ClusterQueue was restarted after being stopped",
    ),
}
"""Requeued reason and message when a stopped queue's evicted workload may queue again."""


class Lifecycle:
    """The leader's pass over admitted workloads and priority rewrites."""

    def __init__(self, world: ports.LifecycleWorld, kube: client.KubeRequests) -> None:
        self.world = world
        self.kube = kube

    async def run(self) -> None:
        """Pass every ``_PERIOD`` seconds, or sooner when woken, until cancelled."""
        while True:
            self.world.wake.lifecycle.clear()
            try:
                await self.pass_once()
            except errors.KubeError as e:
                log.warning("workload lifecycle: %s", e)
            await wakeup.woken(self.world.wake.lifecycle, _PERIOD)

    async def pass_once(self) -> None:
        """Make every due eviction and priority rewrite once."""
        w = self.world
        now = w.clock()
        admitted = []
        for key in sorted(w.cache.admitted):
            view = w.workloads.get(key)
            info = w.infos.get(key)
            if view is None or info is None or key in w.in_flight:
                continue
            admitted.append(admitted_of(view, info.active))
        wfpr = w.config.wait_for_pods_ready
        for e in evictions.due(admitted, dict(w.cache.drained()), wfpr, now):
            view = w.workloads[e.key]
            if isinstance(e.requeue, podsready.Deactivate):
                stored = await workloads.patch_spec(
                    self.kube, e.key, view.resource_version, {"active": False}
                )
                w.apply("Workload", stored)
                log.info("deactivated %s: %s", e.key, e.requeue.message)
                continue
            requeue_state = None
            if isinstance(e.requeue, podsready.Requeue):
                requeue_state = {
                    "count": e.requeue.count,
                    "requeueAt": workloads.timestamp(e.requeue.requeue_at),
                }
            await self._evict(view, e.reason, e.message, requeue_state=requeue_state)
        for key in w.priority_rewrites.take():
            await self._rewrite_priority(key)
        for key in list(w.reactivated):
            await self._reactivated(key)
        for key in list(w.requeue_holds):
            await self._requeue_when_due(key, now)

    async def _evict(
        self,
        view: workload_view.WorkloadView,
        reason: str,
        message: str,
        *,
        requeue_state: dict[str, Any] | None = None,
    ) -> None:
        w = self.world
        change = workloads.condition(_COND.EVICTED, True, reason, message, w.clock())
        status: dict[str, Any] = {
            "conditions": workloads.merge_conditions(view.raw_conditions, [change])
        }
        if requeue_state is not None:
            status["requeueState"] = requeue_state
        try:
            stored = await workloads.patch_status(
                self.kube, view.key, view.resource_version, status
            )
        except errors.ConflictError:
            return  # a newer body is on its way; the next pass decides on it
        w.apply("Workload", stored)
        log.info("evicted %s (%s)", view.key, reason)
        with contextlib.suppress(errors.KubeError):
            await events.emit(self.kube, stored, "Evicted", message, w.clock())

    async def _reactivated(self, key: names.WorkloadKey) -> None:
        """Requeued=True (Reactivated) and a fresh requeue count, as the simulator restarts it.

        The workload stays out of its queue until this is written (``World._queue_pending``).
        """
        w = self.world
        view = w.workloads.get(key)
        if view is None:
            w.reactivated.discard(key)
            return
        change = workloads.condition(
            _COND.REQUEUED, True, "Reactivated", "The workload was reactivated", w.clock()
        )
        status = {
            "requeueState": None,
            "conditions": workloads.merge_conditions(view.raw_conditions, [change]),
        }
        await self._write_status(view, status, done=w.reactivated)

    async def _requeue_when_due(self, key: names.WorkloadKey, now: float) -> None:
        """Turn Requeued True once what held the workload is over (Kueue's workload controller)."""
        w = self.world
        view = w.workloads.get(key)
        info = w.infos.get(key)
        if view is None or info is None:
            w.requeue_holds.discard(key)
            return
        requeued = view.condition(_COND.REQUEUED)
        reason = None if requeued is None else requeued.reason
        status: dict[str, Any] = {}
        if reason == _EVICT.PODS_READY_TIMEOUT:
            if view.requeue_at > now:
                return
            state = dict(view.status.get("requeueState") or {})
            state["requeueAt"] = None
            status["requeueState"] = state
            change = workloads.condition(
                _COND.REQUEUED, True, "BackoffFinished", "The workload backoff was finished", now
            )
        elif reason in _RESTARTED:
            if w.cache.blocker(info) is not None:
                return
            restarted = _RESTARTED[_EVICT(reason)]
            change = workloads.condition(_COND.REQUEUED, True, *restarted, now)
        else:
            w.requeue_holds.discard(key)
            return
        status["conditions"] = workloads.merge_conditions(view.raw_conditions, [change])
        await self._write_status(view, status, done=w.requeue_holds)

    async def _write_status(
        self,
        view: workload_view.WorkloadView,
        status: dict[str, Any],
        *,
        done: mailbox.Mailbox[names.WorkloadKey],
    ) -> None:
        """Patch a Workload's status from the body it was decided on, then take it off ``done``.

        Off the set before the World sees the stored body, which lets the workload queue again;
        on a conflict it stays, and the next pass decides on the newer body.
        """
        try:
            stored = await workloads.patch_status(
                self.kube, view.key, view.resource_version, status
            )
        except errors.ConflictError:
            return
        done.discard(view.key)
        self.world.apply("Workload", stored)

    async def _rewrite_priority(self, key: names.WorkloadKey) -> None:
        w = self.world
        view = w.workloads.get(key)
        if view is None or view.priority_class_ref is None:
            return
        kind, name = view.priority_class_ref
        value = w.priorities.workload_classes.get(name)
        if kind != "WorkloadPriorityClass" or value is None or view.spec.get("priority") == value:
            return
        try:
            stored = await workloads.patch_spec(
                self.kube, key, view.resource_version, {"priority": value}
            )
        except errors.ConflictError:
            w.priority_rewrites.keep(key)  # decided again on the newer body, next pass
            return
        w.apply("Workload", stored)
        log.info("priority of %s is now %d", key, value)


def admitted_of(view: workload_view.WorkloadView, active: bool) -> evictions.Admitted:
    """What the eviction rules read of an admitted Workload.

    Its pods-ready clock starts at its admission while the pods wait to start, and at the
    pods turning unready once they wait to recover (``PodsReady`` False with reason
    ``WaitForRecovery``), as Kueue's ``admittedNotReadyWorkload`` reads them.
    """
    ready = not view.is_true(_COND.ADMITTED) or view.is_true(_COND.PODS_READY)
    pods = view.condition(_COND.PODS_READY)
    recovering = (
        not ready
        and pods is not None
        and pods.reason == conditions.PodsReadyReason.WAIT_FOR_RECOVERY
    )
    since = 0.0
    if recovering:
        since = view.transition_time(_COND.PODS_READY)
    elif not ready:
        since = view.transition_time(_COND.ADMITTED)
    return evictions.Admitted(
        view.key,
        active=active,
        evicting=view.is_true(_COND.EVICTED),
        pods_ready=ready,
        ready_since=since,
        recovering=recovering,
        requeue_count=view.requeue_count,
    )
