"""A small in-memory world for core and state tests: objects from builders, a cache, a clock.

``World`` feeds builder objects into ``berth.state.cache.Cache`` (the same path the operator and
the simulator use), turns Workloads into ``WorkloadInfo`` and admits them, so core tests talk in
YAML-shaped builders and check the core's answers against hand-computed numbers.
"""

from __future__ import annotations

import itertools
from typing import Any

import builders
from berth.api import clusterqueue, cohort, localqueue, names, resourceflavor, workload
from berth.core import cycle, flavors, resources, snapshot
from berth.core import workload as core_workload
from berth.state import cache as cache_mod
from berth.state import queues as queues_mod


def fr(flavor: str, resource: str) -> resources.FlavorResource:
    """A flavor-resource key."""
    return resources.FlavorResource(names.FlavorName(flavor), names.ResourceName(resource))


class World:
    """Objects, admitted workloads and pending queues, with the core one call away."""

    def __init__(self, *objects: Any, namespaces: dict[str, dict[str, str]] | None = None) -> None:
        self.cache = cache_mod.Cache()
        self.queues = queues_mod.QueueManager(self.cache)
        self._uids = itertools.count()
        self.now = 0.0
        for ns, labels in (namespaces or {"default": {}}).items():
            self.cache.upsert_namespace(ns, labels)
        self.add(*objects)

    def add(self, *objects: Any) -> World:
        """Add objects (builders or models) in order."""
        for item in objects:
            obj = item.obj() if hasattr(item, "obj") else item
            if isinstance(obj, resourceflavor.ResourceFlavor):
                self.cache.upsert_flavor(obj)
            elif isinstance(obj, cohort.Cohort):
                self.cache.upsert_cohort(obj)
            elif isinstance(obj, clusterqueue.ClusterQueue):
                self.cache.upsert_cluster_queue(obj)
            elif isinstance(obj, localqueue.LocalQueue):
                self.cache.upsert_local_queue(obj)
            else:
                raise TypeError(f"World cannot add {type(obj).__name__}")
        return self

    @property
    def snap(self) -> snapshot.Snapshot:
        """The live snapshot."""
        return self.cache.snapshot

    def info(
        self, wl: builders.WorkloadBuilder | workload.Workload, *, at: float | None = None
    ) -> core_workload.WorkloadInfo:
        """The core's view of a workload (priority from ``spec.priority``, default 0)."""
        obj = wl.obj() if isinstance(wl, builders.WorkloadBuilder) else wl
        return core_workload.from_api(
            obj,
            priority=obj.spec.priority or 0,
            creation_time=self.now if at is None else at,
            uid=f"uid-{next(self._uids):04d}",
        )

    def cq(self, name: str) -> snapshot.ClusterQueueInfo:
        """A ClusterQueue's settings."""
        return self.snap.cluster_queues[names.ClusterQueueName(name)]

    def assign(
        self, info: core_workload.WorkloadInfo, cq: str, policy: cycle.Policy | None = None
    ) -> tuple[flavors.Assignment, list[Any]]:
        """Run flavor assignment (and preemption search) for ``info`` in ``cq``."""
        with self.snap.what_if():
            return cycle.get_assignment(self.snap, self.cq(cq), info, policy or cycle.Policy())

    def admit(
        self, info: core_workload.WorkloadInfo, cq: str, *, at: float | None = None
    ) -> core_workload.Admission:
        """Admit a workload that must fit now, and count it."""
        assignment, targets = self.assign(info, cq)
        assert assignment.mode == flavors.Mode.FIT, assignment.message()
        assert not targets
        admission = assignment.to_admission(names.ClusterQueueName(cq))
        self.cache.assume(info, admission, self.now if at is None else at)
        return admission

    def usage(self, cq: str) -> dict[tuple[str, str], int]:
        """A ClusterQueue's usage as {(flavor, resource): amount}."""
        return {
            (k.flavor, k.resource): v
            for k, v in self.snap.usage_of(names.ClusterQueueName(cq)).items()
        }

    def submit(self, info: core_workload.WorkloadInfo) -> None:
        """Queue a pending workload."""
        self.queues.add(info)

    def cycle(self, policy: cycle.Policy | None = None) -> cycle.CycleResult:
        """Run one scheduling cycle over the queue heads and apply its decisions."""
        heads = self.queues.heads()
        result = cycle.schedule(
            self.snap,
            heads,
            self.now,
            policy or cycle.Policy(),
            cycle=self.queues.cycle,
            generation=self.cache.generation,
        )
        for p in result.preempted:
            self.cache.forget(p.victim.info.key)
            self.queues.add(p.victim.info)
            self.queues.requeue_inadmissible(self.cache.root_of(p.victim.cluster_queue), self.now)
        for a in result.admitted:
            self.cache.assume(a.info, a.admission, self.now)
            self.queues.admitted(a.info.key)
        for pending in result.pending:
            self.queues.requeue(pending)
        return result

    def finish(self, key: names.WorkloadKey) -> None:
        """Release an admitted workload's quota."""
        adm = self.cache.forget(key)
        if adm is not None:
            self.queues.requeue_inadmissible(self.cache.root_of(adm.cluster_queue), self.now)
