"""Leader election on a ``coordination.k8s.io`` Lease that an API server restart cannot kill.

``run_while_leader`` runs ``lead`` only while this replica holds the Lease, and follows
client-go's ``tools/leaderelection`` semantics:

- **acquire**: the Lease is taken when it does not exist, is held by this replica, or its holder
  has not been seen to renew it for ``lease_duration`` seconds — measured on this replica's own
  clock from when the record last changed, never by comparing with the holder's clock;
- **renew** every ``retry_period`` seconds; when no renewal succeeded for ``renew_deadline``
  seconds the replica stops leading: ``lead`` is cancelled (and awaited), then it competes again;
- every request failure — a connection refused while the API server restarts, a timeout, a 5xx,
  a conflict with another replica — only costs a retry after ``retry_period``; nothing here
  raises out of the loop but cancellation and ``TermStuckError``;
- **a term ends or the process does**: ``lead`` must end within ``stop_grace`` seconds of its
  cancel; if it does not, ``TermStuckError`` is raised, because competing again while its tasks
  still run could make this replica lead twice, and a replica that neither leads nor competes
  would stall every queue (a restart is the remedy);
- **release on cancel** (client-go's ``ReleaseOnCancel``): when the operator stops, ``lead`` is
  cancelled and awaited first, then the Lease is given up (holder cleared, duration 1 s), so a
  standby takes over at once instead of waiting out the Lease.

If ``lead`` ends by itself (its tasks lost the API server), the term ends the same way and the
replica competes again after ``retry_period``. Called by the operator's composition root.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from berth.adapters.kube import client, errors

log = logging.getLogger(__name__)


def _micro_time(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclasses.dataclass(slots=True)
class _Observed:
    """The last Lease record seen, and when (this replica's monotonic clock) it changed."""

    record: tuple[str, str, str] = ("", "", "")
    """(holderIdentity, renewTime, leaseDurationSeconds)."""
    at: float = 0.0


class Elector:
    """One replica's side of the election for ``namespace/name``."""

    def __init__(
        self,
        kube: client.KubeRequests,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.clock = clock
        self._observed = _Observed()

    @property
    def _path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    def _spec(self, *, acquired: str, transitions: int) -> dict[str, Any]:
        now = _micro_time(time.time())
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_duration,
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this replica holds the Lease afterwards. Raises KubeError."""
        try:
            lease = await self.kube.request("GET", self._path)
        except errors.NotFoundError:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(acquired="", transitions=0),
            }
            try:
                await self.kube.request(
                    "POST",
                    f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases",
                    body=body,
                )
            except errors.ConflictError:
                return False  # another replica created it first
            self._observed = _Observed((self.identity, "", ""), self.clock())
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""), str(spec.get("leaseDurationSeconds")))
        now = self.clock()
        if record != self._observed.record:
            self._observed = _Observed(record, now)
        duration = int(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now < self._observed.at + duration:
            return False  # held, and renewed within its duration as far as we have seen
        ours = holder == self.identity
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)
        lease["spec"] = self._spec(
            acquired=str(spec.get("acquireTime") or "") if ours else "", transitions=transitions
        )
        try:
            stored = await self.kube.request("PUT", self._path, body=lease)
        except errors.ConflictError:
            return False  # someone else wrote it since our read
        new = stored.get("spec") or {}
        self._observed = _Observed(
            (self.identity, str(new.get("renewTime") or ""), str(new.get("leaseDurationSeconds"))),
            self.clock(),
        )
        return True

    async def release(self) -> None:
        """Give the Lease up if this replica holds it (best effort; raises KubeError)."""
        lease = await self.kube.request("GET", self._path)
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        spec["holderIdentity"] = None
        spec["leaseDurationSeconds"] = 1
        spec["renewTime"] = _micro_time(time.time())
        lease["spec"] = spec
        await self.kube.request("PUT", self._path, body=lease)


async def _attempt(elector: Elector) -> bool:
    try:
        return await elector.try_acquire_or_renew()
    except errors.KubeError as e:
        log.warning("lease %s/%s: %s", elector.namespace, elector.name, e)
        return False


async def run_while_leader(
    kube: client.KubeRequests,
    *,
    name: str,
    namespace: str,
    identity: str,
    lead: Callable[[], Coroutine[Any, Any, None]],
    lease_duration: int = 15,
    renew_deadline: int = 10,
    retry_period: int = 2,
    stop_grace: float = 30.0,
) -> None:
    """Hold the Lease ``namespace/name`` as ``identity`` and run ``lead`` while it is held.

    Runs until cancelled; cancelling it cancels ``lead``, waits for it, and releases the Lease.
    Raises ``TermStuckError`` when ``lead`` has not ended ``stop_grace`` seconds after its cancel.
    """
    elector = Elector(
        kube, name=name, namespace=namespace, identity=identity, lease_duration=lease_duration
    )
    while True:
        await _acquire(elector, retry_period)
        log.info("%s leads (lease %s/%s)", identity, namespace, name)
        leading = asyncio.create_task(lead())
        try:
            await _renew_until_lost(elector, leading, renew_deadline, retry_period)
        except asyncio.CancelledError:
            await _stop(leading, stop_grace)
            with contextlib.suppress(errors.KubeError):
                await elector.release()
                log.info("released the lease %s/%s", namespace, name)
            raise
        await _stop(leading, stop_grace)
        await asyncio.sleep(retry_period)


async def _acquire(elector: Elector, retry_period: int) -> None:
    """Return once this replica holds the Lease."""
    while True:
        if await _attempt(elector):
            return
        await asyncio.sleep(retry_period)


async def _renew_until_lost(
    elector: Elector, leading: asyncio.Task[None], renew_deadline: int, retry_period: int
) -> None:
    """Renew while ``leading`` runs; return when a renewal deadline passed or it ended."""
    last = elector.clock()
    while not leading.done():
        done, _pending = await asyncio.wait({leading}, timeout=retry_period)
        if done:
            break
        if await _attempt(elector):
            last = elector.clock()
        elif elector.clock() - last > renew_deadline:
            log.warning(
                "lost the lease %s/%s: no renewal for %d s",
                elector.namespace,
                elector.name,
                renew_deadline,
            )
            return
    if not leading.cancelled() and leading.exception() is not None:
        log.warning("the leader's work ended: %s; competing again", leading.exception())


class TermStuckError(RuntimeError):
    """The leader's work did not end after its cancel: the process must stop."""


async def _stop(task: asyncio.Task[None], grace: float) -> None:
    task.cancel()
    done, _pending = await asyncio.wait({task}, timeout=grace)
    if not done:
        raise TermStuckError(f"the leader's work has not ended {grace:g} s after its cancel")
    if not task.cancelled():
        task.exception()  # retrieved: how the term ended was logged by _renew_until_lost
