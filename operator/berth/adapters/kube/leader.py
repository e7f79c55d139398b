"""Leader election on a ``coordination.k8s.io`` Lease, with kubernetes_asyncio's leaderelection.

``run_while_leader`` runs a coroutine only while this replica holds the Lease, and cancels it
when the Lease is lost; it then tries to acquire it again. Called by the operator's composition
root around the scheduler loop and the job controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
from kubernetes_asyncio.leaderelection.resourcelock import leaselock

from berth.adapters.kube import client

log = logging.getLogger(__name__)


async def run_while_leader(
    kube: client.Kube,
    *,
    name: str,
    namespace: str,
    identity: str,
    lead: Callable[[], Coroutine[Any, Any, None]],
    lease_duration: int = 15,
    renew_deadline: int = 10,
    retry_period: int = 2,
) -> None:
    """Hold the Lease ``namespace/name`` as ``identity`` and run ``lead`` while it is held.

    Cancelling this cancels ``lead`` too, and waits for it to finish cleaning up.
    """
    # The library runs ``lead`` as a task of its own and forgets it; keep hold of it so that
    # stopping the operator stops the leader's work in order (history flushed, run closed).
    leading: asyncio.Task[Any] | None = None

    async def tracked() -> None:
        nonlocal leading
        leading = asyncio.current_task()
        await lead()

    try:
        while True:
            lock = leaselock.LeaseLock(name, namespace, identity, kube.api)
            stopped = asyncio.Event()

            async def on_stop(done: asyncio.Event = stopped) -> None:
                log.warning("lost the lease %s/%s", namespace, name)
                done.set()

            config = electionconfig.Config(
                lock,
                lease_duration=lease_duration,
                renew_deadline=renew_deadline,
                retry_period=retry_period,
                onstarted_leading=tracked,
                onstopped_leading=on_stop,
            )
            await leaderelection.LeaderElection(config).run()
            await asyncio.sleep(retry_period)
    finally:
        if leading is not None and not leading.done():
            leading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await leading
