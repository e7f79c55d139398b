"""The operator's background machinery: the leader's supervised tasks and the Event recorder."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

import fakeapi
from berth.adapters import wakeup
from berth.adapters.kube import client, errors, events, leader
from berth.api import configuration
from berth.entry import operator_main as main
from berth.operator import finalizers, jobcontroller, lifecycle, mailbox, scheduler, ungater
from berth.operator import world as world_mod


class _BoomError(RuntimeError):
    pass


async def test_a_dying_leader_task_fails_the_operator_and_cancels_the_others() -> None:
    failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def dies() -> None:
        await asyncio.sleep(0)
        raise _BoomError

    with pytest.raises(ExceptionGroup):
        await main.supervise([forever(), dies()], failed)
    failure = failed.exception()
    assert isinstance(failure, ExceptionGroup)
    assert failure.subgroup(_BoomError) is not None
    assert cancelled.is_set()


async def test_a_leader_task_that_lost_the_api_server_ends_the_term_not_the_operator() -> None:
    failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def loses_the_server() -> None:
        await asyncio.sleep(0)
        raise errors.TransientError("GET /apis: Cannot connect to host 127.0.0.1")

    await main.supervise([forever(), loses_the_server()], failed)
    assert not failed.done(), "the process goes on; leader.run_while_leader competes again"
    assert cancelled.is_set()


class _FakeKube:
    """Answers Event POSTs after ``release`` is set; fails those about ``refuse``."""

    def __init__(self, refuse: str = "") -> None:
        self.posted: list[dict[str, Any]] = []
        self.called = asyncio.Event()
        self.release = asyncio.Event()
        self.refuse = refuse

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
        self.called.set()
        await self.release.wait()
        assert (method, path) == ("POST", "/api/v1/namespaces/team/events")
        if body["involvedObject"]["name"] == self.refuse:
            raise errors.TransientError("refused")
        event: dict[str, Any] = body  # the Event as posted, which the API server echoes
        self.posted.append(event)
        return event


def _workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
    }


_Task = Callable[[world_mod.World, client.Kube], Coroutine[Any, Any, None]]
_LEADER_TASKS: list[tuple[str, _Task, Callable[[mailbox.Wakeups], asyncio.Event]]] = [
    (
        "scheduler",
        lambda w, k: scheduler.Scheduler(w, k, events.Recorder(k)).run(),
        lambda wake: wake.schedule,
    ),
    (
        "job controller",
        lambda w, k: jobcontroller.JobController(w, k).run(),
        lambda wake: wake.jobs,
    ),
    ("ungater", lambda w, k: ungater.Ungater(w, k).run(), lambda wake: wake.ungate),
    ("lifecycle", lambda w, k: lifecycle.Lifecycle(w, k).run(), lambda wake: wake.lifecycle),
    ("finalizers", lambda w, k: finalizers.Finalizers(w, k).run(), lambda wake: wake.finalizers),
]


@pytest.mark.parametrize(
    ("task", "event"), [(t, e) for _, t, e in _LEADER_TASKS], ids=[n for n, _, _ in _LEADER_TASKS]
)
async def test_a_leader_task_woken_as_its_term_ends_still_ends(
    task: _Task, event: Callable[[mailbox.Wakeups], asyncio.Event]
) -> None:
    """Cancelled in the loop turn its wake-up is set, a task ends (or the term never would)."""
    world = world_mod.World(configuration.Configuration(), lambda: 0.0)
    kube: Any = object()  # an empty world sends nothing
    running = asyncio.create_task(task(world, kube))
    await asyncio.sleep(0.05)  # asleep on its wake-up
    event(world.wake).set()
    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=2)
    running.cancel()
    assert running in done
    assert running.cancelled()


@pytest.mark.parametrize(
    ("set_at", "seconds", "woken"), [(0.0, 1.0, True), (None, 0.01, False), (0.0, None, True)]
)
async def test_woken_tells_whether_the_event_was_set(
    set_at: float | None, seconds: float | None, woken: bool
) -> None:
    event = asyncio.Event()
    if set_at is not None:
        asyncio.get_running_loop().call_later(set_at, event.set)
    assert await wakeup.woken(event, seconds) is woken


async def test_the_recorder_never_waits_and_drops_what_does_not_fit() -> None:
    async with asyncio.timeout(10):
        kube = _FakeKube(refuse="c")
        recorder = events.Recorder(kube, capacity=3, senders=1)
        sender = asyncio.create_task(recorder.run())
        for name in "abcde":
            recorder.record(_workload(name), "QuotaReserved", f"reserved {name}", 0.0)
        await kube.called.wait()  # the sender took "a" and waits for the API server
        recorder.record(_workload("f"), "Admitted", "The workload is admitted", 0.0)
        kube.release.set()
        await recorder.flush()
        sender.cancel()
    assert [e["involvedObject"]["name"] for e in kube.posted] == ["a", "b", "f"]
    assert [e["reason"] for e in kube.posted] == ["QuotaReserved", "QuotaReserved", "Admitted"]
    assert (recorder.sent, recorder.failed, recorder.dropped) == (3, 1, 2)


async def test_a_term_whose_work_does_not_end_after_its_cancel_stops_the_process() -> None:
    """A lost lease cancels the leader's work; if it ignores that, the replica must not go on.

    Competing again could make it lead twice, and waiting for ever would stall every queue; the
    error ends the operator, so a restart (a new pod) takes over.
    """
    kube = fakeapi.FakeKube(time.time)
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "berth"}})
    leads = 0
    deafened = True

    async def deaf() -> None:
        nonlocal leads
        leads += 1
        kube.fail("PUT", "/apis/coordination.k8s.io", times=1000)  # no renewal from now on
        while deafened:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)

    running = asyncio.create_task(
        leader.run_while_leader(
            kube,
            name="leader",
            namespace="berth",
            identity="a",
            lead=deaf,
            renew_deadline=0,
            retry_period=0,
            stop_grace=0.2,
        )
    )
    done, _ = await asyncio.wait({running}, timeout=5)
    failure = running.exception() if running in done else None
    running.cancel()
    deafened = False  # so that the loop can end
    assert isinstance(failure, leader.TermStuckError)
    assert leads == 1, "never competes again while the stuck term's work runs"
