"""The scheduler loop's writes: pending conditions in the background, batches consistent."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

from berth.adapters.kube import errors, events
from berth.api import configuration, names
from berth.jobs import batchjob
from berth.operator import scheduler as scheduler_mod
from berth.operator import world as world_mod
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
        self.admission_gate: asyncio.Event | None = None
        """When set to an Event, admission writes wait for it."""
        self.admitting = asyncio.Event()
        self.order: list[tuple[str, str]] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        del query
        assert (method, content_type) == ("PATCH", "application/merge-patch+json")
        name = path.split("/")[-2]
        if "admission" not in body["status"]:
            if not any(c["type"] == "Evicted" for c in body["status"].get("conditions", [])):
                self.pending_sent.set()
                await self.gate.wait()
        elif self.admission_gate is not None:
            self.admitting.set()
            await self.admission_gate.wait()
        stored = self.bodies[name]
        if body["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise errors.ConflictError("stale")
        stored = copy.deepcopy(stored)
        stored.setdefault("status", {}).update(body["status"])
        self.rv += 1
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.bodies[name] = stored
        kinds = {c["type"] for c in body["status"].get("conditions", []) if c["status"] == "True"}
        self.order.append(
            (name, "evict" if "Evicted" in kinds else "admit" if kinds else "pending")
        )
        if "admission" in body["status"]:
            self.admitted.set()
        return copy.deepcopy(stored)


def _workload(
    name: str, rv: str, *, namespace: str = "team", queue: str = "lq", gpus: int = 4
) -> dict[str, Any]:
    job = gpu_job(name, namespace, queue, gpus, runs_for="1s")
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


async def test_an_admission_decided_while_a_pending_condition_is_written_builds_on_it() -> None:
    api = _FakeApi()
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    _apply_queues(world, 2, "1")
    wl = _workload("train", "10")
    api.bodies["train"] = copy.deepcopy(wl)
    world.apply("Workload", wl)
    sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))
    loop = asyncio.create_task(sched.run())
    await asyncio.wait_for(api.pending_sent.wait(), 5)  # "does not fit", being written
    _apply_queues(world, 4, "2")  # now it fits: the next cycle admits it
    await asyncio.sleep(0.05)
    api.gate.set()
    await asyncio.wait_for(api.admitted.wait(), 5)
    loop.cancel()
    assert api.conflicts == 0
    conds = {c["type"]: c["status"] for c in api.bodies["train"]["status"]["conditions"]}
    assert conds == {"QuotaReserved": "True", "Admitted": "True"}
    assert api.bodies["train"]["status"]["admission"]["clusterQueue"] == "cq"


def _admit_then_reclaim() -> tuple[_FakeApi, world_mod.World]:
    """Cycle 1 admits b1 borrowing; cycle 2 of the same batch reclaims that quota for a2.

    a1 (16 GPUs, more than the cohort has) heads queue a in cycle 1 and is parked, so a2 heads
    it in cycle 2, within a's nominal quota lent to b1: reclaimWithinCohort preempts b1.
    Admission writes wait for ``api.admission_gate``.
    """
    api = _FakeApi()
    api.admission_gate = asyncio.Event()
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    reclaim = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    objects: list[tuple[str, dict[str, Any]]] = [
        ("ResourceFlavor", flavor("a100", {"gpu": "a100"})),
        ("ClusterQueue", cluster_queue("a", "ns-a", {"a100": 4}, cohort="c", preemption=reclaim)),
        ("ClusterQueue", cluster_queue("b", "ns-b", {"a100": 4}, cohort="c", preemption=reclaim)),
        ("LocalQueue", local_queue("lq", "ns-a", "a")),
        ("LocalQueue", local_queue("lq", "ns-b", "b")),
    ]
    for kind, obj in objects:
        obj["metadata"]["resourceVersion"] = "1"
        world.apply(kind, obj)
    for name, ns, gpus in (("a1", "ns-a", 16), ("a2", "ns-a", 4), ("b1", "ns-b", 8)):
        wl = _workload(name, "10", namespace=ns, gpus=gpus)
        api.bodies[name] = copy.deepcopy(wl)
        world.apply("Workload", wl)
    return api, world


async def test_a_batch_cancelled_while_an_eviction_waits_for_its_admission_ends_cleanly() -> None:
    # The lease is lost while b1's admission write is in flight and its eviction waits for it:
    # the scheduler is cancelled, and ends as cancelled, with no error of its own.
    api, world = _admit_then_reclaim()
    sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))
    loop = asyncio.create_task(sched.run())
    await asyncio.wait_for(api.admitting.wait(), 5)
    await asyncio.sleep(0.01)  # the eviction is waiting for the admission now
    loop.cancel()
    with contextlib.suppress(asyncio.CancelledError):  # any other error would be logged
        await loop


async def test_an_eviction_decided_in_the_batch_that_admitted_the_victim_builds_on_it() -> None:
    """Cycle 1 admits b1 borrowing; cycle 2 of the same batch reclaims that quota for a2.

    a1 (16 GPUs, more than the cohort has) heads queue a in cycle 1 and is parked, so a2 heads
    it in cycle 2, within a's nominal quota lent to b1: reclaimWithinCohort preempts b1. Both
    decisions are taken before any write returns; the eviction must wait for b1's admission
    write and build on what it stored.
    """
    api, world = _admit_then_reclaim()
    sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))
    loop = asyncio.create_task(sched.run())
    await asyncio.wait_for(api.admitting.wait(), 5)  # b1's admission is being written
    b1 = world.cache.admitted[names.WorkloadKey("ns-b", "b1")]
    assert b1.evicted, "the reclaim was decided in the batch that admitted b1"
    assert sched.batches == 1
    assert api.admission_gate is not None  # _admit_then_reclaim installs it
    api.admission_gate.set()
    await asyncio.sleep(0.1)
    loop.cancel()
    assert api.conflicts == 0
    assert [o for o in api.order if o[0] == "b1"] == [("b1", "admit"), ("b1", "evict")]
    conds = {c["type"] for c in api.bodies["b1"]["status"]["conditions"] if c["status"] == "True"}
    assert conds == {"QuotaReserved", "Admitted", "Evicted", "Preempted"}
    assert api.bodies["b1"]["status"]["admission"]["clusterQueue"] == "b"
