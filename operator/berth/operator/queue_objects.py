"""Queue objects from watch events into state: validated on read, never half-applied.

``QueueObjects.take`` receives ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
WorkloadPriorityClass, PriorityClass and Namespace bodies. It loads each into its model and
validates it with the webhook's own validators (``api.validation``). A ClusterQueue the
validators refuse stays, inactive, with its field errors; any other refused object is dropped.
It then feeds the cache (``Cache.upsert`` and ``delete``) and the priority classes
(``state.priorities``). It returns what changed (``Changed``), so ``World`` can requeue, wake the
tasks, or mark Workloads whose priority class changed value. The operator's own status writes
come back as watch events; they change nothing the cache reads and are dropped. Called by
``world.World``.
"""

from __future__ import annotations

import dataclasses
import logging

from berth.api import base, bodies, clusterqueue, kinds, names, priorityclass, validation
from berth.api.bodies import Body
from berth.operator import mailbox
from berth.state import cache as cache_mod
from berth.state import priorities

log = logging.getLogger(__name__)

FINALIZED_KINDS = frozenset({"ResourceFlavor", "ClusterQueue"})
"""Kinds kept from deletion while in use (``operator/finalizers``)."""


@dataclasses.dataclass(slots=True)
class Changed:
    """What taking in one object changed."""

    queues: bool = False
    """Queue objects, flavors, cohorts or namespaces: every pending workload is placed again."""
    class_value: str | None = None
    """A WorkloadPriorityClass whose value changed: the Workloads naming it are rewritten."""
    classes: bool = False
    """A priority class appeared or changed: Jobs still without a Workload are tried again."""
    finalized: bool = False
    """A ResourceFlavor or ClusterQueue body changed: the finalizer task looks again."""


def _deleting(body: Body) -> bool:
    return bodies.deleting(body)


def _key(body: Body) -> names.WorkloadKey:
    meta = bodies.meta(body)
    return names.WorkloadKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class QueueObjects:
    """Takes queue objects, namespaces and priority classes into the cache and the registry."""

    def __init__(self, cache: cache_mod.Cache, registry: priorities.Registry) -> None:
        self.cache = cache
        self.registry = registry
        self.finalized: dict[tuple[str, str], Body] = {}
        """The latest body of every ResourceFlavor and ClusterQueue, by (kind, name): the leader's
        finalizer task adds and removes ``berth.dev/resource-in-use`` on them."""
        self.finalize_due: mailbox.Mailbox[tuple[str, str]] = mailbox.Mailbox("queue objects")
        """Those whose body changed since the finalizer task last looked (``take_finalize_due``)."""
        self.deleting: set[tuple[str, str]] = set()
        """Those marked for deletion: what keeps them can change with any admission or queue, so
        the finalizer task looks at them on every pass."""
        self._consumed: dict[tuple[str, str, str], Body] = {}
        """What the cache last took from each queue object (everything but metadata and status)."""

    def take_finalize_due(self) -> list[tuple[str, str]]:
        """What the finalizer task must look at now, in key order.

        Every object whose body changed since it last looked, and every object being deleted.
        """
        return sorted({*self.finalize_due.take(), *self.deleting})

    def _finalized(self, kind: str, name: str, body: Body, *, deleted: bool) -> None:
        # The finalizer task reads these whole (metadata included).
        key = (kind, name)
        if deleted:
            self.finalized.pop(key, None)
            self.finalize_due.discard(key)
            self.deleting.discard(key)
            return
        self.finalized[key] = body
        self.finalize_due.add(key)
        if _deleting(body):
            self.deleting.add(key)
        else:
            self.deleting.discard(key)

    def take(self, kind: str, body: Body, *, deleted: bool) -> Changed:
        """Take in one object of these kinds (added, changed or deleted)."""
        if kind == "Namespace":
            return self._namespace(body, deleted=deleted)
        if kind == "PriorityClass":
            return self._pod_class(body, deleted=deleted)
        return self._queue_object(kind, body, deleted=deleted)

    def _queue_object(self, kind: str, body: Body, *, deleted: bool) -> Changed:
        key = _key(body)
        ident = (kind, key.namespace, key.name)
        changed = Changed(finalized=kind in FINALIZED_KINDS)
        if changed.finalized:
            self._finalized(kind, key.name, body, deleted=deleted)
        consumed = _consumed(body)
        if deleted:
            self._consumed.pop(ident, None)
            self.cache.refused.pop((kind, key.name), None)
        elif self._consumed.get(ident) == consumed:
            return changed  # the operator's own status write, or a label: nothing the cache reads
        obj, problems = kinds.try_load(body)
        if deleted or obj is None:
            # Deleted, or not even a model (an unknown field, a bad quantity, stored past the
            # webhook): never left half-applied, nor an older valid version left standing.
            if deleted:
                self._forget(kind, key)
            else:
                self._consumed[ident] = consumed
                self._invalid(kind, key, None, "; ".join(str(p) for p in problems))
            changed.queues = not (deleted and kind == "WorkloadPriorityClass")
            return changed
        self._consumed[ident] = consumed
        # Stored before the webhook ran (or past it): the same validators decide.
        refused = validation.validate(obj)
        if refused:
            cq = obj if isinstance(obj, clusterqueue.ClusterQueue) else None
            self._invalid(kind, key, cq, "; ".join(str(p) for p in refused))
            changed.queues = True
        elif isinstance(obj, priorityclass.WorkloadPriorityClass):
            if self.registry.set_workload_class(obj.name, obj.value):
                changed.class_value = obj.name
            changed.classes = True
        else:
            self.cache.refused.pop((kind, key.name), None)
            changed.queues = self.cache.upsert(obj)
        return changed

    def _invalid(
        self,
        kind: str,
        key: names.WorkloadKey,
        obj: clusterqueue.ClusterQueue | None,
        message: str,
    ) -> None:
        """Take an object the validators refuse: a ClusterQueue stays, inactive; others are gone.

        ``obj`` is the ClusterQueue's model, or None when it did not even load (its name is
        enough: nothing of its spec is applied).
        """
        log.warning("invalid %s %s, not applied: %s", kind, key, message)
        if kind in {"ResourceFlavor", "Topology"}:
            self.cache.refused[(kind, key.name)] = message
        if kind == "ClusterQueue":
            if obj is None:
                obj = clusterqueue.ClusterQueue(metadata=base.ObjectMeta(name=key.name))
            self.cache.upsert_cluster_queue(obj, invalid=message)
        else:
            self._forget(kind, key)

    def _forget(self, kind: str, key: names.WorkloadKey) -> None:
        """Drop a queue object by kind and name (deleted, or refused)."""
        if kind == "WorkloadPriorityClass":
            self.registry.drop_workload_class(key.name)
        else:
            self.cache.delete(kind, key.namespace, key.name)

    def _namespace(self, body: Body, *, deleted: bool) -> Changed:
        meta = bodies.meta(body)
        name = str(meta.get("name") or "")
        if deleted:
            self.cache.delete_namespace(name)
        else:
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            if self.cache.namespace_labels(name) == {"kubernetes.io/metadata.name": name, **labels}:
                return Changed()
            self.cache.upsert_namespace(name, labels)
        return Changed(queues=True)

    def _pod_class(self, body: Body, *, deleted: bool) -> Changed:
        name = bodies.name(body)
        if deleted:
            self.registry.drop_pod_class(name)
            return Changed()
        self.registry.set_pod_class(
            name, int(body.get("value") or 0), global_default=bool(body.get("globalDefault"))
        )
        return Changed(classes=True)


def _consumed(body: Body) -> Body:
    """The part of a queue object the cache reads: all but its metadata (name aside) and status.

    Compared in full rather than by ``metadata.generation``: a kind without a status
    subresource (ResourceFlavor, WorkloadPriorityClass) bumps it for any change, and one with
    it never bumps it for labels; the cache reads neither labels nor status.
    """
    out = {k: v for k, v in body.items() if k not in {"metadata", "status"}}
    # A ClusterQueue being deleted admits nothing new (Kueue's Terminating): the cache reads it.
    out["deletionTimestamp"] = bodies.meta(body).get("deletionTimestamp")
    return out
