"""Keeps a ResourceFlavor or ClusterQueue from going while it is in use (leader only).

Kueue's ``resource-in-use`` finalizer (``pkg/controller/core/resourceflavor_controller.go`` and
``clusterqueue_controller.go``), under Berth's name ``berth.dev/resource-in-use``:

- every ResourceFlavor and ClusterQueue gets the finalizer, so a delete only marks it;
- a ResourceFlavor being deleted keeps working until no ClusterQueue names it; until then an
  Event on it names the ClusterQueues that still do (a flavor has no status, in Kueue either);
- a ClusterQueue being deleted admits nothing new (its Active condition is False, reason
  ``Terminating``, ``World``/``state.cache``) while its admitted workloads run on; its status
  keeps counting them; once none reserves quota there, the finalizer goes and so does it.

``what_holds`` is the pure part. Called by the composition root as one of the leader's tasks.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from berth.adapters import wakeup
from berth.adapters.kube import client, errors, events
from berth.api import base, bodies, names
from berth.operator import ports

log = logging.getLogger(__name__)

FINALIZER = "berth.dev/resource-in-use"
_PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues"}
_RETRY = 1.0


def what_holds(world: ports.FinalizerWorld, kind: str, name: str) -> list[str]:
    """What still uses the object, by name (empty: it may go)."""
    cache = world.cache
    if kind == "ResourceFlavor":
        return sorted(
            f"ClusterQueue {cq_name}"
            for cq_name, cq in cache.cluster_queues.items()
            if any(f.name == name for g in cq.spec.resource_groups for f in g.flavors)
        )
    admitted = cache.snapshot.admitted.get(names.ClusterQueueName(name), {})
    return sorted(f"Workload {key.namespace}/{key.name}" for key in admitted)


class Finalizers:
    """Adds the finalizer, and removes it from objects being deleted that nothing uses."""

    def __init__(self, world: ports.FinalizerWorld, kube: client.KubeRequests) -> None:
        self.world = world
        self.kube = kube
        self._told: dict[tuple[str, str], tuple[str, ...]] = {}
        """The users last named in an Event, per object: an Event only when they change."""

    async def run(self) -> None:
        """Reconcile what is due whenever the wake-up fires; retry failures after a second."""
        w = self.world
        while True:
            retry = await self.reconcile_due()
            await wakeup.woken(w.wake.finalizers, _RETRY if retry else 5.0)
            w.wake.finalizers.clear()

    async def reconcile_due(self) -> bool:
        """One pass; True when a write failed (its object is looked at again next pass).

        A pass looks only at the objects whose body changed since the last one and at those
        being deleted (``take_finalize_due``): with a thousand ClusterQueues, a pass over all of
        them at every finished workload cost a fifth of the operator's CPU.
        """
        w = self.world
        failed = False
        for kind, name in w.take_finalize_due():
            body = w.finalized.get((kind, name))
            if body is None:
                continue  # deleted since
            try:
                await self.reconcile(kind, name, body)
            except errors.KubeError as e:
                log.warning("%s %s: %s", kind, name, e)
                w.finalize_again((kind, name))
                failed = True
        return failed

    async def reconcile(self, kind: str, name: str, body: dict[str, Any]) -> None:
        """Add or remove the finalizer of one object, or say what keeps it."""
        meta = bodies.meta(body)
        finalizers = list(meta.get("finalizers") or [])
        deleting = bool(meta.get("deletionTimestamp"))
        if not deleting:
            if FINALIZER not in finalizers:
                await self._patch(kind, name, meta, [*finalizers, FINALIZER])
            return
        if FINALIZER not in finalizers:
            return
        users = what_holds(self.world, kind, name)
        if users:
            await self._tell(kind, name, body, users)
            return
        await self._patch(kind, name, meta, [f for f in finalizers if f != FINALIZER])
        log.info("%s %s is no longer in use: deleted", kind, name)

    async def _patch(
        self, kind: str, name: str, meta: bodies.ObjectMeta, finalizers: list[str]
    ) -> None:
        path = f"/apis/{base.GROUP}/{base.VERSION}/{_PLURALS[kind]}/{name}"
        stored = await self.kube.request(
            "PATCH",
            path,
            body={
                "metadata": {
                    "finalizers": finalizers,
                    "resourceVersion": meta.get("resourceVersion"),
                }
            },
            content_type=client.MERGE_PATCH,
        )
        stored.setdefault("apiVersion", base.API_VERSION)
        stored.setdefault("kind", kind)
        self.world.apply(kind, stored)

    async def _tell(self, kind: str, name: str, body: dict[str, Any], users: list[str]) -> None:
        if self._told.get((kind, name)) == tuple(users):
            return
        self._told[(kind, name)] = tuple(users)
        shown = ", ".join(users[:10]) + (f" and {len(users) - 10} more" if len(users) > 10 else "")
        message = f"Deletion waits: {kind} {name} is in use by {shown}"
        log.info("%s", message)
        involved = {**body, "apiVersion": base.API_VERSION, "kind": kind}
        with contextlib.suppress(errors.KubeError):
            await events.emit(self.kube, involved, "ResourceInUse", message, self.world.clock())
