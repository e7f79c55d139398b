"""The operator's composition root: one event loop running kopf, webhooks and the leader's tasks.

``run`` opens the API session, serves ``/metrics``, opens (and migrates) the history store,
starts the webhook server and registers its configurations, starts kopf and the Workload
informer (watch events → ``World``), and competes for the Lease; while it leads it primes the
cache from a full list of every watched kind and then runs the scheduler loop, the job
controller, the queue status writer and the metrics/history ``Observer`` — each leadership term
is one run in the history store. Called by ``berth run`` and ``berth up``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import signal
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import kopf
from sqlalchemy.ext import asyncio as sa_asyncio

from berth.adapters import metrics, tls
from berth.adapters.history import store, writer
from berth.adapters.kube import access, client, errors, events, kubeconfig, leader
from berth.api import configuration
from berth.operator import (
    finalizers,
    handlers,
    jobcontroller,
    lifecycle,
    observe,
    scheduler,
    statuses,
    ungater,
)
from berth.operator import world as world_mod
from berth.operator.webhooks import certificates
from berth.operator.webhooks import server as webhook_server

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
        # Unique per process, as controller-runtime's (hostname + "_" + a UUID): in a container
        # the pid is always the same, so a crashed leader restarted in its pod would otherwise
        # take its old Lease back at once, as though it had never stopped.
        default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4()}"
    )
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = 0
    """Where ``/metrics`` is served; 0 picks a free port, None serves nothing."""
    metrics_secure: bool = False
    """Serve ``/metrics`` over HTTPS (a certificate of this process's own) to bearers of a token
    RBAC lets ``get`` it (``adapters.kube.access``), as Kueue's secure metrics serving."""
    history_url: str | None = None
    """The history store (``sqlite:///PATH`` or ``postgresql://...``); None records nothing."""
    quota_interval: float = 1.0
    """Seconds between checks whether the quota table changed (gauges are set at each scrape)."""
    cluster_webhooks: certificates.ClusterWebhooks | None = None
    """Cluster mode: the certificate from a Secret shared by the replicas, and the chart's webhook
    configurations left as they are. None: local mode (a certificate of this process's own, and
    webhook configurations pointing at ``webhook_host``, registered by this process)."""


_FORBIDDEN = 403
_NAMESPACED = frozenset({"LocalQueue", "Workload", "Pod", "TrainingRuntime"})
"""Namespaced kinds beside the job kinds, which ``narrow_to`` may list in one namespace."""


async def prime(
    world: world_mod.World, kube: client.Kube, *, narrow_to: str | None = None
) -> tuple[str, ...]:
    """Apply a full list of every watched kind, so the first cycle sees the whole cluster.

    ``narrow_to`` (``berth explain`` as a namespace user): a namespaced kind the caller may not
    list cluster-wide is listed in that namespace instead. Returns the plurals so narrowed.
    """
    narrowed: list[str] = []
    namespaced = _NAMESPACED | set(world.integrations)
    for kind, group, version, plural in handlers.watched(world):
        prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            items, _rv = await kube.list_items(f"{prefix}/{plural}")
        except errors.NotFoundError:
            if (kind, group, version, plural) in handlers.WATCHED:
                raise
            # An integrated framework whose CRD is not installed (yet): kopf picks it up later.
            log.warning(
                "%s (%s/%s) is not served by the API server; none to prime", kind, group, version
            )
            continue
        except errors.PermanentError as e:
            if e.status != _FORBIDDEN or narrow_to is None or kind not in namespaced:
                raise
            items, _rv = await kube.list_items(f"{prefix}/namespaces/{narrow_to}/{plural}")
            narrowed.append(plural)
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
    return tuple(narrowed)


async def _lead(
    world: world_mod.World,
    kube: client.Kube,
    engine: sa_asyncio.AsyncEngine | None,
    options: Options,
    failed: asyncio.Future[None],
) -> None:
    log.info("leading: priming the cache")
    while True:
        try:
            await prime(world, kube)
            break
        except errors.KubeError as e:
            log.warning("priming failed, retrying: %s", e)
            await asyncio.sleep(1)
    async with _observing(world, engine, options):
        world.wake.schedule.set()
        world.wake.statuses.set()
        recorder = events.Recorder(
            kube,
            on_drop=world.observer.metrics.report_event_dropped if world.observer else None,
        )
        keeper = []
        cluster = options.cluster_webhooks
        if cluster is not None and cluster.manage:
            keeper.append(certificates.keep_certificates(kube, options.config.namespace, cluster))
        await supervise(
            [
                *keeper,
                recorder.run(),
                scheduler.Scheduler(world, kube, recorder).run(),
                jobcontroller.JobController(world, kube).run(),
                ungater.Ungater(world, kube).run(),
                lifecycle.Lifecycle(world, kube).run(),
                finalizers.Finalizers(world, kube).run(),
                statuses.StatusWriter(world, statuses.KubeStatusPort(kube)).run(),
                _record_quotas(world, options.quota_interval),
            ],
            failed,
        )


async def supervise(coros: list[Coroutine[Any, Any, None]], failed: asyncio.Future[None]) -> None:
    """Run the leader's tasks; when one dies, cancel the others and end this term.

    A task that lost the API server (``errors.KubeError``: refused connections while it
    restarts, timeouts, 5xx) ends the term quietly: ``leader.run_while_leader`` competes again
    and the next term primes from a fresh list, so an API server restart costs a pause. Any
    other exception is a bug: it fails ``failed``, which ``run`` waits on to stop the process,
    and another replica (or a restart) takes over.
    """
    try:
        async with asyncio.TaskGroup() as group:
            for coro in coros:
                group.create_task(coro)
    except* errors.KubeError as lost:
        log.warning("a leader task lost the API server (%s); ending this term", lost.exceptions[0])
    except* Exception as e:
        log.exception("a leader task died; stopping the operator")
        if not failed.done():
            failed.set_exception(e)
        raise


async def _raise_when_failed(failed: asyncio.Future[None]) -> None:
    await failed


@contextlib.asynccontextmanager
async def _observing(
    world: world_mod.World, engine: sa_asyncio.AsyncEngine | None, options: Options
) -> AsyncIterator[None]:
    """Observe transitions while leading; with a store, this term is one history run."""
    observer = world.observer
    if observer is None:
        yield
        return
    started = time.time()
    observer.started_at = started
    history_writer: writer.Writer | None = None
    task: asyncio.Task[None] | None = None
    if engine is not None:
        started_at = dt.datetime.fromtimestamp(started, dt.UTC)
        run_id = await store.start_run(
            engine, kind="operator", label=options.identity, started_at=started_at
        )
        history_writer = writer.Writer(engine, run_id, started_at, counters=observer.metrics)
        task = asyncio.create_task(history_writer.run())
        observer.records = history_writer
        log.info("recording history run %d", run_id)
    observer.active = True
    try:
        yield
    finally:
        observer.active = False
        observer.records = None
        if history_writer is not None and task is not None:
            history_writer.end(time.time() - started)
            try:
                await history_writer.close(task)
            except store.HistoryError as err:
                log.warning("history: closing the run failed: %s", err)
            else:
                log.info("closed history run %d", history_writer.run_id)


async def _record_quotas(world: world_mod.World, interval: float) -> None:
    """Record the quota table when queues change, checked on a timer (an identity test)."""
    while True:
        if world.observer is not None:
            world.observer.quotas(world.cache, world.clock())
        await asyncio.sleep(interval)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


async def _until_stopped(
    stop: asyncio.Event, kopf_ready: asyncio.Event, tasks: list[asyncio.Task[None]]
) -> None:
    """Wait for ``stop`` (or a signal), or for a task to end; raise what a task raised."""
    ready = asyncio.create_task(kopf_ready.wait())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([ready, *tasks], return_when=asyncio.FIRST_COMPLETED)
        # kopf installs SIGTERM and SIGINT handlers of its own as it starts, which stop kopf
        # alone; replace them once it has.
        _stop_on_signals(stop)
        done, _pending = await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        ready.cancel()
        stopper.cancel()
    for task in done:
        if task is not stopper and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


def _stop_on_signals(stop: asyncio.Event) -> None:
    # Without this SIGTERM (what Kubernetes sends a pod, and what ``berth up`` sends its child)
    # ends the operator without closing its history run or writing the rows still queued.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Only the main thread may handle signals; run() elsewhere just needs ``stop``.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)


async def _serve_metrics(
    world: world_mod.World,
    options: Options,
    not_ready: Callable[[], str | None],
    kube: client.Kube,
) -> metrics.MetricsServer | None:
    """Give the world its observer, and serve its metrics and the health endpoints if asked."""
    sink = metrics.Metrics()
    world.observer = observe.Observer(
        sink, None, cache=world.cache, clock=world.clock, started_at=world.clock()
    )
    if options.metrics_port is None:
        return None
    observer = world.observer
    context = authorize = None
    if options.metrics_secure:
        # A certificate of this process's own, as controller-runtime makes when given none:
        # scrapers check who may read, not who serves (the chart's ServiceMonitor skips verify).
        ca = tls.new_certificate_authority("berth-metrics-ca")
        serving = tls.ServingContext()
        serving.load(tls.issue_serving_certificate(ca, [options.metrics_host], "berth-metrics"))
        context = serving.context
        reviews = access.MetricsAccess(kube)

        async def authorize(header: str | None) -> tuple[int, str] | None:
            refused = await reviews.check(header)
            return None if refused is None else (refused.status, refused.message)

    server = await metrics.serve(
        sink,
        host=options.metrics_host,
        port=options.metrics_port,
        before_scrape=lambda: observer.gauges(world.cache, world.queues),
        not_ready=not_ready,
        ssl_context=context,
        authorize=authorize,
    )
    scheme = "https" if options.metrics_secure else "http"
    log.info("metrics served at %s://%s:%d/metrics", scheme, options.metrics_host, server.port)
    return server


def _refuse_what_kopf_cannot_send(target: kubeconfig.Target) -> None:
    """Stop at start-up on a kubeconfig the watches cannot follow (kopf's ``ConnectionInfo``).

    kopf connects with the server, CA, credentials and proxy Berth hands it at login, but has
    no TLS server name: its watches would fail the certificate check while Berth's own
    requests passed.
    """
    if target.tls_server_name:
        raise errors.PermanentError(
            f"{target.source}: tls-server-name {target.tls_server_name}: the operator's watches"
            " cannot send a TLS server name; set the cluster's server to a name or address its"
            " certificate holds (berth explain, queues and up accept it)"
        )


async def _ensure_namespace(kube: client.Kube, name: str) -> None:
    # Installed by the chart, the namespace exists and the operator may not create namespaces.
    with contextlib.suppress(errors.NotFoundError):
        await kube.request("GET", f"/api/v1/namespaces/{name}")
        return
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
    """Run the operator until ``stop`` is set, or SIGTERM or SIGINT arrives."""
    stop = stop or asyncio.Event()
    engine = None
    if options.history_url is not None:
        # Migrations run here, before anything else: a store that cannot be opened stops the
        # start-up with the store's own error.
        engine = await store.open_store(options.history_url)
    target = kubeconfig.load(options.kubeconfig)
    _refuse_what_kopf_cannot_send(target)
    kube = await client.Kube.connect(target)
    # The Lease is renewed through a session of its own: a flood of status writes holding every
    # connection of the main one must not make the leader miss its renew deadline.
    lease_kube = await client.Kube.connect(target, connections=client.LEASE_CONNECTIONS)
    world = world_mod.World(options.config, time.time)
    kopf_stop, kopf_ready = asyncio.Event(), asyncio.Event()
    server = await webhook_server.WebhookServer.start(
        world,
        kube,
        host=options.webhook_host,
        port=options.webhook_port,
        cluster=options.cluster_webhooks,
    )

    def not_ready() -> str | None:
        return server.not_ready() or (None if kopf_ready.is_set() else "watches starting")

    metrics_server = await _serve_metrics(world, options, not_ready, kube)
    tasks: list[asyncio.Task[None]] = []
    failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    watches: list[asyncio.Task[None]] = []
    try:
        await _ensure_namespace(kube, options.config.namespace)
        await server.register(world, kube)
        watches.extend(asyncio.create_task(c) for c in server.background())
        log.info("webhooks served at %s", server.base_url)
        tasks.append(
            asyncio.create_task(
                kopf.operator(
                    registry=handlers.registry(world, kube),
                    settings=handlers.settings(),
                    clusterwide=True,
                    standalone=True,
                    stop_flag=kopf_stop,
                    ready_flag=kopf_ready,
                )
            )
        )
        watches.extend(asyncio.create_task(i.run()) for i in handlers.informers(world, kube))
        tasks.append(
            asyncio.create_task(
                leader.run_while_leader(
                    lease_kube,
                    name=options.lease_name,
                    namespace=options.config.namespace,
                    identity=options.identity,
                    lead=lambda: _lead(world, kube, engine, options, failed),
                    lease_duration=options.lease_duration,
                    renew_deadline=max(2, options.lease_duration * 2 // 3),
                    retry_period=max(1, options.lease_duration // 8),
                )
            )
        )
        # A leader task that died fails ``failed``: this task then ends with its error.
        tasks.append(asyncio.create_task(_raise_when_failed(failed)))
        if started is not None:
            started(world)
        await _until_stopped(stop, kopf_ready, [*tasks, *watches])
    finally:
        log.info("stopping")
        # The leader (tasks[1]) first, while kopf (tasks[0]) still runs: kopf cancels every task
        # of the loop it considers its own as it stops, and the leader's history writer must
        # flush and close its run before that.
        for task in tasks[1:]:
            await _cancel(task)
        for task in watches:
            await _cancel(task)
        kopf_stop.set()
        for task in tasks[:1]:
            await _cancel(task)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.unregister(kube), 10)
        await server.close()
        await kube.close()
        await lease_kube.close()
        if metrics_server is not None:
            await metrics_server.close()
        if engine is not None:
            await engine.dispose()
