"""A session with the API server: an ``ApiClient`` from a kubeconfig, and raw JSON requests.

Every other module of the adapter sends its requests through ``Kube.request``, which returns
decoded JSON and raises only ``berth.adapters.kube.errors``. ``connection`` tells kopf how to
reach the same server with the same credentials. Called by the operator's composition root,
``berth up`` and the live source of ``berth explain`` and ``berth queues``.
"""

from __future__ import annotations

import dataclasses
import urllib.request
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import exceptions as k8s_exceptions

from berth.adapters.kube import errors

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


@dataclasses.dataclass(frozen=True, slots=True)
class Connection:
    """Where the API server is and how to authenticate: what kopf's login needs."""

    server: str
    ca_path: str | None
    token: str | None
    certificate_path: str | None
    private_key_path: str | None
    insecure: bool


class Kube:
    """An open session with one API server."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.api = api
        self._env_session: aiohttp.ClientSession | None = None
        if not urllib.request.getproxies():
            self._env_session = _without_env_lookups(api)

    @classmethod
    async def open(cls, kubeconfig: str | None = None, *, connections: int = CONNECTIONS) -> Kube:
        """Open a session from ``kubeconfig`` (or the default one, or in-cluster config).

        At most ``connections`` requests are in flight at once; more wait for a connection.
        Raises ``PermanentError`` when no usable configuration is found.
        """
        configuration = k8s.Configuration()
        configuration.connection_pool_maxsize = connections
        try:
            await k8s_config.load_kube_config(
                config_file=kubeconfig, client_configuration=configuration
            )
        except k8s_config.ConfigException as e:
            if kubeconfig is not None:
                raise errors.PermanentError(f"kubeconfig {kubeconfig}: {e}") from e
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except k8s_config.ConfigException as e2:
                msg = f"no kubeconfig ($KUBECONFIG, ~/.kube/config: {e}), not in a cluster ({e2})"
                raise errors.PermanentError(msg) from e2
        return cls(k8s.ApiClient(configuration))

    def connection(self) -> Connection:
        """The server and credentials of this session."""
        c = self.api.configuration
        auth = (c.api_key or {}).get("authorization") or (c.api_key or {}).get("BearerToken")
        token = None
        if auth:
            token = auth.removeprefix("Bearer ").strip()
        return Connection(
            server=str(c.host),
            ca_path=c.ssl_ca_cert,
            token=token,
            certificate_path=c.cert_file,
            private_key_path=c.key_file,
            insecure=not c.verify_ssl,
        )

    async def close(self) -> None:
        """Close the session."""
        await self.api.close()

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
        try:
            response = await self.api.call_api(
                path,
                method,
                query_params=list((query or {}).items()),
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=30,
            )
            data = await response.read()
            status = int(response.status)
        except k8s_exceptions.ApiException as e:
            raise errors.from_status(int(e.status or 0), _message(e)) from e
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise errors.TransientError(f"{method} {path}: {e}") from e
        try:
            decoded: dict[str, Any] = decode(data) if data else {}
        except ValueError as e:
            if status >= 300:  # an HTTP error whose body is text ("404 page not found")
                text = data.decode(errors="replace").strip()
                raise errors.from_status(status, f"{method} {path}: {status} {text}") from e
            raise errors.PermanentError(f"{method} {path}: {status}, not JSON") from e
        if status >= 300:
            message = decoded.get("message") or data.decode(errors="replace")
            raise errors.from_status(status, f"{method} {path}: {status} {message}")
        return decoded

    async def list_items(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """List every object under ``path``; return the items and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        query: dict[str, str] = {"limit": "500"}
        while True:
            page = await self.request("GET", path, query=query)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
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


def _without_env_lookups(api: k8s.ApiClient) -> aiohttp.ClientSession:
    """Give the client a session that does not read the environment on every request.

    kubernetes_asyncio opens its session with ``trust_env=True``, so aiohttp looks up proxy
    variables and reads ``~/.netrc`` in a worker thread for each request: a tenth of the
    operator's CPU under load. With no proxy configured there is nothing to find, so the same
    connection pool is used by a session that does not look. The old session is returned to be
    kept alive: it shares the pool, which the new session closes.
    """
    rest = api.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    # The read buffer kubernetes_asyncio sets: large objects in one watch event exceed the default.
    rest.pool_manager = aiohttp.ClientSession(
        connector=old.connector, trust_env=False, read_bufsize=2**21
    )
    return old


def _message(e: k8s_exceptions.ApiException) -> str:
    raw = e.body
    body = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw or "")
    try:
        parsed = orjson.loads(body) if body else {}
    except ValueError:
        parsed = {}
    if isinstance(parsed, dict) and parsed.get("message"):
        return f"{e.status} {parsed['message']}"
    return f"{e.status} {e.reason}"


async def apply(kube: Kube, collection: str, body: dict[str, Any]) -> dict[str, Any]:
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
