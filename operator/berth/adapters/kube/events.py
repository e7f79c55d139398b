"""Kubernetes Events about Workloads and Jobs, with Kueue's reasons (QuotaReserved, Admitted, ...).

Events are best effort. ``emit`` writes one and reports a failure to the caller, which logs it
and goes on. ``Recorder`` sends them in the background from a bounded queue, as client-go's
event broadcaster does for Kueue (1,000 queued, dropped when full): its ``record`` never waits,
so a caller on a hot path (the scheduler's admission writes) is never slowed by Events, and under
load Events are dropped and counted rather than delaying admissions. Called by the operator's
scheduler loop (through a ``Recorder``), job controller and lifecycle task.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import Any, Protocol

from berth.adapters.kube import client, errors, workloads
from berth.api import bodies

log = logging.getLogger(__name__)

COMPONENT = "berth-controller-manager"
CAPACITY = 1000
"""Events a ``Recorder`` holds before it drops new ones (client-go's broadcaster queue)."""
SENDERS = 2
"""Events a ``Recorder`` has in flight at once."""


def event_body(
    involved: dict[str, Any],
    reason: str,
    message: str,
    now: float,
    *,
    warning: bool = False,
) -> dict[str, Any]:
    """An Event about ``involved`` (an object with apiVersion, kind and metadata)."""
    meta = bodies.meta(involved)
    namespace = meta.get("namespace") or "default"
    stamp = workloads.timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name', 'object')}.{secrets.token_hex(8)}",
            "namespace": namespace,
        },
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": meta.get("name"),
            "namespace": namespace,
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


async def _post(kube: client.KubeRequests, body: dict[str, Any]) -> None:
    namespace = body["metadata"]["namespace"]
    await kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)


async def emit(
    kube: client.KubeRequests,
    involved: dict[str, Any],
    reason: str,
    message: str,
    now: float,
    *,
    warning: bool = False,
) -> None:
    """Record an Event about ``involved`` (an object with apiVersion, kind and metadata)."""
    await _post(kube, event_body(involved, reason, message, now, warning=warning))


class Records(Protocol):
    """Where the scheduler loop hands its Events (a ``Recorder``)."""

    def record(
        self,
        involved: dict[str, Any],
        reason: str,
        message: str,
        now: float,
        *,
        warning: bool = False,
    ) -> None:
        """Take an Event about ``involved``; never wait."""
        ...


class Recorder:
    """Sends Events in the background; ``record`` queues one and returns at once."""

    def __init__(
        self,
        kube: client.KubeRequests,
        *,
        capacity: int = CAPACITY,
        senders: int = SENDERS,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        self.kube = kube
        self.on_drop = on_drop
        """Told of each dropped Event (the operator counts them in a metric)."""
        self.senders = senders
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(capacity)
        self.sent = 0
        self.dropped = 0
        """Events not queued because the queue was full."""
        self.failed = 0
        """Events the API server refused or that could not be sent."""

    def record(
        self,
        involved: dict[str, Any],
        reason: str,
        message: str,
        now: float,
        *,
        warning: bool = False,
    ) -> None:
        """Queue an Event about ``involved``, or drop it (and count it) if the queue is full."""
        try:
            self._queue.put_nowait(event_body(involved, reason, message, now, warning=warning))
        except asyncio.QueueFull:
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop()
            # Once at the first drop and then rarely: under load this would flood the log.
            if self.dropped == 1 or self.dropped % CAPACITY == 0:
                log.warning("events: queue full, %d dropped so far", self.dropped)

    @property
    def queued(self) -> int:
        """Events waiting to be sent."""
        return self._queue.qsize()

    async def flush(self) -> None:
        """Wait until every queued Event was sent or failed."""
        await self._queue.join()

    async def run(self) -> None:
        """Send queued Events until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self.senders):
                group.create_task(self._send())

    async def _send(self) -> None:
        while True:
            body = await self._queue.get()
            try:
                await _post(self.kube, body)
            except errors.KubeError as e:
                self.failed += 1
                log.debug("event %s: %s", body["reason"], e)
            else:
                self.sent += 1
            finally:
                self._queue.task_done()
