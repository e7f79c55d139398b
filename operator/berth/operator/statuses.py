"""ClusterQueue and LocalQueue statuses: counts, flavor reservation and usage, share, Active.

Built from the cache and queues (``build_*`` are pure over them) and written when they change,
at most a few times a second, through a one-method ``StatusPort`` (``KubeStatusPort`` in the
operator, a fake in unit tests). A status counts as written only after its patch succeeded; a
failed one is retried on the next pass. Started by ``main`` on the leader.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from berth.adapters.kube import client, errors, queues_status, workloads
from berth.api import conditions, names, quantity, selector
from berth.core import fairsharing, resources, snapshot
from berth.operator import ports

log = logging.getLogger(__name__)
_INTERVAL = 0.5


def _flavor_usage(
    node_quotas: dict[resources.FlavorResource, Any],
    usage: dict[resources.FlavorResource, int],
    nominal: dict[resources.FlavorResource, int],
) -> list[dict[str, Any]]:
    by_flavor: dict[str, list[dict[str, Any]]] = {}
    for fr in sorted(node_quotas):
        total = usage.get(fr, 0)
        borrowed = max(0, total - nominal.get(fr, 0))
        by_flavor.setdefault(fr.flavor, []).append(
            {
                "name": fr.resource,
                "total": quantity.format(fr.resource, total),
                "borrowed": quantity.format(fr.resource, borrowed),
            }
        )
    return [{"name": f, "resources": r} for f, r in by_flavor.items()]


def _active(reason: str | None, message: str, now: float) -> dict[str, Any]:
    if reason is None:
        return workloads.condition("Active", True, conditions.QueueActiveReason.READY, message, now)
    return workloads.condition("Active", False, reason, message, now)


@dataclasses.dataclass(frozen=True, slots=True)
class Counts:
    """Pending workloads per ClusterQueue and LocalQueue, admitted ones per LocalQueue."""

    pending_by_cq: dict[names.ClusterQueueName, int]
    pending_by_lq: dict[tuple[str, str], int]
    admitted_by_lq: dict[tuple[str, str], list[names.WorkloadKey]]


def count(world: ports.StatusWorld) -> Counts:
    """Count every queue's workloads in one pass (per queue, it would be a pass per queue)."""
    by_cq: dict[names.ClusterQueueName, int] = {}
    by_lq: dict[tuple[str, str], int] = {}
    for pw in world.queues.pending.values():
        cq = world.cache.cluster_queue_for(pw.info)
        if cq is not None:
            by_cq[cq] = by_cq.get(cq, 0) + 1
        if pw.info.local_queue is not None:
            lq = (pw.info.key.namespace, pw.info.local_queue)
            by_lq[lq] = by_lq.get(lq, 0) + 1
    admitted: dict[tuple[str, str], list[names.WorkloadKey]] = {}
    for key, adm in world.cache.admitted.items():
        if adm.info.local_queue is not None:
            admitted.setdefault((key.namespace, adm.info.local_queue), []).append(key)
    return Counts(by_cq, by_lq, admitted)


def build_cluster_queue(
    world: ports.StatusWorld,
    name: names.ClusterQueueName,
    now: float,
    counts: Counts | None = None,
) -> dict[str, Any]:
    """The status of one ClusterQueue (``counts`` from ``count``, taken now if not given)."""
    counts = counts or count(world)
    snap = world.cache.snapshot
    info = snap.cluster_queues[name]
    node = snap.cq_nodes[name]
    admitted = snap.admitted.get(name, {})
    usage: dict[resources.FlavorResource, int] = {}
    admitted_only: dict[resources.FlavorResource, int] = {}
    n_admitted = 0
    for key, adm in admitted.items():
        resources.add_into(usage, adm.admission.usage)
        view = world.workloads.get(key)
        if view is not None and view.is_true(conditions.WorkloadCondition.ADMITTED):
            resources.add_into(admitted_only, adm.admission.usage)
            n_admitted += 1
    nominal = {fr: q.nominal for fr, q in node.quotas.items()}
    return {
        "pendingWorkloads": counts.pending_by_cq.get(name, 0),
        "reservingWorkloads": len(admitted),
        "admittedWorkloads": n_admitted,
        "flavorsReservation": _flavor_usage(node.quotas, usage, nominal),
        "flavorsUsage": _flavor_usage(node.quotas, admitted_only, nominal),
        "fairSharing": {"weightedShare": fairsharing.share(snap, node).rounded()},
        "conditions": [_active(info.inactive_reason, _active_message(info, admitted), now)],
    }


_NAMED = 10
"""At most this many workloads are named in a terminating ClusterQueue's Active message."""


def _active_message(
    info: snapshot.ClusterQueueInfo, admitted: Mapping[names.WorkloadKey, object]
) -> str:
    """The Active message; a terminating queue's names the workloads its deletion waits for."""
    if info.inactive_reason != conditions.QueueActiveReason.TERMINATING or not admitted:
        return info.inactive_message
    keys = sorted(admitted)
    shown = ", ".join(f"Workload {k}" for k in keys[:_NAMED])
    more = f" and {len(keys) - _NAMED} more" if len(keys) > _NAMED else ""
    return f"{info.inactive_message}; still reserved by {len(keys)}: {shown}{more}"


def _selects(
    wanted: selector.LabelSelector | None, labels: dict[str, str] | None, namespace: str
) -> bool:
    """Tell whether a ClusterQueue's namespaceSelector takes a namespace (as the cycle asks).

    A namespace not seen yet counts as taken: the next status write, once it is, tells.
    """
    if labels is None:
        return True
    if wanted is None:
        return False  # Kueue's nil selector matches nothing
    return wanted.matches({"kubernetes.io/metadata.name": namespace, **labels})


def build_local_queue(
    world: ports.StatusWorld,
    namespace: str,
    name: str,
    now: float,
    counts: Counts | None = None,
) -> dict[str, Any]:
    """The status of one LocalQueue (``counts`` from ``count``, taken now if not given)."""
    counts = counts or count(world)
    lq = world.cache.local_queue(namespace, name)
    assert lq is not None  # noqa: S101 - callers pass known queues
    cq_name = lq.spec.cluster_queue
    pending = counts.pending_by_lq.get((namespace, name), 0)
    usage: dict[resources.FlavorResource, int] = {}
    admitted_only: dict[resources.FlavorResource, int] = {}
    reserving = n_admitted = 0
    for key in counts.admitted_by_lq.get((namespace, name), []):
        adm = world.cache.admitted[key]
        reserving += 1
        resources.add_into(usage, adm.admission.usage)
        view = world.workloads.get(key)
        if view is not None and view.is_true(conditions.WorkloadCondition.ADMITTED):
            n_admitted += 1
            resources.add_into(admitted_only, adm.admission.usage)
    cq = world.cache.snapshot.cluster_queues.get(cq_name)
    if cq is None:
        active = workloads.condition(
            "Active",
            False,
            "ClusterQueueDoesNotExist",
            "Can't submit new workloads to clusterQueue",
            now,
        )
    elif not cq.active:
        active = workloads.condition(
            "Active",
            False,
            conditions.QueueActiveReason.CLUSTER_QUEUE_IS_INACTIVE,
            "Can't submit new workloads to clusterQueue",
            now,
        )
    elif not _selects(cq.namespace_selector, world.cache.namespace_labels(namespace), namespace):
        active = workloads.condition(
            "Active",
            False,
            conditions.QueueActiveReason.NAMESPACE_NOT_SELECTED,
            f"ClusterQueue {cq_name}'s namespaceSelector does not select namespace {namespace}: "
            "its workloads are never admitted; an admin changes the selector or the namespace's "
            "labels",
            now,
        )
    else:
        active = workloads.condition(
            "Active",
            True,
            conditions.QueueActiveReason.READY,
            "Can submit new workloads to localQueue",
            now,
        )

    def listing(amounts: dict[resources.FlavorResource, int]) -> list[dict[str, Any]]:
        by_flavor: dict[str, list[dict[str, str]]] = {}
        for fr in sorted(amounts):
            by_flavor.setdefault(fr.flavor, []).append(
                {"name": fr.resource, "total": quantity.format(fr.resource, amounts[fr])}
            )
        return [{"name": f, "resources": r} for f, r in by_flavor.items()]

    status: dict[str, Any] = {
        "pendingWorkloads": pending,
        "reservingWorkloads": reserving,
        "admittedWorkloads": n_admitted,
        "flavorsReservation": listing(usage),
        "flavorsUsage": listing(admitted_only),
        "conditions": [active],
    }
    tracked = world.queues.usage.usage(names.WorkloadKey(namespace, name))
    if tracked is not None:
        consumed, last = tracked
        status["fairSharing"] = {
            "admissionFairSharingStatus": {
                "consumedResources": {r: _decimal(v) for r, v in sorted(consumed.items())},
                "lastUpdate": workloads.timestamp(last),
            }
        }
    return status


def _decimal(value: float) -> str:
    """A decayed usage as a quantity, to a millionth (Kueue keeps nano units, rounded down)."""
    text = f"{max(value, 0.0):.6f}".rstrip("0").rstrip(".")
    return text or "0"


def _comparable(status: dict[str, Any]) -> Any:  # noqa: ANN401 - a JSON value
    """A status without condition times, to tell whether anything changed."""
    out = dict(status)
    out["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status["conditions"]
    ]
    return out


class StatusPort(Protocol):
    """Where queue statuses go: one merge patch of a ClusterQueue's or LocalQueue's status."""

    async def patch(self, ident: tuple[str, str, str], status: dict[str, Any]) -> None:
        """Write ``status`` to ``("cq", "", name)`` or ``("lq", namespace, name)``."""


class KubeStatusPort:
    """The ``StatusPort`` of a real API server."""

    def __init__(self, kube: client.KubeRequests) -> None:
        self.kube = kube

    async def patch(self, ident: tuple[str, str, str], status: dict[str, Any]) -> None:
        """Merge-patch the queue's status subresource."""
        kind, namespace, name = ident
        if kind == "cq":
            await queues_status.patch_cluster_queue(self.kube, name, status)
        else:
            await queues_status.patch_local_queue(self.kube, namespace, name, status)


class StatusWriter:
    """Writes queue statuses that changed since they were last written successfully."""

    def __init__(self, world: ports.StatusWorld, port: StatusPort) -> None:
        self.world = world
        self.port = port
        self.written: dict[tuple[str, str, str], Any] = {}
        """What each queue's status was when last written (conditions' times left out)."""

    async def run(self) -> None:
        """Write statuses until cancelled."""
        w = self.world
        while True:
            await w.wake.statuses.wait()
            w.wake.statuses.clear()
            try:
                await self.write_all()
            except errors.KubeError as e:
                log.warning("queue status: %s", e)
                w.wake.statuses.set()
            await asyncio.sleep(_INTERVAL)

    async def write_all(self) -> None:
        """Write every queue status that changed; raise the first failure after trying them all.

        A status counts as written only once its patch succeeded, so a failed write is tried
        again on the next pass even if nothing else changes meanwhile.
        """
        w = self.world
        now = w.clock()
        counts = count(w)
        targets: list[tuple[tuple[str, str, str], dict[str, Any]]] = [
            (("cq", "", cq_name), build_cluster_queue(w, cq_name, now, counts))
            for cq_name in sorted(w.cache.cluster_queues)
            if cq_name in w.cache.snapshot.cluster_queues
        ]
        targets.extend(
            (("lq", namespace, name), build_local_queue(w, namespace, name, now, counts))
            for namespace, name in sorted(w.cache.local_queues)
        )
        failure: errors.KubeError | None = None
        for ident, status in targets:
            comparable = _comparable(status)
            if self.written.get(ident) == comparable:
                continue
            try:
                await self.port.patch(ident, status)
            except errors.NotFoundError:
                continue  # deleted; its delete event drops it from the cache
            except errors.KubeError as e:
                self.written.pop(ident, None)
                failure = failure or e
                continue
            self.written[ident] = comparable
        if failure is not None:
            raise failure
