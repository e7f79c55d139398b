"""A session with the API server: one aiohttp session from a kubeconfig, and raw JSON requests.

Every other module of the adapter sends its requests through ``Kube.request`` (or opens a watch
with ``Kube.stream``); those that only send requests, and the operator's tasks, take the narrow
``KubeRequests`` port, which the tests' in-memory API server answers too. ``Kube.request``
returns decoded JSON and raises only ``berth.adapters.kube.errors``. ``kubeconfig`` says where
the server is and ``credentials`` keeps the identity fresh; a 401 to a renewable credential (a
token file, an exec plugin) renews it and sends the request once more. ``login`` tells kopf how
to reach the same server with the same credentials. No generated client is used: Berth sends
JSON it builds and reads JSON back (docs/architecture.md says why). Called by the operator's
composition root, ``berth up`` and the live source of ``berth explain`` and ``berth queues``.
"""

from __future__ import annotations

import urllib.request
from typing import Any, Protocol

import aiohttp
import orjson

from berth.adapters.kube import credentials, errors, kubeconfig

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
"""Built-in kinds only: lists merge by key (a pod's scheduling gates) and ``$patch`` directives."""
CONNECTIONS = 64
"""Requests in flight at once per session; more wait for a connection. Each open TLS connection
holds a 256 KiB read buffer, so fewer hold less (baseline harness shape: peak RSS 313 MiB with 32,
321 with 64, 330 with 100); but a scheduler batch's admission writes all wait for connections,
and at 1,000 ClusterQueues 32 left small workloads waiting 90 s on average for their writes,
where 64 and 100 gave 2 s (docs/benchmarks.md, large-scale)."""

LEASE_CONNECTIONS = 2
"""Connections of the session that renews the Lease: its own, so that renewals never wait
behind the writes of a busy scheduler for one of the main session's connections."""

REQUEST_SECONDS = 30.0
"""How long one request (not a watch) may take, connecting included."""
READ_BUFFER = 2**21
"""Bytes aiohttp may buffer of one line: one watch event carries a whole object, which can be
larger than aiohttp's default."""
_UNAUTHORIZED = 401
_UNTRUSTED = (
    "set the cluster's certificate-authority to the CA that signed the server's certificate,"
    " or tls-server-name to a name it holds"
)


class KubeRequests(Protocol):
    """Raw JSON requests to one API server: what the operator's tasks and writers need."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,  # noqa: ANN401 - any JSON
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Send one request; return the decoded JSON answer (raises ``errors`` only)."""
        ...


class Kube:
    """An open session with one API server."""

    def __init__(self, creds: credentials.Credentials, session: aiohttp.ClientSession) -> None:
        self.credentials = creds
        self.session = session
        self.server = creds.target.server

    @classmethod
    async def open(
        cls, kubeconfig_path: str | None = None, *, connections: int = CONNECTIONS
    ) -> Kube:
        """Open a session from ``kubeconfig_path`` (or the default one, or the pod's account).

        At most ``connections`` requests are in flight at once; more wait for a connection.
        Raises ``PermanentError`` when no usable configuration is found, naming what to fix.
        """
        return await cls.connect(kubeconfig.load(kubeconfig_path), connections=connections)

    @classmethod
    async def connect(cls, target: kubeconfig.Target, *, connections: int = CONNECTIONS) -> Kube:
        """Open a session with ``target``'s server, as its identity; nothing is sent yet.

        At most ``connections`` requests are in flight at once; more wait for a connection.
        Raises ``PermanentError`` when the target's certificates cannot be loaded.
        """
        creds = credentials.Credentials(target)
        # With no proxy in the environment there is nothing to look up, and a session that
        # looks reads the proxy variables and ~/.netrc in a worker thread for every request.
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections, ssl=creds.tls()),
            trust_env=bool(urllib.request.getproxies()),
            read_bufsize=READ_BUFFER,
        )
        return cls(creds, session)

    async def login(self) -> credentials.Login:
        """The server and the current credentials of this session, for kopf."""
        return await self.credentials.login()

    async def close(self) -> None:
        """Close the session."""
        await self.session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,  # noqa: ANN401 - any JSON
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Send one request; return the decoded JSON answer."""
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        data = None if body is None else orjson.dumps(body)
        try:
            response = await self._send(
                method,
                path,
                query=list((query or {}).items()),
                headers=headers,
                data=data,
                seconds=REQUEST_SECONDS,
            )
            async with response:
                raw = await response.read()
                status = response.status
        except aiohttp.ClientConnectorCertificateError as e:
            # Trying again cannot help: the kubeconfig must name what the server presents.
            # ssl's own reason, not aiohttp's repeat of the whole connection, so the hint fits.
            where = self.credentials.target.source
            raise errors.PermanentError(
                f"{method} {path}: {e.certificate_error}; {where}: {_UNTRUSTED}"
            ) from e
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise errors.TransientError(f"{method} {path}: {e or type(e).__name__}") from e
        try:
            decoded: dict[str, Any] = decode(raw) if raw else {}
        except ValueError as e:
            if status >= 300:  # an HTTP error whose body is text ("404 page not found")
                text = raw.decode(errors="replace").strip()
                raise errors.from_status(status, f"{method} {path}: {status} {text}") from e
            raise errors.PermanentError(f"{method} {path}: {status}, not JSON") from e
        if status >= 300:
            message = decoded.get("message") or raw.decode(errors="replace")
            raise errors.from_status(status, f"{method} {path}: {status} {message}")
        return decoded

    async def stream(
        self, path: str, query: list[tuple[str, str]], *, seconds: float
    ) -> aiohttp.ClientResponse:
        """Open a GET whose answer is read as it comes (a watch); the caller releases it.

        Raises ``TransientError`` when the connection fails; the answer's status is the caller's.
        """
        try:
            return await self._send(
                "GET",
                path,
                query=query,
                headers={"Accept": "application/json"},
                data=None,
                seconds=seconds,
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise errors.TransientError(f"watch {path}: {e or type(e).__name__}") from e

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        headers: dict[str, str],
        data: bytes | None,
        seconds: float,
    ) -> aiohttp.ClientResponse:
        target = self.credentials.target

        async def once() -> aiohttp.ClientResponse:
            authorization = await self.credentials.authorization()
            return await self.session.request(
                method,
                self.server + path,
                params=query,
                data=data,
                headers={**headers, "Authorization": authorization} if authorization else headers,
                ssl=self.credentials.tls(),
                server_hostname=target.tls_server_name,
                proxy=target.proxy_url,
                timeout=aiohttp.ClientTimeout(total=seconds),
            )

        response = await once()
        if response.status == _UNAUTHORIZED and self.credentials.renewable:
            # An expired token file or plugin credential: renew it and send once more.
            response.release()
            self.credentials.unauthorized()
            response = await once()
        return response

    async def list_items(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """List every object under ``path``; return the items and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        query: dict[str, str] = {"limit": "500"}
        while True:
            page = await self.request("GET", path, query=query)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}  # a list's metadata: continue, resourceVersion
            token = meta.get("continue")
            if not token:
                return items, str(meta.get("resourceVersion") or "")
            query = {"limit": "500", "continue": token}


def decode(data: bytes | str) -> Any:  # noqa: ANN401 - any JSON
    """Decode the API server's JSON: an object, a list of them or a watch event.

    Every object in it (the top level, a list's items, a watch event's object) arrives without
    ``metadata.managedFields``: server-side apply's field ownership, which nothing in Berth
    reads, which a write without it leaves as stored, and which was the largest part of each
    Workload body the operator keeps. orjson shares the string of each dict key among all the
    bodies it decodes, so a kept body costs about a quarter less than with ``json``'s.
    """
    value = orjson.loads(data)
    if isinstance(value, dict):
        _drop_field_owners(value)
        _drop_field_owners(value.get("object"))
        items = value.get("items")
        if isinstance(items, list):
            for item in items:
                _drop_field_owners(item)
    return value


def _drop_field_owners(obj: object) -> None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


async def apply(kube: KubeRequests, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create ``body`` under ``collection``, or replace the object of that name if it exists."""
    name = body["metadata"]["name"]
    try:
        current = await kube.request("GET", f"{collection}/{name}")
    except errors.NotFoundError:
        return await kube.request("POST", collection, body=body)
    replaced = dict(body)
    replaced["metadata"] = {
        **body["metadata"],
        "resourceVersion": current["metadata"]["resourceVersion"],
    }
    return await kube.request("PUT", f"{collection}/{name}", body=replaced)
