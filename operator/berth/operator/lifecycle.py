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

import asyncio
import contextlib
import logging
from typing import Any

from berth.adapters.kube import client, errors, events, workloads
from berth.api import conditions, names
from berth.core import podsready
from berth.operator import world as world_mod
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

    def __init__(self, world: world_mod.World, kube: client.Kube) -> None:
        self.world = world
        self.kube = kube
        self._since: dict[names.WorkloadKey, tuple[str, float]] = {}
        """Per workload, the resourceVersion read and when its pods-ready clock started: the
        pass runs twice a second over every admitted workload, so timestamps are parsed once."""

    async def run(self) -> None:
        """Pass every ``_PERIOD`` seconds, or sooner when woken, until cancelled."""
        while True:
            self.world.wake.lifecycle.clear()
            try:
                await self.pass_once()
            except errors.KubeError as e:
                log.warning("workload lifecycle: %s", e)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.world.wake.lifecycle.wait(), _PERIOD)

    async def pass_once(self) -> None:
        """Make every due eviction and priority rewrite once."""
        w = self.world
        now = w.clock()
        for gone in self._since.keys() - w.cache.admitted.keys():
            del self._since[gone]
        admitted = []
        for key in sorted(w.cache.admitted):
            body = w.workloads.get(key)
            info = w.infos.get(key)
            if body is None or info is None or key in w.in_flight:
                continue
            admitted.append(self._view(key, body, info.active))
        wfpr = w.config.wait_for_pods_ready
        for e in evictions.due(admitted, dict(w.cache.drained()), wfpr, now):
            body = w.workloads[e.key]
            if isinstance(e.requeue, podsready.Deactivate):
                stored = await workloads.patch_spec(
                    self.kube, e.key, body["metadata"]["resourceVersion"], {"active": False}
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
            await self._evict(e.key, body, e.reason, e.message, requeue_state=requeue_state)
        for key in sorted(w.priority_rewrites):
            w.priority_rewrites.discard(key)
            await self._rewrite_priority(key)
        for key in sorted(w.reactivated):
            await self._reactivated(key)
        for key in sorted(w.requeue_holds):
            await self._requeue_when_due(key, now)

    def _view(
        self, key: names.WorkloadKey, body: dict[str, Any], active: bool
    ) -> evictions.Admitted:
        """What the eviction rules read of an admitted Workload's body."""
        ready = not world_mod.condition_true(body, _COND.ADMITTED) or world_mod.condition_true(
            body, _COND.PODS_READY
        )
        since = 0.0
        if not ready:
            rv = str(body["metadata"].get("resourceVersion"))
            cached = self._since.get(key)
            if cached is None or cached[0] != rv:
                cached = (
                    rv,
                    max(
                        world_mod.transition_time(body, _COND.ADMITTED),
                        world_mod.transition_time(body, _COND.PODS_READY),
                    ),
                )
                self._since[key] = cached
            since = cached[1]
        count = int(((body.get("status") or {}).get("requeueState") or {}).get("count") or 0)
        return evictions.Admitted(
            key,
            active=active,
            evicting=world_mod.condition_true(body, _COND.EVICTED),
            pods_ready=ready,
            ready_since=since,
            requeue_count=count,
        )

    async def _evict(
        self,
        key: names.WorkloadKey,
        body: dict[str, Any],
        reason: str,
        message: str,
        *,
        requeue_state: dict[str, Any] | None = None,
    ) -> None:
        w = self.world
        current = (body.get("status") or {}).get("conditions") or []
        change = workloads.condition(_COND.EVICTED, True, reason, message, w.clock())
        status: dict[str, Any] = {"conditions": workloads.merge_conditions(current, [change])}
        if requeue_state is not None:
            status["requeueState"] = requeue_state
        try:
            stored = await workloads.patch_status(
                self.kube, key, body["metadata"]["resourceVersion"], status
            )
        except errors.ConflictError:
            return  # a newer body is on its way; the next pass decides on it
        w.apply("Workload", stored)
        log.info("evicted %s (%s)", key, reason)
        with contextlib.suppress(errors.KubeError):
            await events.emit(self.kube, stored, "Evicted", message, w.clock())

    async def _reactivated(self, key: names.WorkloadKey) -> None:
        """Requeued=True (Reactivated) and a fresh requeue count, as the simulator restarts it.

        The workload stays out of its queue until this is written (``World._queue_pending``).
        """
        w = self.world
        body = w.workloads.get(key)
        if body is None:
            w.reactivated.discard(key)
            return
        change = workloads.condition(
            _COND.REQUEUED, True, "Reactivated", "The workload was reactivated", w.clock()
        )
        status = {"requeueState": None, "conditions": _merged(body, change)}
        await self._write_status(key, body, status, done=w.reactivated)

    async def _requeue_when_due(self, key: names.WorkloadKey, now: float) -> None:
        """Turn Requeued True once what held the workload is over (Kueue's workload controller)."""
        w = self.world
        body = w.workloads.get(key)
        info = w.infos.get(key)
        if body is None or info is None:
            w.requeue_holds.discard(key)
            return
        reason = world_mod.condition_of(body, _COND.REQUEUED).get("reason")
        status: dict[str, Any] = {}
        if reason == _EVICT.PODS_READY_TIMEOUT:
            state = dict((body.get("status") or {}).get("requeueState") or {})
            if world_mod.parse_time(state.get("requeueAt")) > now:
                return
            state["requeueAt"] = None
            status["requeueState"] = state
            change = workloads.condition(
                _COND.REQUEUED, True, "BackoffFinished", "The workload backoff was finished", now
            )
        elif reason in _RESTARTED:
            if w.cache.blocker(info) is not None:
                return
            change = workloads.condition(_COND.REQUEUED, True, *_RESTARTED[reason], now)
        else:
            w.requeue_holds.discard(key)
            return
        status["conditions"] = _merged(body, change)
        await self._write_status(key, body, status, done=w.requeue_holds)

    async def _write_status(
        self,
        key: names.WorkloadKey,
        body: dict[str, Any],
        status: dict[str, Any],
        *,
        done: set[names.WorkloadKey],
    ) -> None:
        """Patch a Workload's status from the body it was decided on, then take it off ``done``.

        Off the set before the World sees the stored body, which lets the workload queue again;
        on a conflict it stays, and the next pass decides on the newer body.
        """
        try:
            stored = await workloads.patch_status(
                self.kube, key, body["metadata"]["resourceVersion"], status
            )
        except errors.ConflictError:
            return
        done.discard(key)
        self.world.apply("Workload", stored)

    async def _rewrite_priority(self, key: names.WorkloadKey) -> None:
        w = self.world
        body = w.workloads.get(key)
        if body is None:
            return
        ref = (body.get("spec") or {}).get("priorityClassRef") or {}
        value = w.priorities.workload_classes.get(str(ref.get("name")))
        if ref.get("kind") != "WorkloadPriorityClass" or value is None:
            return
        if (body.get("spec") or {}).get("priority") == value:
            return
        try:
            stored = await workloads.patch_spec(
                self.kube, key, body["metadata"]["resourceVersion"], {"priority": value}
            )
        except errors.ConflictError:
            w.priority_rewrites.add(key)
            return
        w.apply("Workload", stored)
        log.info("priority of %s is now %d", key, value)


def _merged(body: dict[str, Any], change: dict[str, Any]) -> list[dict[str, Any]]:
    return workloads.merge_conditions((body.get("status") or {}).get("conditions") or [], [change])
