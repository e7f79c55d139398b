"""A small in-memory world for core and state tests: objects from builders, a cache, a clock.

``World`` feeds builder objects into ``berth.state`` (``Cache.upsert`` and the transitions of
``state.lifecycle``, the code the operator and the simulator run), turns Workloads into
``WorkloadInfo`` and admits them, so core tests talk in YAML-shaped builders and check the core's
answers against hand-computed numbers. A cycle's evictions take effect at once, as in the
simulator.
"""

from __future__ import annotations

import itertools
from typing import Any

import builders
from berth.api import names, workload
from berth.core import cycle, flavors, resources, snapshot
from berth.core import workload as core_workload
from berth.state import lifecycle
from berth.state.queues import pending


def fr(flavor: str, resource: str) -> resources.FlavorResource:
    """A flavor-resource key."""
    return resources.FlavorResource(names.FlavorName(flavor), names.ResourceName(resource))


class World:
    """Objects, admitted workloads and pending queues, with the core one call away."""

    def __init__(self, *objects: Any, namespaces: dict[str, dict[str, str]] | None = None) -> None:
        self.state = lifecycle.Lifecycle()
        self.cache = self.state.cache
        self.queues = self.state.queues
        self._uids = itertools.count()
        self.now = 0.0
        for ns, labels in (namespaces or {"default": {}}).items():
            self.cache.upsert_namespace(ns, labels)
        self.add(*objects)

    def add(self, *objects: Any) -> World:
        """Add objects (builders or models) in order."""
        for item in objects:
            obj = item.obj() if hasattr(item, "obj") else item
            if not self.cache.upsert(obj):
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
        result = self.state.schedule(self.now, policy or cycle.Policy())
        if result is None:
            return cycle.CycleResult()
        self.state.apply_cycle(result, self.now, _InstantEffects(self))
        return result

    def finish(self, key: names.WorkloadKey) -> None:
        """Release an admitted workload's quota."""
        self.state.release(key, self.now)


class _InstantEffects:
    """A cycle's effects in a test world: a victim is released and queued again at once."""

    def __init__(self, world: World) -> None:
        self.world = world

    def evicting(self, decision: cycle.Preempt) -> None:
        w = self.world
        w.state.release(decision.victim.info.key, w.now)
        w.state.enqueue(decision.victim.info, w.now)

    def admitted(self, decision: cycle.Admit) -> None:
        pass  # counted by the state already

    def parked(self, decision: cycle.Pending, same_shape: list[pending.Told]) -> None:
        pass  # the queues hold them already
