"""List-then-watch of one kind, fed to callbacks: the operator's direct watch of Workloads.

``Informer.run`` lists every object under a collection path, hands each to ``apply``, then watches
from the list's resourceVersion, handing every added or modified object to ``apply`` and every
deleted one to ``remove``, until cancelled; bodies arrive as ``client.decode`` leaves them. It does
what client-go's reflector does for one kind, and no more: a watch the server ends (its
``timeoutSeconds``) is opened again from the last resourceVersion seen (bookmarks keep that
current); a connection failure is retried with a capped backoff; a resourceVersion the server no
longer has (410 Gone, as an HTTP status or an ``ERROR`` event) starts a fresh list, after which
every object known before and missing from the list is handed to ``remove``. Events reach the
callbacks in the order the server sent them, one at a time, on the caller's loop.

Workloads are the kind whose events come by the tens of thousands; the operator's composition
root (``berth.entry.operator_main``) runs one of these for them and leaves the other kinds to
kopf, whose per-event machinery (causes, per-object worker tasks, a batching window) cost a
third of the operator's time under load and delayed each event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable

import aiohttp

from berth.adapters.kube import client, errors
from berth.api import bodies
from berth.api.bodies import Body

log = logging.getLogger(__name__)

_BACKOFF_FIRST = 0.2
_GONE = 410
"""HTTP 410 Gone: the resourceVersion asked for is older than the server keeps."""
_BACKOFF_MAX = 5.0


class Gone(Exception):  # noqa: N818 - named for HTTP 410 Gone, which is what it means
    """The resourceVersion asked for is too old: list again."""


class Informer:
    """Keeps ``apply`` and ``remove`` told of every object of one kind, until cancelled."""

    def __init__(
        self,
        kube: client.Kube,
        *,
        path: str,
        api_version: str,
        kind: str,
        apply: Callable[[Body], None],
        remove: Callable[[Body], None],
        watch_seconds: int = 300,
    ) -> None:
        self.kube = kube
        self.path = path
        self.api_version = api_version
        self.kind = kind
        self._apply = apply
        self._remove = remove
        self.watch_seconds = watch_seconds
        """How long the server keeps one watch open; it ends it then, and another is opened."""
        self.known: dict[tuple[str, str], Body] = {}
        """The last body of every object seen, by (namespace, name): what a relist compares."""
        self.resource_version = ""
        """The last one seen; empty until the first list (set it to resume a watch from it)."""
        self.lists = 0
        """How many lists were made (1 plus one per 410)."""
        self.synced = asyncio.Event()
        """Set once the first list has been handed over."""

    async def run(self) -> None:
        """List (unless resuming from a resourceVersion), then watch; list again after a 410."""
        while True:
            if not self.resource_version:
                await self._list_until_done()
            try:
                await self._watch()
            except Gone:
                log.info("%s watch expired at %s; listing again", self.kind, self.resource_version)
                self.resource_version = ""

    async def _list_until_done(self) -> None:
        delay = _BACKOFF_FIRST
        while True:
            try:
                await self._list()
            except errors.KubeError as e:
                log.warning("listing %s failed, retrying in %.1fs: %s", self.kind, delay, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _BACKOFF_MAX)
            else:
                return

    async def _list(self) -> None:
        items, rv = await self.kube.list_items(self.path)
        self.lists += 1
        listed: set[tuple[str, str]] = set()
        for item in items:
            self._fill(item)
            listed.add(_key(item))
            self._seen(item)
        for key in [k for k in self.known if k not in listed]:
            # Deleted while no watch was open: the list is the only news of it.
            self._remove(self.known.pop(key))
        self.resource_version = rv
        self.synced.set()

    async def _watch(self) -> None:
        """Watch from the last resourceVersion until Gone; reopen after ends and failures."""
        delay = _BACKOFF_FIRST
        while True:
            try:
                # Closed at once when an event raises (Gone), so the response goes back then.
                async with contextlib.aclosing(self._stream()) as events:
                    async for kind, obj in events:
                        delay = _BACKOFF_FIRST
                        self._event(kind, obj)
            except (errors.TransientError, aiohttp.ClientError, TimeoutError, OSError) as e:
                log.warning("%s watch failed, reopening in %.1fs: %s", self.kind, delay, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _BACKOFF_MAX)

    def _event(self, kind: str, obj: Body) -> None:
        if kind == "ERROR":
            code = obj.get("code")
            if code == _GONE:
                raise Gone
            raise errors.TransientError(f"watch {self.path}: {obj.get('message') or obj}", code)
        rv = bodies.resource_version(obj)
        if rv:
            self.resource_version = str(rv)
        if kind == "BOOKMARK":
            return
        self._fill(obj)
        if kind == "DELETED":
            self.known.pop(_key(obj), None)
            self._remove(obj)
        else:
            self._seen(obj)

    def _seen(self, obj: Body) -> None:
        self.known[_key(obj)] = obj
        self._apply(obj)

    def _fill(self, obj: Body) -> None:
        # List items carry neither; watch events do, but the callbacks expect both always.
        obj.setdefault("apiVersion", self.api_version)
        obj.setdefault("kind", self.kind)

    async def _stream(self) -> AsyncGenerator[tuple[str, Body]]:
        """One watch request: its events, until the server ends it."""
        query = [
            ("watch", "true"),
            ("resourceVersion", self.resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(self.watch_seconds)),
        ]
        response = await self._open(query)
        try:
            async for line in response.content:
                if not line.strip():
                    continue
                event = client.decode(line)
                yield str(event.get("type") or ""), event.get("object") or {}
        finally:
            response.release()

    async def _open(self, query: list[tuple[str, str]]) -> aiohttp.ClientResponse:
        response = await self.kube.stream(self.path, query, seconds=self.watch_seconds + 30)
        if response.status == _GONE:
            response.release()
            raise Gone
        if response.status >= 300:
            text = await response.text()
            response.release()
            raise errors.from_status(response.status, f"watch {self.path}: {text[:200]}")
        return response


def _key(obj: Body) -> tuple[str, str]:
    meta = bodies.meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
