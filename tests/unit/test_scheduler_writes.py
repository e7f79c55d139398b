"""The scheduler loop's writes: pending conditions in the background, admissions consistent."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from berth.adapters.kube import errors, events
from berth.api import configuration
from berth.core import batchjob
from berth.entry.operator import scheduler as scheduler_mod
from berth.entry.operator import world as world_mod
from operator_env import cluster_queue, flavor, gpu_job, local_queue


class _FakeApi:
    """Workload status merge patches with resourceVersion checks; pending ones wait for a gate."""

    def __init__(self) -> None:
        self.bodies: dict[str, dict[str, Any]] = {}
        self.rv = 100
        self.gate = asyncio.Event()
        self.pending_sent = asyncio.Event()
        self.admitted = asyncio.Event()
        self.conflicts = 0

    async def request(
        self, method: str, path: str, *, body: Any = None, content_type: str = ""
    ) -> dict[str, Any]:
        assert (method, content_type) == ("PATCH", "application/merge-patch+json")
        name = path.split("/")[-2]
        if "admission" not in body["status"]:
            self.pending_sent.set()
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
        if "admission" in body["status"]:
            self.admitted.set()
        return copy.deepcopy(stored)


def _workload(name: str, rv: str) -> dict[str, Any]:
    job = gpu_job(name, "team", "lq", 4, runs_for="1s")
    obj, problems = batchjob.to_workload(job, uid=f"uid-{name}", honor_kueue=False)
    assert obj is not None, problems
    body: dict[str, Any] = obj.to_yaml_dict()
    body["metadata"].update(
        name=name, resourceVersion=rv, uid=f"wl-{name}", creationTimestamp="2026-01-01T00:00:00Z"
    )
    return body


def _apply_queues(world: world_mod.World, gpus: int, rv: str) -> None:
    for kind, obj in (
        ("ResourceFlavor", flavor("a100", {"gpu": "a100"})),
        ("ClusterQueue", cluster_queue("cq", "team", {"a100": gpus})),
        ("LocalQueue", local_queue("lq", "team", "cq")),
    ):
        obj["metadata"]["resourceVersion"] = rv
        world.apply(kind, obj)


def test_an_admission_decided_while_a_pending_condition_is_written_builds_on_it() -> None:
    async def scenario() -> _FakeApi:
        api = _FakeApi()
        world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
        _apply_queues(world, 2, "1")
        wl = _workload("train", "10")
        api.bodies["train"] = copy.deepcopy(wl)
        world.apply("Workload", wl)
        sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))  # type: ignore[arg-type]
        loop = asyncio.create_task(sched.run())
        await asyncio.wait_for(api.pending_sent.wait(), 5)  # "does not fit", being written
        _apply_queues(world, 4, "2")  # now it fits: the next cycle admits it
        await asyncio.sleep(0.05)
        api.gate.set()
        await asyncio.wait_for(api.admitted.wait(), 5)
        loop.cancel()
        return api

    api = asyncio.run(scenario())
    assert api.conflicts == 0
    conds = {c["type"]: c["status"] for c in api.bodies["train"]["status"]["conditions"]}
    assert conds == {"QuotaReserved": "True", "Admitted": "True"}
    assert api.bodies["train"]["status"]["admission"]["clusterQueue"] == "cq"
