"""The list-then-watch informer against a real kube-apiserver: order, reopened watches, 410.

ConfigMaps stand in for Workloads: the informer is the same for any kind, and they need neither
CRDs nor the operator's webhooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from berth.adapters.kube import client, errors, informer
from berth.devtools.devcluster import launcher

if TYPE_CHECKING:
    from conftest import ControlPlaneFactory


@dataclasses.dataclass
class _Calls:
    """What the informer called, in order: (callback, name, data value)."""

    seen: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    changed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    def note(self, what: str) -> Callable[[dict[str, Any]], None]:
        def call(obj: dict[str, Any]) -> None:
            assert obj["kind"] == "ConfigMap"
            assert obj["apiVersion"] == "v1"
            # The server tracks field owners on every create and update; the informer drops them.
            assert "managedFields" not in obj["metadata"]
            value = (obj.get("data") or {}).get("v", "")
            self.seen.append((what, obj["metadata"]["name"], value))
            self.changed.set()

        return call

    async def until(self, check: Callable[[], bool], what: str) -> None:
        """Wait (at most 10 s) until ``check`` holds, looking again after every call."""
        async with asyncio.timeout(10):
            while not check():
                self.changed.clear()
                await self.changed.wait()
        assert check(), f"{what}; saw {self.seen}"


def _config_map(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": value},
    }


async def _with_informer(
    plane: launcher.ControlPlane,
    body: Callable[[client.Kube, str, informer.Informer, _Calls], Awaitable[None]],
    *,
    watch_seconds: int = 300,
    before: Callable[[client.Kube, str], Awaitable[None]] | None = None,
) -> None:
    kube = await client.Kube.open(str(plane.kubeconfig))
    namespace = f"informer-{secrets.token_hex(3)}"
    await kube.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    calls = _Calls()
    inf = informer.Informer(
        kube,
        path=f"/api/v1/namespaces/{namespace}/configmaps",
        api_version="v1",
        kind="ConfigMap",
        apply=calls.note("apply"),
        remove=calls.note("remove"),
        watch_seconds=watch_seconds,
    )
    try:
        if before is not None:
            await before(kube, namespace)
        await body(kube, namespace, inf, calls)
    finally:
        with contextlib.suppress(errors.KubeError):
            await kube.request("DELETE", f"/api/v1/namespaces/{namespace}")
        await kube.close()


async def _run(inf: informer.Informer) -> asyncio.Task[None]:
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(inf.synced.wait(), 10)
    return task


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _cms(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


@pytest.mark.integration
async def test_informer_lists_then_follows_every_change_in_order(
    control_plane: launcher.ControlPlane,
) -> None:
    async def before(kube: client.Kube, ns: str) -> None:
        await kube.request("POST", _cms(ns), body=_config_map("a", "1"))

    async def body(kube: client.Kube, ns: str, inf: informer.Informer, calls: _Calls) -> None:
        task = await _run(inf)
        assert calls.seen == [("apply", "a", "1")]
        created = await kube.request("POST", _cms(ns), body=_config_map("b", "1"))
        assert "managedFields" not in created["metadata"]  # answers are decoded the same way
        await kube.request(
            "PATCH",
            f"{_cms(ns)}/a",
            body={"data": {"v": "2"}},
            content_type=client.MERGE_PATCH,
        )
        await kube.request("DELETE", f"{_cms(ns)}/b")
        await calls.until(lambda: len(calls.seen) == 4, "four callbacks")
        await _stop(task)
        assert calls.seen == [
            ("apply", "a", "1"),
            ("apply", "b", "1"),
            ("apply", "a", "2"),
            ("remove", "b", "1"),
        ]
        assert set(inf.known) == {(ns, "a")}
        assert inf.lists == 1

    await _with_informer(control_plane, body, before=before)


@pytest.mark.integration
async def test_informer_reopens_a_watch_the_server_ended_without_listing_again(
    control_plane: launcher.ControlPlane,
) -> None:
    async def body(kube: client.Kube, ns: str, inf: informer.Informer, calls: _Calls) -> None:
        task = await _run(inf)
        for i in range(3):
            # Each watch lasts a second: every change below lands on a reopened one.
            await asyncio.sleep(1.5)
            await kube.request("POST", _cms(ns), body=_config_map(f"c{i}", str(i)))
        await calls.until(lambda: len(calls.seen) == 3, "three applies")
        await asyncio.sleep(1.5)
        await _stop(task)
        assert calls.seen == [("apply", f"c{i}", str(i)) for i in range(3)]
        assert inf.lists == 1

    await _with_informer(control_plane, body, watch_seconds=1)


@pytest.fixture(scope="module")
def uncached_plane(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """A control plane without the watch cache: watches read etcd, whose history compacts."""
    return control_plane_factory("uncached", watch_cache=False)


@pytest.mark.integration
async def test_informer_lists_again_after_410_and_removes_what_vanished_meanwhile(
    uncached_plane: launcher.ControlPlane,
) -> None:
    async def before(kube: client.Kube, ns: str) -> None:
        for name in ("x", "y"):
            await kube.request("POST", _cms(ns), body=_config_map(name, "1"))

    async def body(kube: client.Kube, ns: str, inf: informer.Informer, calls: _Calls) -> None:
        await _stop(await _run(inf))
        assert sorted(calls.seen) == [("apply", "x", "1"), ("apply", "y", "1")]
        calls.seen.clear()
        # While nothing watches: y goes, z comes, and etcd compacts its history, as during a
        # long disconnection; resuming from the last resourceVersion then gets 410 Gone.
        await kube.request("DELETE", f"{_cms(ns)}/y")
        await kube.request("POST", _cms(ns), body=_config_map("z", "1"))
        uncached_plane.compact_etcd()
        task = asyncio.create_task(inf.run())
        await calls.until(lambda: inf.lists == 2 and len(calls.seen) == 3, "a relist")
        await _stop(task)
        assert sorted(calls.seen) == [
            ("apply", "x", "1"),
            ("apply", "z", "1"),
            ("remove", "y", "1"),
        ]
        assert set(inf.known) == {(ns, "x"), (ns, "z")}

    await _with_informer(uncached_plane, body, before=before)
