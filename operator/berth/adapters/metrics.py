"""Every Prometheus series Berth exports, the ``report_*`` helpers that feed them, and serving.

One module defines all metrics (STYLE.md rule 13), under the ``berth_`` prefix, in Kueue's
vocabulary (``kueue_*`` → ``berth_*``; see ``docs/reference/metrics.md``). Labels are bounded:
queue, cohort, flavor, resource, priority-class and namespace names, and closed sets of reasons
and statuses, never workload names or uids.

``Metrics`` owns a ``CollectorRegistry`` of its own, so tests and the simulator never share
state with the operator's. Counters and histograms are fed by events (``report_admission``,
``report_eviction``, ...); gauges are set from the scheduler's state in one pass by
``report_state``, which clears them first so a deleted queue disappears. ``exposition`` renders
the text format; ``serve`` starts the HTTP endpoint the operator exposes on its metrics port.

Called by the simulator's observer (``berth.sim.observe``) and, with the operator, by its
scheduler loop and the history writer (for the dropped-writes counter).
"""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Awaitable, Callable, Iterable

import prometheus_client
from aiohttp import web
from prometheus_client import registry as prom_registry

import berth
from berth.api import names, quantity
from berth.core import fairsharing, resources
from berth.state import cache as cache_mod
from berth.state.queues import manager, pending

PREFIX = "berth"

WAIT_BUCKETS = (
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    320.0,
    640.0,
    1280.0,
    2560.0,
    5120.0,
    10240.0,
    20480.0,
    40960.0,
)
"""Kueue's exponential buckets (2.5·2^k seconds, from 1 s to about 11 h)."""

CYCLE_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
"""Scheduling-cycle durations: from 100 µs to seconds."""

ATTEMPT_SUCCESS = "success"
ATTEMPT_INADMISSIBLE = "inadmissible"
PENDING_ACTIVE = "active"
PENDING_INADMISSIBLE = "inadmissible"
CQ_STATUSES = ("pending", "active", "terminating")


def _amount(resource: str, amount: int) -> float:
    """An amount in the unit Prometheus users expect: CPU in cores, the rest as stored."""
    if quantity.is_milli(resource):
        return amount / 1000
    return float(amount)


@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """One cell of a queue's quota table, in canonical units (``None`` = no limit)."""

    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    usage: int


class Metrics:
    """Berth's metrics in a registry of their own.

    Attribute names are the series names without the prefix; ``docs/reference/metrics.md``
    lists every one of them (a test checks).
    """

    def __init__(self, registry: prom_registry.CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else prom_registry.CollectorRegistry()
        reg = self.registry
        c, g, h = prometheus_client.Counter, prometheus_client.Gauge, prometheus_client.Histogram
        cq_pc = ("cluster_queue", "priority_class")
        lq_pc = ("name", "namespace", "priority_class")
        cell = ("cohort", "cluster_queue", "flavor", "resource")
        lq_cell = ("name", "namespace", "flavor", "resource")

        # Health of the scheduler.
        self.build_info = g(f"{PREFIX}_build_info", "Berth's version.", ("version",), registry=reg)
        self.admission_attempts = c(
            f"{PREFIX}_admission_attempts",
            "Scheduling cycles, by whether they admitted at least one workload.",
            ("result",),
            registry=reg,
        )
        self.admission_attempt_duration = h(
            f"{PREFIX}_admission_attempt_duration_seconds",
            "Duration of one scheduling cycle, by result.",
            ("result",),
            buckets=CYCLE_BUCKETS,
            registry=reg,
        )
        self.history_writes = c(
            f"{PREFIX}_history_writes",
            "History rows written to the store.",
            registry=reg,
        )
        self.history_dropped = c(
            f"{PREFIX}_history_dropped",
            "History rows dropped because the writer's queue was full.",
            registry=reg,
        )
        self.events_dropped = c(
            f"{PREFIX}_events_dropped",
            "Kubernetes Events not sent because the operator's event queue was full.",
            registry=reg,
        )

        # ClusterQueue.
        self.pending_workloads = g(
            f"{PREFIX}_pending_workloads",
            "Pending workloads of a ClusterQueue, by status (active or inadmissible).",
            ("cluster_queue", "status"),
            registry=reg,
        )
        self.admitted_workloads = c(
            f"{PREFIX}_admitted_workloads",
            "Workloads admitted (quota reserved) in a ClusterQueue.",
            cq_pc,
            registry=reg,
        )
        self.admission_wait_time = h(
            f"{PREFIX}_admission_wait_time_seconds",
            "Time from queueing (or requeueing order time) to admission.",
            cq_pc,
            buckets=WAIT_BUCKETS,
            registry=reg,
        )
        self.admitted_active_workloads = g(
            f"{PREFIX}_admitted_active_workloads",
            "Workloads admitted and not yet finished or evicted in a ClusterQueue.",
            ("cluster_queue",),
            registry=reg,
        )
        self.finished_workloads = c(
            f"{PREFIX}_finished_workloads",
            "Workloads that finished after admission in a ClusterQueue.",
            cq_pc,
            registry=reg,
        )
        self.evicted_workloads = c(
            f"{PREFIX}_evicted_workloads",
            "Workloads evicted from a ClusterQueue, by eviction reason.",
            ("cluster_queue", "reason", "priority_class"),
            registry=reg,
        )
        self.preempted_workloads = c(
            f"{PREFIX}_preempted_workloads",
            "Workloads preempted, by the preemptor's ClusterQueue and the preemption reason.",
            ("preempting_cluster_queue", "reason"),
            registry=reg,
        )
        self.preemptions_held = c(
            f"{PREFIX}_preemptions_held",
            "Attempts of a pending workload whose preemption a preemption protection or budget "
            "kept back, by its ClusterQueue and what held it (protection, budget).",
            ("cluster_queue", "held_by"),
            registry=reg,
        )
        self.cluster_queue_status = g(
            f"{PREFIX}_cluster_queue_status",
            "1 for the ClusterQueue's current status (pending, active, terminating), else 0.",
            ("cluster_queue", "status"),
            registry=reg,
        )
        self.cluster_queue_resource_reservation = g(
            f"{PREFIX}_cluster_queue_resource_reservation",
            "Quota reserved by admitted workloads (CPU in cores, memory in bytes).",
            cell,
            registry=reg,
        )
        self.cluster_queue_resource_usage = g(
            f"{PREFIX}_cluster_queue_resource_usage",
            "Quota used by admitted workloads (equal to reservation: Berth has no admission "
            "checks).",
            cell,
            registry=reg,
        )
        self.cluster_queue_nominal_quota = g(
            f"{PREFIX}_cluster_queue_nominal_quota",
            "Nominal quota of a ClusterQueue per flavor and resource.",
            cell,
            registry=reg,
        )
        self.cluster_queue_borrowing_limit = g(
            f"{PREFIX}_cluster_queue_borrowing_limit",
            "Borrowing limit per flavor and resource (absent when unlimited).",
            cell,
            registry=reg,
        )
        self.cluster_queue_lending_limit = g(
            f"{PREFIX}_cluster_queue_lending_limit",
            "Lending limit per flavor and resource (absent when unlimited).",
            cell,
            registry=reg,
        )
        self.cluster_queue_weighted_share = g(
            f"{PREFIX}_cluster_queue_weighted_share",
            "Dominant resource share over the fair-sharing weight (0 when not borrowing).",
            ("cluster_queue", "cohort"),
            registry=reg,
        )

        # LocalQueue.
        self.local_queue_pending_workloads = g(
            f"{PREFIX}_local_queue_pending_workloads",
            "Pending workloads of a LocalQueue, by status (active or inadmissible).",
            ("name", "namespace", "status"),
            registry=reg,
        )
        self.local_queue_admitted_workloads = c(
            f"{PREFIX}_local_queue_admitted_workloads",
            "Workloads admitted from a LocalQueue.",
            lq_pc,
            registry=reg,
        )
        self.local_queue_admission_wait_time = h(
            f"{PREFIX}_local_queue_admission_wait_time_seconds",
            "Time from queueing to admission, per LocalQueue.",
            lq_pc,
            buckets=WAIT_BUCKETS,
            registry=reg,
        )
        self.local_queue_admitted_active_workloads = g(
            f"{PREFIX}_local_queue_admitted_active_workloads",
            "Workloads of a LocalQueue admitted and not yet finished or evicted.",
            ("name", "namespace"),
            registry=reg,
        )
        self.local_queue_finished_workloads = c(
            f"{PREFIX}_local_queue_finished_workloads",
            "Workloads of a LocalQueue that finished after admission.",
            lq_pc,
            registry=reg,
        )
        self.local_queue_evicted_workloads = c(
            f"{PREFIX}_local_queue_evicted_workloads",
            "Workloads of a LocalQueue evicted, by eviction reason.",
            ("name", "namespace", "reason", "priority_class"),
            registry=reg,
        )
        self.local_queue_resource_reservation = g(
            f"{PREFIX}_local_queue_resource_reservation",
            "Quota reserved by a LocalQueue's admitted workloads.",
            lq_cell,
            registry=reg,
        )
        self.local_queue_resource_usage = g(
            f"{PREFIX}_local_queue_resource_usage",
            "Quota used by a LocalQueue's admitted workloads.",
            lq_cell,
            registry=reg,
        )
        self.local_queue_admission_fair_sharing_usage = g(
            f"{PREFIX}_local_queue_admission_fair_sharing_usage",
            "A LocalQueue's admission fair-sharing score: its weighted decayed usage over its "
            "weight (the lowest gives its ClusterQueue the next head).",
            ("name", "namespace"),
            registry=reg,
        )
        self.build_info.labels(berth.__version__).set(1)

    # Events ------------------------------------------------------------------------------------

    def report_cycle(
        self, *, admitted: int, seconds: float, held: Iterable[tuple[str, str]] = ()
    ) -> None:
        """Count one scheduling cycle and its duration (success if it admitted anything).

        ``held``: (ClusterQueue, what held it) of each head whose preemption a protection or
        a budget kept back (``cycle.CycleResult.held``).
        """
        result = ATTEMPT_SUCCESS if admitted else ATTEMPT_INADMISSIBLE
        self.admission_attempts.labels(result).inc()
        self.admission_attempt_duration.labels(result).observe(seconds)
        for cluster_queue, held_by in held:
            self.preemptions_held.labels(cluster_queue, held_by).inc()

    def report_admission(
        self,
        *,
        cluster_queue: str,
        namespace: str,
        local_queue: str,
        priority_class: str | None,
        wait_seconds: float,
    ) -> None:
        """Count an admission and its wait, in its ClusterQueue and LocalQueue."""
        pc = priority_class or ""
        self.admitted_workloads.labels(cluster_queue, pc).inc()
        self.admission_wait_time.labels(cluster_queue, pc).observe(wait_seconds)
        self.local_queue_admitted_workloads.labels(local_queue, namespace, pc).inc()
        self.local_queue_admission_wait_time.labels(local_queue, namespace, pc).observe(
            wait_seconds
        )

    def report_eviction(
        self,
        *,
        cluster_queue: str,
        namespace: str,
        local_queue: str,
        priority_class: str | None,
        reason: str,
    ) -> None:
        """Count an eviction of an admitted workload, by reason."""
        pc = priority_class or ""
        self.evicted_workloads.labels(cluster_queue, reason, pc).inc()
        self.local_queue_evicted_workloads.labels(local_queue, namespace, reason, pc).inc()

    def report_preemption(self, *, preempting_cluster_queue: str, reason: str) -> None:
        """Count a victim, by the preemptor's ClusterQueue and the preemption reason."""
        self.preempted_workloads.labels(preempting_cluster_queue, reason).inc()

    def report_finish(
        self,
        *,
        cluster_queue: str,
        namespace: str,
        local_queue: str,
        priority_class: str | None,
    ) -> None:
        """Count a workload that finished after admission."""
        pc = priority_class or ""
        self.finished_workloads.labels(cluster_queue, pc).inc()
        self.local_queue_finished_workloads.labels(local_queue, namespace, pc).inc()

    def report_history_write(self, rows: int = 1) -> None:
        """Count rows the history writer stored."""
        self.history_writes.inc(rows)

    def report_event_dropped(self) -> None:
        """Count an Event dropped because the event recorder's queue was full."""
        self.events_dropped.inc()

    def report_history_dropped(self, rows: int = 1) -> None:
        """Count rows the history writer dropped because its queue was full."""
        self.history_dropped.inc(rows)

    # State -------------------------------------------------------------------------------------

    def report_state(self, cache: cache_mod.Cache, queues: manager.QueueManager) -> None:
        """Set every gauge from the scheduler's state (the gauges are cleared first)."""
        for gauge in (
            self.pending_workloads,
            self.admitted_active_workloads,
            self.cluster_queue_status,
            self.cluster_queue_resource_reservation,
            self.cluster_queue_resource_usage,
            self.cluster_queue_nominal_quota,
            self.cluster_queue_borrowing_limit,
            self.cluster_queue_lending_limit,
            self.cluster_queue_weighted_share,
            self.local_queue_pending_workloads,
            self.local_queue_admitted_active_workloads,
            self.local_queue_resource_reservation,
            self.local_queue_resource_usage,
            self.local_queue_admission_fair_sharing_usage,
        ):
            gauge.clear()
        snap = cache.snapshot
        for name in sorted(snap.cluster_queues):
            info = snap.cluster_queues[name]
            cohort = info.cohort or ""
            status = "active" if info.active else "pending"
            for each in CQ_STATUSES:
                self.cluster_queue_status.labels(name, each).set(1 if each == status else 0)
            node = snap.cq_nodes[name]
            self.cluster_queue_weighted_share.labels(name, cohort).set(
                fairsharing.share(snap, node).rounded()
            )
            self.admitted_active_workloads.labels(name).set(len(snap.admitted.get(name, {})))
            for cell in cluster_queue_cells(cache, name):
                self._report_cell(cohort, name, cell)
            for status_name in (PENDING_ACTIVE, PENDING_INADMISSIBLE):
                self.pending_workloads.labels(name, status_name).set(0)
        self._report_pending(cache, queues)
        self._report_local_queues(cache)
        for lq in sorted(queues.usage.entries):
            # +Inf for a LocalQueue of weight 0, as the score is.
            self.local_queue_admission_fair_sharing_usage.labels(lq.name, lq.namespace).set(
                queues.score(lq)
            )

    def _report_cell(self, cohort: str, cq: str, cell: Usage) -> None:
        labels = (cohort, cq, cell.flavor, cell.resource)
        used = _amount(cell.resource, cell.usage)
        self.cluster_queue_resource_reservation.labels(*labels).set(used)
        self.cluster_queue_resource_usage.labels(*labels).set(used)
        self.cluster_queue_nominal_quota.labels(*labels).set(_amount(cell.resource, cell.nominal))
        if cell.borrowing_limit is not None:
            self.cluster_queue_borrowing_limit.labels(*labels).set(
                _amount(cell.resource, cell.borrowing_limit)
            )
        if cell.lending_limit is not None:
            self.cluster_queue_lending_limit.labels(*labels).set(
                _amount(cell.resource, cell.lending_limit)
            )

    def _report_pending(self, cache: cache_mod.Cache, queues: manager.QueueManager) -> None:
        cq_counts: dict[tuple[str, str], int] = {}
        lq_counts: dict[tuple[str, str, str], int] = {}
        for key in sorted(queues.pending):
            pw = queues.pending[key]
            status = pending_status(queues, pw)
            lq = pw.info.local_queue or ""
            lq_key = (lq, key.namespace, status)
            lq_counts[lq_key] = lq_counts.get(lq_key, 0) + 1
            cq_name = cache.cluster_queue_for(pw.info)
            if cq_name is not None and cq_name in cache.snapshot.cluster_queues:
                cq_counts[(cq_name, status)] = cq_counts.get((cq_name, status), 0) + 1
        for (cq, status), n in sorted(cq_counts.items()):
            self.pending_workloads.labels(cq, status).set(n)
        for (namespace, name), _lq in sorted(cache.local_queues.items()):
            for status in (PENDING_ACTIVE, PENDING_INADMISSIBLE):
                self.local_queue_pending_workloads.labels(name, namespace, status).set(
                    lq_counts.get((name, namespace, status), 0)
                )

    def _report_local_queues(self, cache: cache_mod.Cache) -> None:
        active: dict[tuple[str, str], int] = {}
        used: dict[tuple[str, str, str, str], int] = {}
        for key in sorted(cache.admitted):
            adm = cache.admitted[key]
            lq = (adm.info.local_queue or "", key.namespace)
            active[lq] = active.get(lq, 0) + 1
            for fr, amount in adm.admission.usage.items():
                cell = (*lq, fr.flavor, fr.resource)
                used[cell] = used.get(cell, 0) + amount
        for namespace, name in sorted(cache.local_queues):
            self.local_queue_admitted_active_workloads.labels(name, namespace).set(
                active.get((name, namespace), 0)
            )
        for (name, namespace, flavor, res), amount in sorted(used.items()):
            value = _amount(res, amount)
            self.local_queue_resource_reservation.labels(name, namespace, flavor, res).set(value)
            self.local_queue_resource_usage.labels(name, namespace, flavor, res).set(value)

    # Output ------------------------------------------------------------------------------------

    def exposition(self) -> str:
        """Render every series in Prometheus' text exposition format."""
        return prometheus_client.generate_latest(self.registry).decode()

    def names(self) -> list[str]:
        """Every series name this registry exports (counters without ``_total``)."""
        return sorted({m.name for m in self.registry.collect()})


def pending_status(queues: manager.QueueManager, pw: pending.PendingWorkload) -> str:
    """Say whether a pending workload is active (in its queue's heap) or inadmissible.

    Workloads parked in the inadmissible set, waiting out a backoff, or waiting outside any
    queue (a missing or stopped LocalQueue or ClusterQueue) count as inadmissible, as in Kueue.
    """
    if pw.cluster_queue is None:
        return PENDING_INADMISSIBLE
    q = queues.queues.get(pw.cluster_queue)
    if q is None or q.is_parked(pw.info.key):
        return PENDING_INADMISSIBLE
    return PENDING_ACTIVE


def cluster_queue_cells(cache: cache_mod.Cache, name: names.ClusterQueueName) -> Iterable[Usage]:
    """Every flavor-resource cell of a ClusterQueue's quota, with its current usage."""
    node = cache.snapshot.cq_nodes[name]
    for fr in sorted(node.quotas):
        q = node.quotas[fr]
        yield Usage(
            flavor=fr.flavor,
            resource=fr.resource,
            nominal=q.nominal,
            borrowing_limit=q.borrowing_limit,
            lending_limit=q.lending_limit,
            usage=node.usage.get(resources.FlavorResource(fr.flavor, fr.resource), 0),
        )


Authorize = Callable[[str | None], Awaitable[tuple[int, str] | None]]
"""Decides a scrape from its ``Authorization`` header: None lets it read, else (status, why)."""


async def serve(
    metrics: Metrics,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    before_scrape: Callable[[], None] | None = None,
    not_ready: Callable[[], str | None] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    authorize: Authorize | None = None,
) -> MetricsServer:
    """Serve ``/metrics`` on ``host:port`` (0 picks a free port) on the running loop.

    Over HTTPS with ``ssl_context``, and only to whom ``authorize`` lets read it (cluster mode:
    ``adapters.kube.access``, as Kueue's secure metrics); over plain HTTP otherwise (local
    mode, on the loopback address by default). ``/healthz`` answers 200 while the loop does;
    ``/readyz`` answers 503 with the reason ``not_ready`` gives, and 200 once it gives None
    (the probes of the Helm chart's pods, which send no token and read nothing of the queues).

    ``before_scrape`` runs first on every scrape: the operator sets its gauges there
    (``report_state`` walks every pending workload, so it runs when someone looks, not on a
    timer). On the loop, not in a thread: ``report_state`` clears the gauges before setting them
    again, and a scrape must never see them half set.
    """

    async def scrape(request: web.Request) -> web.Response:
        if authorize is not None:
            refused = await authorize(request.headers.get("Authorization"))
            if refused is not None:
                return web.Response(status=refused[0], text=f"{refused[1]}\n")
        if before_scrape is not None:
            before_scrape()
        return web.Response(
            body=prometheus_client.generate_latest(metrics.registry),
            headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST},
        )

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_request: web.Request) -> web.Response:
        reason = not_ready() if not_ready is not None else None
        if reason is not None:
            return web.Response(status=503, text=f"not ready: {reason}\n")
        return web.Response(text="ok\n")

    app = web.Application()
    app.router.add_get("/metrics", scrape)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
    sockets = getattr(server, "sockets", None) or []
    return MetricsServer(runner, sockets[0].getsockname()[1] if sockets else port)


@dataclasses.dataclass(slots=True)
class MetricsServer:
    """A running metrics endpoint; ``close`` stops it."""

    runner: web.AppRunner
    port: int
    """The port it listens on."""

    async def close(self) -> None:
        """Stop serving."""
        await self.runner.cleanup()
