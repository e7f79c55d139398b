"""The one kind of mailbox between the watch intake and the leader's tasks: keys to look at again.

``World`` learns of changes from watch events and tells the tasks which objects need them
through ``Mailbox``es: the Jobs the job controller must reconcile, the Workloads whose priority
the lifecycle task rewrites, whose reactivation or requeue it writes, the admissions the
scheduler loop has in flight, the Workloads whose pods are ready, and the ResourceFlavors and
ClusterQueues (by kind and name) whose finalizer the finalizer task must look at. Posting a key
wakes the task that reads the mailbox (when it has one); the task takes keys in key order, so
passes are deterministic. ``Wakeups`` holds the one event per task that the mailboxes and the
watch intake set. Used by ``world`` and ``workload_machine`` (posting) and the tasks (reading).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Generic, TypeVar

from berth.api import names

K = TypeVar("K", names.WorkloadKey, names.JobKey, str, tuple[str, str])


class Mailbox(Generic[K]):
    """A set of keys for one task, that wakes the task when a key is posted."""

    __slots__ = ("_keys", "name", "wake")

    def __init__(self, name: str, wake: asyncio.Event | None = None) -> None:
        self.name = name
        """What the keys are waiting for (for logs and tests)."""
        self.wake = wake
        """The event of the task that reads this mailbox (None: read when the task runs)."""
        self._keys: set[K] = set()

    def add(self, key: K) -> None:
        """Post a key; wake the reading task."""
        self._keys.add(key)
        if self.wake is not None:
            self.wake.set()

    def keep(self, key: K) -> None:
        """Post a key again from the reading task itself, for its next pass (no wake-up)."""
        self._keys.add(key)

    def discard(self, key: K) -> None:
        """Take a key off without handling it (its object is gone or the need is over)."""
        self._keys.discard(key)

    def take(self) -> list[K]:
        """Every posted key, in key order, leaving the mailbox empty."""
        keys = sorted(self._keys)
        self._keys.clear()
        return keys

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[K]:
        return iter(sorted(self._keys))

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"Mailbox({self.name!r}, {len(self._keys)} keys)"


@dataclasses.dataclass(slots=True)
class Wakeups:
    """Signals from the handlers to the tasks that act on what changed."""

    schedule: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    statuses: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    jobs: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    lifecycle: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    finalizers: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    ungate: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
