"""The finalizer task looks at what changed and at what is being deleted, not at everything.

With a thousand ClusterQueues, a pass over every one at each finished workload cost a fifth of
the operator's CPU on the large-scale harness shape; a pass now takes only the objects whose
body changed since the last and those being deleted (``finalizers.Finalizers.reconcile_due``).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from typing import Any

import builders
from berth.adapters.kube import errors
from berth.api import configuration, names
from berth.core import admission, workload
from berth.operator import finalizers
from berth.operator import world as world_mod
from operator_env import cluster_queue, flavor

GPU = "nvidia.com/gpu"
DELETED_AT = "2026-11-28T07:00:00Z"


@dataclasses.dataclass
class _Kube:
    """Stores finalizer patches as the API server would; records every request."""

    stored: dict[str, dict[str, Any]]
    sent: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    version: int = 100

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        del content_type, query
        self.sent.append((method, path.rsplit("/", 1)[-1] if method == "POST" else path))
        if method == "POST":
            return dict(body)
        name = path.rsplit("/", 1)[-1]
        obj = copy.deepcopy(self.stored[name])
        self.version += 1
        obj["metadata"]["finalizers"] = body["metadata"]["finalizers"]
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.stored[name] = obj
        return copy.deepcopy(obj)


def _objects() -> dict[str, dict[str, Any]]:
    objs = {"a100": flavor("a100", {"gpu": "a100"})}
    for name in ("cq-a", "cq-b", "cq-c"):
        objs[name] = cluster_queue(name, "team", {"a100": 4})
    for i, body in enumerate(objs.values(), 1):
        body["metadata"]["resourceVersion"] = str(i)
    return objs


def _path(kind: str, name: str) -> str:
    plural = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues"}[kind]
    return f"/apis/berth.dev/v1beta1/{plural}/{name}"


def _admit(world: world_mod.World, name: str, cq: str) -> names.WorkloadKey:
    b = builders.WorkloadBuilder(name, "team").queue("lq").pod_set("main", 1, {GPU: 1})
    info = workload.from_api(b.obj(), priority=0, creation_time=0.0, uid=name)
    adm = b.admitted(cq, {GPU: "a100"}).obj()
    assert adm.status is not None
    assert adm.status.admission is not None
    world.cache.assume(info, admission.from_status(info, adm.status.admission), 0.0)
    return info.key


def _kind(name: str) -> str:
    return "ResourceFlavor" if name == "a100" else "ClusterQueue"


class _Watched(finalizers.Finalizers):
    """Remembers which objects each pass looked at."""

    looked: list[str]

    async def reconcile(self, kind: str, name: str, body: dict[str, Any]) -> None:
        self.looked.append(name)
        await super().reconcile(kind, name, body)


async def test_each_pass_looks_only_at_what_changed_or_is_being_deleted() -> None:
    async with asyncio.timeout(10):
        world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
        kube = _Kube(_objects())
        for name, body in kube.stored.items():
            world.apply(_kind(name), copy.deepcopy(body))
        task = _Watched(world, kube)
        passes: list[list[tuple[str, str]]] = []
        looked: list[list[str]] = []

        async def one_pass() -> None:
            kube.sent.clear()
            task.looked = []
            assert not await task.reconcile_due()
            passes.append(list(kube.sent))
            looked.append(task.looked)

        await one_pass()  # 1: every object new, each gets the finalizer
        await one_pass()  # 2: the stored bodies came back changed; nothing to write
        used = _admit(world, "w0", "cq-b")
        world.wake.finalizers.clear()  # as the task does after a pass
        world.release(_admit(world, "w1", "cq-a"))
        assert not world.wake.finalizers.is_set(), "nothing is being deleted: no pass"
        await one_pass()  # 3: nothing changed
        for name in ("cq-b", "a100"):  # deleted by an admin: marked, finalizer kept
            marked = copy.deepcopy(kube.stored[name])
            marked["metadata"]["deletionTimestamp"] = DELETED_AT
            marked["metadata"]["resourceVersion"] = str(kube.version + 1)
            kube.version += 1
            kube.stored[name] = marked
            world.apply(_kind(name), copy.deepcopy(marked))
        await one_pass()  # 4: both still used, each told once in an Event
        await one_pass()  # 5: still used, nothing new to tell
        world.wake.finalizers.clear()
        world.release(used)
        assert world.wake.finalizers.is_set(), "a queue being deleted may hold nothing now"
        await one_pass()  # 6: cq-b holds nothing and goes; a100 is still named by cq-a, cq-c
    assert looked == [
        ["cq-a", "cq-b", "cq-c", "a100"],
        ["cq-a", "cq-b", "cq-c", "a100"],
        [],
        ["cq-b", "a100"],
        ["cq-b", "a100"],
        ["cq-b", "a100"],
    ]
    every = [("PATCH", _path(_kind(n), n)) for n in ("a100", "cq-a", "cq-b", "cq-c")]
    assert sorted(passes[0]) == sorted(every)
    assert passes[1:3] == [[], []]
    assert sorted(passes[3]) == [("POST", "events"), ("POST", "events")]
    assert passes[4] == []
    assert passes[5] == [("PATCH", _path("ClusterQueue", "cq-b"))]


async def test_a_failed_write_is_tried_again_on_the_next_pass() -> None:
    class _Refusing(_Kube):
        refusals = 1

        async def request(
            self,
            method: str,
            path: str,
            *,
            body: Any = None,
            content_type: str = "application/json",
            query: dict[str, str] | None = None,
        ) -> dict[str, Any]:
            if self.refusals and path.endswith("/cq-b"):
                self.refusals -= 1
                raise errors.TransientError("the API server is away")
            return await super().request(
                method, path, body=body, content_type=content_type, query=query
            )

    async with asyncio.timeout(10):
        world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
        kube = _Refusing(_objects())
        for name, body in kube.stored.items():
            world.apply(_kind(name), copy.deepcopy(body))
        task = finalizers.Finalizers(world, kube)
        first = await task.reconcile_due()
        kube.sent.clear()
        second = await task.reconcile_due()
        sent = list(kube.sent)
    assert first is True
    assert second is False
    assert sent == [("PATCH", _path("ClusterQueue", "cq-b"))]


async def test_a_finalizer_stripped_by_hand_is_put_back_on_the_next_pass() -> None:
    async with asyncio.timeout(10):
        world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
        kube = _Kube(_objects())
        for name, body in kube.stored.items():
            world.apply(_kind(name), copy.deepcopy(body))
        task = finalizers.Finalizers(world, kube)
        assert not await task.reconcile_due()
        assert not await task.reconcile_due()
        stripped = copy.deepcopy(kube.stored["cq-a"])
        stripped["metadata"]["finalizers"] = []
        kube.version += 1
        stripped["metadata"]["resourceVersion"] = str(kube.version)
        kube.stored["cq-a"] = stripped
        world.apply("ClusterQueue", copy.deepcopy(stripped))
        kube.sent.clear()
        assert not await task.reconcile_due()
        sent = list(kube.sent)
    assert sent == [("PATCH", _path("ClusterQueue", "cq-a"))]
