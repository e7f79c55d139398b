"""The harness's run: create Workloads on schedule, play their jobs, record every transition.

As Kueue's runner does (``test/performance/scheduler/runner``), the harness plays the job's part
for standalone Workloads: a Workload seen admitted is marked ``Finished=True`` (reason
``Succeeded``) ``runtimeMs`` after the admission was seen, and a Workload seen evicted with its
admission still set has that admission cleared (``QuotaReserved=False``), which is what a job
integration does once the job has stopped and what releases the quota. All times are read from
one monotonic clock at the moment the harness sends a create or sees a watch event, counted from
the start of arrivals, so they include the watch's latency as Kueue's recorder does.

Creates follow one of two pacings (`Pacing`): on the config's timeline, each Workload sent when
it is due (up to 64 creates in flight), or as Kueue's generator sends them
(``generator.generateWlSet``): each workload set a stream of its own that waits one interval,
sends one create and waits for its answer, then the next, so a slow API server stretches the
arrivals instead of piling creates up. Either way at most 64 creates are in flight at once.

Writes carry the resourceVersion they were built from; a conflict is retried shortly after with
whatever body the watch has delivered meanwhile. Used by ``berth bench harness``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import enum
import heapq
import itertools
import logging
import time
from typing import Any

from berth.adapters import wakeup
from berth.api import base
from berth.devtools.harness import api as api_mod
from berth.devtools.harness import generator

log = logging.getLogger(__name__)

WORKLOADS = f"/apis/{base.GROUP}/{base.VERSION}/workloads"
_RETRY_DELAY = 0.05
_MAX_RETRIES = 100


class Pacing(enum.Enum):
    """How creates are sent (the module's docstring)."""

    TIMELINE = "timeline"
    SEQUENTIAL = "sequential"


def workloads_path(namespace: str, name: str | None = None) -> str:
    """The collection of a namespace's Workloads, or one Workload."""
    out = f"/apis/{base.GROUP}/{base.VERSION}/namespaces/{namespace}/workloads"
    return out if name is None else f"{out}/{name}"


def _condition(body: dict[str, Any], kind: str) -> bool:
    for c in (body.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return bool(c.get("status") == "True")
    return False


def _rv(body: dict[str, Any] | None) -> int:
    try:
        return int(((body or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _set_conditions(
    body: dict[str, Any], changes: list[tuple[str, bool, str, str]]
) -> list[dict[str, Any]]:
    """The body's conditions with ``changes`` (type, status, reason, message) set in them."""
    now = dt.datetime.now(tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = [dict(c) for c in (body.get("status") or {}).get("conditions") or []]
    for kind, status, reason, message in changes:
        new = {
            "type": kind,
            "status": "True" if status else "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
        }
        for i, old in enumerate(out):
            if old.get("type") == kind:
                if old.get("status") == new["status"]:
                    new["lastTransitionTime"] = old.get("lastTransitionTime", now)
                out[i] = new
                break
        else:
            out.append(new)
    return out


@dataclasses.dataclass(slots=True)
class Record:
    """What the harness saw of one Workload (seconds since the start of arrivals)."""

    arrival: generator.Arrival
    created: float | None = None
    """When its create was sent."""
    seen: float | None = None
    """When its first watch event came (where Kueue's recorder starts its time to admission)."""
    create_latency: float | None = None
    admitted: float | None = None
    """When it was first seen admitted."""
    finished: float | None = None
    evictions: int = 0
    admissions: int = 0
    running_since: float | None = None
    intervals: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    """(admitted, released) of every admission, as seen."""
    body: dict[str, Any] | None = None
    epoch: int = 0
    """Bumped at every admission and release, so a stale timer does nothing."""
    due: float | None = None
    """When the current admission's runtime is over."""
    writing: bool = False
    conflicts: int = 0
    finish_lag: float | None = None
    """How long after its runtime was over the harness saw it Finished (its own delay)."""

    @property
    def queue(self) -> generator.Queue:
        """Its ClusterQueue."""
        return self.arrival.queue

    def close(self, now: float) -> None:
        """End the current admission interval, if any."""
        if self.running_since is not None:
            self.intervals.append((self.running_since, now))
            self.running_since = None
            self.epoch += 1


class Runner:
    """One run of a generator config against an API server the operator is watching."""

    def __init__(
        self,
        api: api_mod.Api,
        config: generator.Config,
        run: str,
        *,
        create_concurrency: int = 64,
        write_concurrency: int = 64,
        pacing: Pacing = Pacing.TIMELINE,
    ) -> None:
        self.api = api
        self.config = config
        self.run_id = run
        self.queues = generator.queues(config)
        self.arrivals = generator.arrivals(config)
        self.records: dict[tuple[str, str], Record] = {
            (a.queue.name, a.name): Record(a) for a in self.arrivals
        }
        self.pacing = pacing
        self._create_slots = asyncio.Semaphore(create_concurrency)
        self._write_slots = asyncio.Semaphore(write_concurrency)
        self._timers: list[tuple[float, int, tuple[str, str], int]] = []
        self._timer_seq = 0
        self._timer_wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.t0 = 0.0
        self.finished = 0
        self.errors: list[str] = []
        self.watch_events = 0
        self.conflicts = 0
        self._written: dict[str, float] = {}
        """resourceVersions the harness's own writes stored, and when their answer came."""
        self.watch_lags: list[float] = []
        """For each own write, how much later the watch delivered it than the write's answer."""

    def now(self) -> float:
        """Seconds since the start of arrivals."""
        return time.monotonic() - self.t0

    # Setup ---------------------------------------------------------------------------------------

    async def setup(self, *, within: float = 120.0) -> None:
        """Create the flavor, namespaces, ClusterQueues, LocalQueues; wait until all are Active."""
        group = f"/apis/{base.GROUP}/{base.VERSION}"
        await self.api.create(
            f"{group}/resourceflavors", generator.flavor_body(self.run_id), exist_ok=True
        )
        sem = asyncio.Semaphore(32)

        async def one(q: generator.Queue) -> None:
            async with sem:
                await self.api.create(
                    "/api/v1/namespaces", generator.namespace_body(q, self.run_id), exist_ok=True
                )
                await self.api.create(
                    f"{group}/clusterqueues", generator.cluster_queue_body(q, self.run_id)
                )
                await self.api.create(
                    f"{group}/namespaces/{q.name}/localqueues",
                    generator.local_queue_body(q, self.run_id),
                )

        await asyncio.gather(*(one(q) for q in self.queues))
        wanted = {q.name for q in self.queues}
        deadline = time.monotonic() + within
        while True:
            page = await self.api.request(
                "GET", f"{group}/clusterqueues?labelSelector={generator.RUN_LABEL}={self.run_id}"
            )
            active = {
                i["metadata"]["name"] for i in page.get("items") or [] if _condition(i, "Active")
            }
            if wanted <= active:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{len(wanted - active)} of {len(wanted)} ClusterQueues not Active "
                    f"after {within:.0f}s; is the operator running?"
                )
            await asyncio.sleep(0.5)

    # The run -------------------------------------------------------------------------------------

    async def run(self, *, limit: float, stall: float = 120.0) -> float:
        """Create every Workload on schedule and wait until all finished; return the wall time.

        Stops early (returning the time so far) after ``limit`` seconds, or when nothing has
        finished for ``stall`` seconds after the last arrival.
        """
        listing = await self.api.request("GET", f"{WORKLOADS}?limit=1")
        rv = str((listing.get("metadata") or {}).get("resourceVersion") or "0")
        self.t0 = time.monotonic()
        watcher = asyncio.create_task(self._watch(rv))
        timers = asyncio.create_task(self._run_timers())
        creator = asyncio.create_task(self._create_all())
        total = len(self.records)
        last_progress, last_finished = 0.0, -1
        try:
            while self.finished < total:
                await asyncio.sleep(0.2)
                if watcher.done() and watcher.exception() is not None:
                    raise watcher.exception()  # type: ignore[misc]
                now = self.now()
                if self.finished != last_finished:
                    last_finished, last_progress = self.finished, now
                if now > limit:
                    self.errors.append(f"timed out after {limit:.0f}s")
                    break
                if creator.done() and now - last_progress > stall:
                    self.errors.append(f"nothing finished for {stall:.0f}s")
                    break
            ends = [r.finished for r in self.records.values() if r.finished is not None]
            return max(ends) if self.finished == total and ends else self.now()
        finally:
            for task in (watcher, timers, creator, *self._tasks):
                task.cancel()
            for task in (watcher, timers, creator, *list(self._tasks)):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _spawn(self, coro: Any) -> None:  # noqa: ANN401 - a coroutine
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _create_all(self) -> None:
        if self.pacing is Pacing.SEQUENTIAL:
            streams = itertools.groupby(
                sorted(self.arrivals, key=lambda a: (a.queue.name, a.workload_set, a.at, a.name)),
                key=lambda a: (a.queue.name, a.workload_set),
            )
            async with asyncio.TaskGroup() as group:
                for _, stream in streams:
                    group.create_task(self._create_stream(list(stream)))
            return
        for a in self.arrivals:
            delay = a.at - self.now()
            if delay > 0:
                await asyncio.sleep(delay)
            await self._create_slots.acquire()
            self._spawn(self._create(a))

    async def _create_stream(self, stream: list[generator.Arrival]) -> None:
        """One workload set as Kueue's generator sends it: wait an interval, create, repeat."""
        for a in stream:
            await asyncio.sleep(a.interval)
            await self._create_slots.acquire()
            await self._create(a)

    async def _create(self, a: generator.Arrival) -> None:
        rec = self.records[a.queue.name, a.name]
        try:
            rec.created = self.now()
            await self.api.request(
                "POST", workloads_path(a.queue.name), generator.workload_body(a, self.run_id)
            )
            rec.create_latency = self.now() - rec.created
        except api_mod.ApiError as e:
            self.errors.append(f"create {a.queue.name}/{a.name}: {e}")
        finally:
            self._create_slots.release()

    async def _watch(self, rv: str) -> None:
        selector = f"{generator.RUN_LABEL}%3D{self.run_id}"
        # Each watch lasts up to ~5 minutes; a run of hours needs at most a few dozen.
        for _ in range(1000):
            async for event in self.api.watch(WORKLOADS, rv, label_selector=selector):
                kind = event.get("type")
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                if kind == "ERROR":
                    # 410 Gone: start again from now; the transitions missed are few and late.
                    page = await self.api.request("GET", f"{WORKLOADS}?limit=1")
                    rv = str((page.get("metadata") or {}).get("resourceVersion") or rv)
                    break
                rv = str(meta.get("resourceVersion") or rv)
                written = self._written.pop(rv, None)
                if written is not None:
                    self.watch_lags.append(self.now() - written)
                if kind in {"ADDED", "MODIFIED"}:
                    self.watch_events += 1
                    self._observe(obj)

    def _observe(self, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        rec = self.records.get((meta.get("namespace") or "", meta.get("name") or ""))
        if rec is None or _rv(body) <= _rv(rec.body):
            return  # an event older than a write's answer already taken in
        rec.body = body
        if rec.seen is None:
            rec.seen = self.now()
        now = self.now()
        has_admission = bool((body.get("status") or {}).get("admission"))
        if rec.finished is not None:
            return
        if _condition(body, "Finished"):
            rec.finished = now
            if rec.due is not None:
                rec.finish_lag = max(0.0, now - rec.due)
            rec.close(now)
            self.finished += 1
            return
        if _condition(body, "Evicted"):
            if rec.running_since is not None:
                rec.evictions += 1
                rec.close(now)
                rec.due = None
        elif has_admission and _condition(body, "Admitted") and rec.running_since is None:
            rec.running_since = now
            rec.admissions += 1
            if rec.admitted is None:
                rec.admitted = now
            rec.epoch += 1
            rec.due = now + rec.arrival.template.runtime_ms / 1000
            self._schedule(rec.due, rec, rec.epoch)
        self._act(rec)

    def _act(self, rec: Record) -> None:
        """Start the write the record's latest body calls for, unless one is under way."""
        body = rec.body
        if rec.writing or body is None or rec.finished is not None:
            return
        has_admission = bool((body.get("status") or {}).get("admission"))
        if _condition(body, "Evicted") and has_admission:
            rec.writing = True
            self._spawn(self._clear_admission(rec))
        elif rec.running_since is not None and rec.due is not None and rec.due <= self.now():
            rec.writing = True
            self._spawn(self._finish(rec))

    # Timers and writes ---------------------------------------------------------------------------

    def _schedule(self, due: float, rec: Record, epoch: int) -> None:
        self._timer_seq += 1
        key = (rec.queue.name, rec.arrival.name)
        heapq.heappush(self._timers, (due, self._timer_seq, key, epoch))
        self._timer_wake.set()

    async def _run_timers(self) -> None:
        while True:
            self._timer_wake.clear()
            now = self.now()
            while self._timers and self._timers[0][0] <= now:
                _due, _seq, key, epoch = heapq.heappop(self._timers)
                rec = self.records[key]
                if rec.epoch == epoch:
                    self._act(rec)
            timeout = None if not self._timers else max(0.0, self._timers[0][0] - self.now())
            await wakeup.woken(self._timer_wake, timeout)

    async def _patch_status(self, rec: Record, status: dict[str, Any]) -> dict[str, Any] | None:
        """Merge-patch the status with the body's resourceVersion; the stored body, or None."""
        body = rec.body or {}
        meta = body.get("metadata") or {}
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": status}
        async with self._write_slots:
            try:
                return await self.api.request(
                    "PATCH",
                    workloads_path(meta["namespace"], meta["name"]) + "/status",
                    patch,
                    content_type=api_mod.MERGE_PATCH,
                )
            except api_mod.Conflict:
                return None
            except api_mod.ApiError as e:
                self.errors.append(f"status of {meta.get('namespace')}/{meta.get('name')}: {e}")
                return None

    async def _finish(self, rec: Record) -> None:
        conditions = _set_conditions(
            rec.body or {}, [("Finished", True, "Succeeded", "Finished by the harness")]
        )
        await self._write(rec, {"conditions": conditions})

    async def _clear_admission(self, rec: Record) -> None:
        conditions = _set_conditions(
            rec.body or {},
            [
                ("QuotaReserved", False, "Pending", "Evicted; stopped by the harness"),
                ("Admitted", False, "NoReservation", "The workload has no reservation"),
            ],
        )
        await self._write(rec, {"admission": None, "conditions": conditions})

    async def _write(self, rec: Record, status: dict[str, Any]) -> None:
        """Patch, then look again: after a conflict, once the watch has had time to catch up."""
        try:
            stored = await self._patch_status(rec, status)
        finally:
            rec.writing = False
        if stored is not None:
            stored_rv = (stored.get("metadata") or {}).get("resourceVersion")
            if stored_rv:
                self._written[str(stored_rv)] = self.now()
            self._observe(stored)  # newer than the body it was built from; the watch may lag
            return
        rec.conflicts += 1
        self.conflicts += 1
        if rec.conflicts > _MAX_RETRIES:
            self.errors.append(f"{rec.queue.name}/{rec.arrival.name}: too many conflicts")
            return
        await asyncio.sleep(_RETRY_DELAY)
        self._act(rec)
