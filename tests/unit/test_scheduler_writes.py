"""The scheduler loop's writes: cycles go on while decisions are written, and stay consistent."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from berth.adapters.kube import errors, events
from berth.api import configuration, names
from berth.core import batchjob
from berth.entry.operator import scheduler as scheduler_mod
from berth.entry.operator import world as world_mod
from operator_env import cluster_queue, flavor, gpu_job, local_queue


class _FakeApi:
    """Workload status merge patches with resourceVersion checks; admissions wait for a gate."""

    def __init__(self) -> None:
        self.bodies: dict[str, dict[str, Any]] = {}
        self.rv = 100
        self.gate = asyncio.Event()
        self.admitting = asyncio.Event()
        self.evicted = asyncio.Event()
        self.conflicts = 0

    async def request(
        self, method: str, path: str, *, body: Any = None, content_type: str = ""
    ) -> dict[str, Any]:
        assert (method, content_type) == ("PATCH", "application/merge-patch+json")
        name = path.split("/")[-2]
        if "admission" in body["status"]:
            self.admitting.set()
            await self.gate.wait()
        stored = self.bodies[name]
        if body["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise errors.ConflictError("stale")
        stored = copy.deepcopy(stored)
        stored.setdefault("status", {}).update(body["status"])
        self.rv += 1
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.bodies[name] = stored
        if any(c["type"] == "Evicted" for c in body["status"].get("conditions", [])):
            self.evicted.set()
        return copy.deepcopy(stored)


def _workload(name: str, priority: int, rv: str) -> dict[str, Any]:
    job = gpu_job(name, "team", "lq", 4, runs_for="1s")
    obj, problems = batchjob.to_workload(job, uid=f"uid-{name}", honor_kueue=False)
    assert obj is not None, problems
    body: dict[str, Any] = obj.to_yaml_dict()
    body["metadata"].update(
        name=name, resourceVersion=rv, uid=f"wl-{name}", creationTimestamp="2026-01-01T00:00:00Z"
    )
    body["spec"]["priority"] = priority
    return body


def _world() -> world_mod.World:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    preemption = {"withinClusterQueue": "LowerPriority"}
    for kind, obj in (
        ("ResourceFlavor", flavor("a100", {"gpu": "a100"})),
        ("ClusterQueue", cluster_queue("cq", "team", {"a100": 4}, preemption=preemption)),
        ("LocalQueue", local_queue("lq", "team", "cq")),
    ):
        obj["metadata"]["resourceVersion"] = "1"
        world.apply(kind, obj)
    return world


def _true(body: dict[str, Any]) -> set[str]:
    conds = (body.get("status") or {}).get("conditions") or []
    return {c["type"] for c in conds if c["status"] == "True"}


def test_an_eviction_decided_while_the_admission_is_written_builds_on_what_it_stored() -> None:
    async def scenario() -> tuple[_FakeApi, world_mod.World]:
        api = _FakeApi()
        world = _world()
        low = _workload("low", 0, "10")
        api.bodies["low"] = copy.deepcopy(low)
        world.apply("Workload", low)
        sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))  # type: ignore[arg-type]
        loop = asyncio.create_task(sched.run())
        await asyncio.wait_for(api.admitting.wait(), 5)  # the admission of "low" is being written
        high = _workload("high", 100, "11")
        api.bodies["high"] = copy.deepcopy(high)
        world.apply("Workload", high)  # the next cycle preempts "low" while its write waits
        await asyncio.sleep(0.05)
        api.gate.set()
        await asyncio.wait_for(api.evicted.wait(), 5)
        loop.cancel()
        return api, world

    api, world = asyncio.run(scenario())
    assert api.conflicts == 0
    assert _true(api.bodies["low"]) == {"QuotaReserved", "Admitted", "Evicted", "Preempted"}
    assert api.bodies["low"]["status"]["admission"]["clusterQueue"] == "cq"
    assert world.cache.admitted[names.WorkloadKey("team", "low")].evicted
