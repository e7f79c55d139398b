"""A small REST client for the harness: one aiohttp session, every request counted.

The harness must not be what limits a run, so it talks to the API server directly with aiohttp
(raw JSON, no model classes) rather than through a generated client; the adapter's
``kubeconfig`` and ``credentials`` read the kubeconfig. It counts its own requests so the API
server's request total can be split into the harness's share and the operator's. Errors:

    ApiError            a non-2xx answer (``status`` holds the code; 409 is ``Conflict``)
    └── Conflict        the object exists, or the resourceVersion was stale
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import AsyncIterator
from typing import Any, Self

import aiohttp

from berth.adapters.kube import credentials, kubeconfig

MERGE_PATCH = "application/merge-patch+json"
_CONFLICT = 409


class ApiError(Exception):
    """The API server answered with an error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message[:300]}")
        self.status = status


class Conflict(ApiError):  # noqa: N818 - named as the HTTP status it stands for
    """409: already exists, or a stale resourceVersion."""


class Api:
    """One API server session; ``requests`` counts what was sent, by verb."""

    def __init__(
        self, session: aiohttp.ClientSession, server: str, headers: dict[str, str]
    ) -> None:
        self.session = session
        self.server = server.rstrip("/")
        self.headers = headers
        self.requests: collections.Counter[str] = collections.Counter()

    @classmethod
    async def open(cls, kubeconfig_path: str | None, *, connections: int = 64) -> Self:
        """Open a session from a kubeconfig file (or the default one).

        The credentials are taken once: an exec plugin's token is not renewed during a run.
        """
        creds = credentials.Credentials(kubeconfig.load(kubeconfig_path))
        headers = {"Accept": "application/json"}
        auth = await creds.authorization()
        if auth:
            headers["Authorization"] = auth
        ctx = creds.tls()
        connector = aiohttp.TCPConnector(ssl=ctx, limit=connections)
        session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)
        )
        return cls(session, creds.target.server, headers)

    async def close(self) -> None:
        """Close the session."""
        await self.session.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,  # noqa: ANN401 - any JSON
        *,
        content_type: str = "application/json",
        seconds: float = 60.0,
    ) -> dict[str, Any]:
        """Send one request and return its JSON answer."""
        self.requests[method] += 1
        data = None if body is None else json.dumps(body)
        headers = {**self.headers, "Content-Type": content_type}
        async with self.session.request(
            method,
            self.server + path,
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=seconds),
        ) as response:
            raw = await response.read()
            if response.status >= 300:
                cls = Conflict if response.status == _CONFLICT else ApiError
                raise cls(response.status, raw.decode(errors="replace"))
            out: dict[str, Any] = json.loads(raw) if raw else {}
            return out

    async def text(self, path: str) -> str:
        """GET a plain-text endpoint (``/metrics``)."""
        return (await self.raw(path)).decode()

    async def raw(self, path: str, *, seconds: float | None = None) -> bytes:
        """GET a non-JSON endpoint (``/metrics``, ``/debug/pprof/...``) and return its bytes."""
        self.requests["GET"] += 1
        timeout = self.session.timeout if seconds is None else aiohttp.ClientTimeout(total=seconds)
        async with self.session.get(
            self.server + path, headers=self.headers, timeout=timeout
        ) as response:
            raw = await response.read()
            if response.status >= 300:
                raise ApiError(response.status, raw.decode(errors="replace"))
            return raw

    async def create(
        self, collection: str, body: dict[str, Any], *, exist_ok: bool = False
    ) -> None:
        """POST ``body`` to ``collection``; with ``exist_ok`` an existing object is fine."""
        try:
            await self.request("POST", collection, body)
        except Conflict:
            if not exist_ok:
                raise

    async def watch(
        self,
        collection: str,
        resource_version: str,
        *,
        label_selector: str = "",
        timeout_seconds: int = 290,
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the watch events of ``collection`` after ``resource_version``, one request."""
        self.requests["WATCH"] += 1
        url = (
            f"{self.server}{collection}?watch=1&allowWatchBookmarks=true"
            f"&resourceVersion={resource_version}&timeoutSeconds={timeout_seconds}"
            f"&labelSelector={label_selector}"
        )
        async with self.session.get(
            url,
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=timeout_seconds + 30, sock_read=None),
        ) as response:
            if response.status >= 300:
                raw = await response.read()
                raise ApiError(response.status, raw.decode(errors="replace"))
            # Events are newline-delimited JSON; a long status can exceed aiohttp's line limit,
            # so lines are split here rather than with readline().
            buffer = b""
            async for chunk in response.content.iter_any():
                lines = (buffer + chunk).split(b"\n")
                buffer = lines.pop()
                for line in lines:
                    if line.strip():
                        event: dict[str, Any] = json.loads(line)
                        yield event
                await asyncio.sleep(0)
