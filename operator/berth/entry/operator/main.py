"""The operator's composition root: one event loop running kopf, webhooks and the leader's tasks.

``run`` opens the API session, starts the webhook server and registers its configurations,
starts kopf (watch events → ``World``), and competes for the Lease; while it leads it primes the
cache from a full list of every watched kind and then runs the scheduler loop, the job
controller and the queue status writer. Called by ``berth run`` and ``berth up``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import time
from collections.abc import Callable

import kopf
from aiohttp import web

from berth.adapters.kube import client, errors, leader
from berth.api import configuration
from berth.entry.operator import (
    handlers,
    jobcontroller,
    lifecycle,
    scheduler,
    statuses,
    webhooks,
)
from berth.entry.operator import world as world_mod

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
    """How to run the operator."""

    kubeconfig: str | None = None
    config: configuration.Configuration = dataclasses.field(
        default_factory=configuration.Configuration
    )
    webhook_host: str = "127.0.0.1"
    """Where the webhook server listens, and the host the API server calls back."""
    webhook_port: int = 0
    """0 picks a free port."""
    lease_name: str = "berth-leader"
    lease_duration: int = 15
    """Seconds a Lease lasts without renewal (whole seconds, as the Lease stores them)."""
    identity: str = dataclasses.field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}"
    )


async def prime(world: world_mod.World, kube: client.Kube) -> None:
    """Apply a full list of every watched kind, so the first cycle sees the whole cluster."""
    for kind, group, version, plural in handlers.WATCHED:
        prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        items, _rv = await kube.list_items(f"{prefix}/{plural}")
        api_version = version if not group else f"{group}/{version}"
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            world.apply(kind, item)
    log.info(
        "primed: %d workloads, %d admitted, %d pending",
        len(world.workloads),
        len(world.cache.admitted),
        len(world.queues.pending),
    )


async def _lead(world: world_mod.World, kube: client.Kube) -> None:
    log.info("leading: priming the cache")
    while True:
        try:
            await prime(world, kube)
            break
        except errors.KubeError as e:
            log.warning("priming failed, retrying: %s", e)
            await asyncio.sleep(1)
    world.wake.schedule.set()
    world.wake.statuses.set()
    await asyncio.gather(
        scheduler.Scheduler(world, kube).run(),
        jobcontroller.JobController(world, kube).run(),
        lifecycle.Lifecycle(world, kube).run(),
        statuses.StatusWriter(world, statuses.KubeStatusPort(kube)).run(),
    )


async def _ensure_namespace(kube: client.Kube, name: str) -> None:
    with contextlib.suppress(errors.ConflictError):
        await kube.request(
            "POST",
            "/api/v1/namespaces",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )


async def run(
    options: Options,
    *,
    stop: asyncio.Event | None = None,
    started: Callable[[world_mod.World], None] | None = None,
) -> None:
    """Run the operator until ``stop`` is set (or forever)."""
    stop = stop or asyncio.Event()
    kube = await client.Kube.open(options.kubeconfig)
    world = world_mod.World(options.config, time.time)
    certs = webhooks.Certificates(options.webhook_host)
    runner = web.AppRunner(webhooks.app(world), access_log=None)
    await runner.setup()
    site = web.TCPSite(
        runner, options.webhook_host, options.webhook_port, ssl_context=certs.ssl_context()
    )
    await site.start()
    server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
    sockets = getattr(server, "sockets", None) or []
    port = sockets[0].getsockname()[1] if sockets else options.webhook_port
    base_url = f"https://{options.webhook_host}:{port}"
    tasks: list[asyncio.Task[None]] = []
    kopf_stop = asyncio.Event()
    try:
        await _ensure_namespace(kube, options.config.namespace)
        for conf in webhooks.configurations(base_url, certs.ca_bundle, world):
            plural = conf["kind"].lower() + "s"
            await client.apply(kube, f"/apis/admissionregistration.k8s.io/v1/{plural}", conf)
        log.info("webhooks served at %s", base_url)
        tasks.append(
            asyncio.create_task(
                kopf.operator(
                    registry=handlers.registry(world, kube),
                    settings=handlers.settings(),
                    clusterwide=True,
                    standalone=True,
                    stop_flag=kopf_stop,
                )
            )
        )
        tasks.append(
            asyncio.create_task(
                leader.run_while_leader(
                    kube,
                    name=options.lease_name,
                    namespace=options.config.namespace,
                    identity=options.identity,
                    lead=lambda: _lead(world, kube),
                    lease_duration=options.lease_duration,
                    renew_deadline=max(2, options.lease_duration * 2 // 3),
                    retry_period=max(1, options.lease_duration // 8),
                )
            )
        )
        if started is not None:
            started(world)
        stopper = asyncio.create_task(stop.wait())
        done, _pending = await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not stopper and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        kopf_stop.set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await runner.cleanup()
        certs.cleanup()
        await kube.close()
