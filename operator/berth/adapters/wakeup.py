"""Waiting for a wake-up event with a deadline; used by every long-running task that sleeps on one.

The operator's leader tasks (scheduler, job controller, ungater, lifecycle, finalizers) and the
benchmark harness's timers sleep on an ``asyncio.Event`` with a deadline. They must not use
``asyncio.wait_for`` for it: on Python 3.11, when the task is cancelled in the same loop turn as
the event is set, ``wait_for`` returns as if woken and the cancellation is lost (CPython issue
gh-86296, fixed in 3.12 by building ``wait_for`` on ``asyncio.timeout``). A leader task that
loses the cancel at the end of its term never ends, so the term's teardown waits for it for ever
and the replica never competes for the lease again. ``asyncio.timeout`` delivers an outer
cancellation in every case.
"""

from __future__ import annotations

import asyncio
import contextlib


async def woken(event: asyncio.Event, seconds: float | None) -> bool:
    """Wait until ``event`` is set or ``seconds`` pass (None: no deadline).

    Returns whether the event was set; a cancellation of the caller always propagates.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()
