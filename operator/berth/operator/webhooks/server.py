"""This replica's webhook endpoint: the TLS server, its certificate, and who points at it.

- Local mode (``berth run``, ``berth up``): a certificate of this process's own
  (``certificates.Certificates``), and webhook configurations pointing at ``https://HOST:PORT``
  (``configurations.Url``) that this process registers.
- Cluster mode (``certificates.ClusterWebhooks``, as the Helm chart runs it): the certificate of
  the Secret every replica shares (``certificates.ServingFromSecret``), and the installer's
  configurations (the chart's, or ``webhooks/``), which point at the webhook Service and are
  never rewritten here.

``start`` serves ``routes.app``; ``register`` points the local configurations at it and
``unregister`` removes them when the operator stops; ``background`` is what must run beside it
(the Secret reader); ``not_ready`` tells ``/readyz`` what is missing; ``close`` stops serving.
Called by ``berth.entry.operator_main``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Coroutine
from typing import Any

from aiohttp import web

from berth.adapters import tls
from berth.adapters.kube import client, errors, jobs
from berth.jobs.framework import protocol
from berth.jobs.rules import job_sync
from berth.operator import world as world_mod
from berth.operator.webhooks import certificates, configurations, routes

log = logging.getLogger(__name__)


@dataclasses.dataclass(slots=True)
class WebhookServer:
    """One replica's webhook endpoint."""

    runner: web.AppRunner
    base_url: str
    certs: certificates.Certificates | None
    """Local mode: this process's own certificate."""
    serving: certificates.ServingFromSecret | None
    """Cluster mode: the shared Secret's certificate."""

    @classmethod
    async def start(
        cls,
        world: world_mod.World,
        kube: client.Kube,
        *,
        host: str,
        port: int,
        cluster: certificates.ClusterWebhooks | None,
    ) -> WebhookServer:
        """Serve the webhooks on ``host:port`` (0 picks a free port)."""
        certs = serving = None
        if cluster is None:
            certs = certificates.Certificates(host)
            context = certs.ssl_context()
        else:
            serving = certificates.ServingFromSecret(
                kube, world.config.namespace, cluster, tls.ServingContext()
            )
            context = serving.context.context

        async def read_parent(ref: job_sync.Parent, namespace: str) -> dict[str, Any] | None:
            integration = world.integrations.get(ref.kind)
            if integration is None:
                return None
            try:
                return await jobs.get(kube, integration, namespace, ref.name)
            except errors.KubeError as e:
                log.warning("could not read %s %s/%s: %s", ref.kind, namespace, ref.name, e)
                return None

        async def read_object(job: dict[str, Any]) -> bool:
            return await read_watched(kube, world, job)

        async def read_job(
            integration: protocol.Integration, namespace: str, name: str
        ) -> dict[str, Any] | None:
            return await jobs.get(kube, integration, namespace, name)

        runner = web.AppRunner(
            routes.app(world, read_parent, read_object, read_job), access_log=None
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=context)
        await site.start()
        server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname()[1] if sockets else port
        return cls(runner, f"https://{host}:{bound}", certs, serving)

    async def register(self, world: world_mod.World, kube: client.Kube) -> None:
        """Local mode: point Berth's webhook configurations at this server."""
        if self.certs is None:
            return
        endpoint = configurations.Url(self.base_url, self.certs.ca_bundle)
        for conf in configurations.build(endpoint, world.config, world.integrations):
            plural = conf["kind"].lower() + "s"
            await client.apply(kube, f"/apis/admissionregistration.k8s.io/v1/{plural}", conf)

    def background(self) -> list[Coroutine[Any, Any, None]]:
        """What must run while serving: in cluster mode, the reader of the shared Secret."""
        return [] if self.serving is None else [self.serving.run()]

    def not_ready(self) -> str | None:
        """Why this replica cannot answer admission requests yet, or None."""
        if self.serving is not None and not self.serving.ready:
            return f"no webhook certificate in secret {self.serving.config.secret} yet"
        return None

    async def unregister(self, kube: client.Kube) -> None:
        """Local mode: delete Berth's webhook configurations if they still point at this server.

        Left behind with ``failurePolicy: Fail``, they would refuse every labelled Job once this
        process is gone; a configuration another process re-pointed at itself is left alone.
        """
        if self.certs is None:
            return
        for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            path = f"/apis/admissionregistration.k8s.io/v1/{plural}/{configurations.NAME}"
            try:
                current = await kube.request("GET", path)
                urls = {
                    str((h.get("clientConfig") or {}).get("url") or "")
                    for h in current.get("webhooks") or []
                }
                if urls and all(u.startswith(f"{self.base_url}/") for u in urls):
                    await kube.request("DELETE", path)
            except errors.KubeError as e:
                log.warning("could not remove %s %s: %s", plural, configurations.NAME, e)

    async def close(self) -> None:
        """Stop serving."""
        await self.runner.cleanup()


async def read_watched(kube: client.Kube, world: world_mod.World, job: dict[str, Any]) -> bool:
    """Read the object a job reads into the World, if the watch has not shown it yet.

    True when it was read (the decision may change): a TrainJob's runtime applied just before
    the TrainJob may not have reached the watch yet.
    """
    reader = world.integrations.get(str(job.get("kind") or ""))
    if not isinstance(reader, protocol.Watching):
        return False
    key = reader.reads(job)
    if key is None or key in world.watched:
        return False
    watched = next(w for w in reader.watched if w.kind == key.kind)
    group, _, version = watched.api_version.rpartition("/")
    where = f"/namespaces/{key.namespace}" if watched.namespaced else ""
    try:
        found = await kube.request(
            "GET", f"/apis/{group}/{version}{where}/{watched.plural}/{key.name}"
        )
    except errors.NotFoundError:
        return False  # the refusal names the missing object; nothing to log
    except errors.KubeError as e:
        log.warning("could not read %s: %s", key, e)
        return False
    found.setdefault("apiVersion", watched.api_version)
    found.setdefault("kind", watched.kind)
    world.apply(watched.kind, found)
    return True
