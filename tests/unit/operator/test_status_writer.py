"""The queue status writer against a fake of its own port: a failed write is written again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from berth.adapters.kube import errors
from berth.api import configuration
from berth.operator import statuses
from berth.operator import world as world_mod
from operator_env import cluster_queue, flavor, local_queue

Ident = tuple[str, str, str]


class FakePort:
    """Records every patch; fails the patches it is told to fail, once each."""

    def __init__(self) -> None:
        self.patches: list[tuple[Ident, dict[str, Any]]] = []
        self.fail_next: dict[Ident, errors.KubeError] = {}
        self.wrote = asyncio.Event()

    async def patch(self, ident: Ident, status: dict[str, Any]) -> None:
        failure = self.fail_next.pop(ident, None)
        if failure is not None:
            raise failure
        self.patches.append((ident, status))
        self.wrote.set()

    def written(self) -> list[Ident]:
        return [ident for ident, _status in self.patches]


def _world() -> world_mod.World:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    world.apply("ResourceFlavor", flavor("a100", {"gpu": "a100"}))
    world.apply("ClusterQueue", cluster_queue("cq", "team", {"a100": 8}))
    world.apply("LocalQueue", local_queue("lq", "team", "cq"))
    return world


CQ: Ident = ("cq", "", "cq")
LQ: Ident = ("lq", "team", "lq")


async def test_every_queue_status_is_written_once_while_nothing_changes() -> None:
    port = FakePort()
    writer = statuses.StatusWriter(_world(), port)
    await writer.write_all()
    await writer.write_all()
    assert port.written() == [CQ, LQ]


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(errors.ConflictError("409 conflict", 409), id="conflict"),
        pytest.param(errors.TransientError("503 unavailable", 503), id="server unavailable"),
    ],
)
async def test_a_failed_write_is_retried_on_the_next_pass_though_nothing_changed(
    failure: errors.KubeError,
) -> None:
    port = FakePort()
    port.fail_next[CQ] = failure
    writer = statuses.StatusWriter(_world(), port)
    with pytest.raises(type(failure)):
        await writer.write_all()
    assert port.written() == [LQ], "the other queue's status is still written"
    await writer.write_all()
    assert port.written() == [LQ, CQ]
    await writer.write_all()
    assert port.written() == [LQ, CQ], "once written, an unchanged status is not sent again"


async def test_a_deleted_queue_is_not_retried() -> None:
    port = FakePort()
    port.fail_next[CQ] = errors.NotFoundError("404", 404)
    writer = statuses.StatusWriter(_world(), port)
    await writer.write_all()
    assert port.written() == [LQ]


async def test_the_run_loop_retries_a_failed_write_without_another_change() -> None:
    world = _world()
    port = FakePort()
    port.fail_next[CQ] = errors.TransientError("503 unavailable", 503)
    writer = statuses.StatusWriter(world, port)
    world.wake.statuses.set()
    task = asyncio.create_task(writer.run())
    try:
        async with asyncio.timeout(10):
            while CQ not in port.written():
                port.wrote.clear()
                await port.wrote.wait()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert sorted(port.written()) == [CQ, LQ]
