"""The scheduler loop: one task on the leader that runs the core and writes its decisions.

Each cycle is ``state.lifecycle``'s, as in the simulator, one per group of quota trees that share
nothing (a round, ``Lifecycle.round``): pop the group's heads, run ``core.cycle.schedule`` on the
cache's snapshot, then, before any write, *assume* every admission in the cache, mark every victim
evicted and put every pending head back where its queue's strategy says (``Lifecycle.apply_cycle``;
this module's ``_Effects`` turns them into writes). Rounds then run back to back on that state, as
the simulator settles an instant, until one makes no progress (or a batch's time is up), so a
ClusterQueue admits as many heads per API round trip as fit; only then are the batch's Workload
statuses written, each with the resourceVersion its decision was based on, and the next batch waits
for them. An eviction of a workload admitted earlier in the same batch waits for that admission's
write and builds on what it stored. Events go to a background ``Recorder``, and the advisory pending
conditions (QuotaReserved=False with the reason) are written by background senders the cycles never
wait for, the latest decision per workload. A failed admission write is undone: the admission is
forgotten, the inadmissible workloads of its quota tree are requeued, and the workload returns to
its queue after a backoff. Victims stay counted until the job controller has stopped their Jobs and
cleared their admission. Started by ``main`` once the cache is primed.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import enum
import logging
import time
from typing import Any

from berth.adapters import wakeup
from berth.adapters.kube import client, errors, events, workloads
from berth.api import conditions, names, workload_view
from berth.core import admission, cycle, protection
from berth.operator import ports
from berth.state.queues import pending

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_BACKOFF_BASE = 1.0
_BACKOFF_MAX = 30.0
_PENDING_SENDERS = 8
"""Pending-condition writes in flight at once; admissions and evictions are not limited."""
_BATCH_SECONDS = 0.1
"""How long one batch of cycles may run before its writes go out; a batch normally ends
sooner, at the first cycle that makes no progress. Bounds how long watch events wait."""


class WriteKind(enum.Enum):
    """What a status write says of a workload."""

    ADMIT = "admit"
    EVICT = "evict"
    PENDING = "pending"


@dataclasses.dataclass(slots=True)
class _Write:
    key: names.WorkloadKey
    kind: WriteKind
    body: dict[str, Any]
    rv: str | None
    status: dict[str, Any]
    event: tuple[str, str] | None = None
    changes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The conditions this write sets, to build it again on a newer body (evictions)."""


class Scheduler:
    """Runs cycles while there is work; applies decisions to state, then to the API."""

    def __init__(
        self, world: ports.SchedulerWorld, kube: client.KubeRequests, recorder: events.Records
    ) -> None:
        self.world = world
        self.kube = kube
        self.recorder = recorder
        self.failures: dict[names.WorkloadKey, int] = {}
        self.cycles = 0
        self.pending: collections.OrderedDict[names.WorkloadKey, tuple[str, str, float]] = (
            collections.OrderedDict()
        )
        """Pending conditions to write (reason, message, decided at), oldest first (ordered so
        that taking the oldest stays O(1) however many were taken before)."""
        self._pending_wake = asyncio.Event()
        self._sending: dict[names.WorkloadKey, asyncio.Future[tuple[str | None, str | None]]] = {}
        """Pending-condition writes in flight: each resolves to (the resourceVersion it was
        built on, the one it stored, or None if it failed)."""
        self._admitting: dict[names.WorkloadKey, asyncio.Future[dict[str, Any] | None]] = {}
        """Admission writes of the current batch: each resolves to the stored body, or None."""
        self.batches = 0

    async def run(self) -> None:
        """Schedule, and write pending conditions in the background, until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(_PENDING_SENDERS):
                group.create_task(self._send_pending())
            group.create_task(self._loop())

    async def _loop(self) -> None:
        w = self.world
        while True:
            # Cleared before the batch, not after its writes: whatever arrives while they are in
            # flight (a release, a newly placed workload) must start the next batch.
            w.wake.schedule.clear()
            if await self.step():
                await asyncio.sleep(0)
                continue
            now = w.clock()
            due = [
                w.queues.next_backoff_expiry(now),
                w.state.next_recheck(),
                w.state.usage.next_sample(),
            ]
            expiry = min((t for t in due if t is not None), default=None)
            timeout = None if expiry is None else max(0.05, expiry - now)
            await wakeup.woken(w.wake.schedule, timeout)

    async def step(self) -> bool:
        """Decide one batch and write its admissions and evictions; tell whether it progressed.

        The next batch waits for this one's admissions and evictions. Not waiting was measured:
        every release pushes its quota tree's parked workloads back and the next cycle parks
        them again, so cycles that run after each single release cost twice the CPU per
        admission; a batch per write round trip takes in every release of that round trip at
        once.
        """
        writes, progressed = self.decide_batch()
        if writes:
            loop = asyncio.get_running_loop()
            for x in writes:
                if x.kind == WriteKind.ADMIT:
                    self._admitting[x.key] = loop.create_future()
            await asyncio.gather(*(self._write(x) for x in writes))
        return progressed

    def decide_batch(self) -> tuple[list[_Write], bool]:
        """Run cycles back to back until one makes no progress or the batch's time is up.

        No event is taken in between, so the cycles decide exactly what Kueue's consecutive
        cycles would with nothing arriving or finishing meanwhile. Returns the writes of all of
        them and whether any progressed (then another batch follows once they are written: the
        releases and arrivals of the round trip may let more in).
        """
        w = self.world
        self.batches += 1
        writes: list[_Write] = []
        any_progress = False
        started = time.perf_counter()
        while True:
            now = w.clock()
            self._backoffs_done(now)
            more, progressed = self.decide(now)
            writes.extend(more)
            any_progress = any_progress or progressed
            if not progressed or time.perf_counter() - started >= _BATCH_SECONDS:
                return writes, any_progress

    def _backoffs_done(self, now: float) -> None:
        """End backoffs and protections that are over, and sample usage when due.

        Workloads whose backoff ended, or whose protected victims' protection ended, go back to
        their queues; the LocalQueues' usage is sampled for admission fair sharing. The
        simulator's backoff, protection-ends and usage-sample timers. A sample is written to
        the LocalQueues' statuses by the status writer.
        """
        w = self.world
        state = w.state
        for key in state.due_backoffs(now):
            state.end_backoff(key, now)
        state.end_protections(now)
        if state.sample_usage(now):
            w.wake.statuses.set()

    def decide(self, now: float) -> tuple[list[_Write], bool]:
        """Run one round of cycles and apply it; return its writes and whether it progressed.

        A round is one cycle per group of quota trees that share nothing
        (``Lifecycle.round``). The batch's time is checked between rounds, not between the
        groups of one: a batch that stopped between groups sent its writes sooner, but the
        groups left out then waited for those writes' round trip before their own cycles
        (measured, docs/benchmarks.md).
        """
        w = self.world
        effects = _Effects(self, now)
        progressed = False
        for group in w.state.round(w.policy):
            self.cycles += 1
            started = time.perf_counter()
            # Read only under waitForPodsReady's blockAdmission: it walks every admitted
            # workload.
            all_ready = not w.policy.block_admission or all(k in w.ready for k in w.cache.admitted)
            result = w.state.schedule(now, w.policy, all_pods_ready=all_ready, among=group)
            if result is None:
                continue
            if w.observer is not None:
                w.observer.cycle(result, time.perf_counter() - started)
            progressed = w.state.apply_cycle(result, now, effects, settle=False) or progressed
        return effects.writes, w.state.end_round(progressed)

    def note_pending(self, decision: cycle.Pending, now: float) -> None:
        """Hand a head's pending condition to the background senders (latest decision wins)."""
        message = decision.message
        if decision.estimated_start is not None:  # Backfill: when its reservation starts
            message = f"{message}; estimated start {workloads.timestamp(decision.estimated_start)}"
        if decision.protected is not None:
            until = workloads.timestamp(decision.protected.until)
            message = f"{message}; {protection.phrase(decision.protected, until)}"
        if decision.spent is not None:
            until = workloads.timestamp(decision.spent.until)
            message = f"{message}; {protection.budget_phrase(decision.spent, until)}"
        self.pending[decision.info.key] = (decision.reason, message, now)
        self._pending_wake.set()

    # Status bodies ------------------------------------------------------------------------------

    def _view(self, key: names.WorkloadKey) -> workload_view.WorkloadView:
        return self.world.workloads.get(key) or workload_view.WorkloadView({})

    def admit_write(self, key: names.WorkloadKey, a: cycle.Admit, now: float) -> _Write:
        """The status write of an admission: the admission, QuotaReserved and Admitted True."""
        view = self._view(key)
        cq = a.admission.cluster_queue
        changes = [
            workloads.condition(
                _COND.QUOTA_RESERVED,
                True,
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {cq}",
                now,
            ),
            workloads.condition(_COND.ADMITTED, True, "Admitted", "The workload is admitted", now),
        ]
        changes.extend(
            workloads.condition(kind, False, "Admitted", "The workload is admitted", now)
            for kind in (_COND.EVICTED, _COND.PREEMPTED, _COND.REQUEUED)
            if view.is_true(kind)
        )
        status = {
            "admission": admission.to_status(a.admission),
            "conditions": workloads.merge_conditions(view.raw_conditions, changes),
        }
        return _Write(
            key,
            WriteKind.ADMIT,
            view.body,
            view.resource_version,
            status,
            ("QuotaReserved", f"Quota reserved in ClusterQueue {cq}"),
        )

    def evict_write(self, key: names.WorkloadKey, p: cycle.Preempt, now: float) -> _Write:
        """The status write of a preemption: Evicted and Preempted True."""
        w = self.world
        if w.observer is not None:
            w.observer.preempting(p, w.cache.cluster_queue_for(p.preemptor) or "")
        view = self._view(key)
        changes = [
            workloads.condition(
                _COND.EVICTED, True, conditions.EvictionReason.PREEMPTED, p.message, now
            ),
            workloads.condition(_COND.PREEMPTED, True, p.reason.value, p.message, now),
        ]
        status = {"conditions": workloads.merge_conditions(view.raw_conditions, changes)}
        return _Write(
            key,
            WriteKind.EVICT,
            view.body,
            view.resource_version,
            status,
            ("Preempted", p.message),
            changes,
        )

    def _pending_write(
        self, key: names.WorkloadKey, reason: str, message: str, now: float
    ) -> _Write | None:
        view = self._view(key)
        current = view.condition(_COND.QUOTA_RESERVED)
        if current is not None and (current.status, current.reason, current.message) == (
            False,
            reason,
            message,
        ):
            return None
        changes = [workloads.condition(_COND.QUOTA_RESERVED, False, reason, message, now)]
        return _Write(
            key,
            WriteKind.PENDING,
            view.body,
            view.resource_version,
            {"conditions": workloads.merge_conditions(view.raw_conditions, changes)},
        )

    # Writing ------------------------------------------------------------------------------------

    async def _send_pending(self) -> None:
        """Write pending conditions, latest decision per workload, off the cycle's path.

        They are advisory (the simulator has no such write), so cycles never wait for them;
        a workload that was admitted or left its queue meanwhile is skipped, and the condition
        is built from the body known when it is sent, so a burst of decisions about one
        workload costs one write.
        """
        w = self.world
        while True:
            while not self.pending:
                self._pending_wake.clear()
                await self._pending_wake.wait()
            key, (reason, message, at) = self.pending.popitem(last=False)
            earlier = self._sending.get(key)
            if earlier is not None:
                await asyncio.shield(earlier)  # a cancelled waiter leaves the shared future be
            if key in self._sending:  # another sender took it up meanwhile: after that one
                self.pending.setdefault(key, (reason, message, at))
                continue
            if key in w.in_flight or key not in w.queues.pending:
                continue
            x = self._pending_write(key, reason, message, at)
            if x is None:
                continue
            sent: asyncio.Future[tuple[str | None, str | None]] = (
                asyncio.get_running_loop().create_future()
            )
            self._sending[key] = sent
            stored: str | None = None
            try:
                stored = await self._write(x)
            finally:
                del self._sending[key]
                if not sent.done():
                    sent.set_result((x.rv, stored))

    async def _write(self, x: _Write) -> str | None:
        """Send one write; return the resourceVersion it stored (None if it failed)."""
        stored: dict[str, Any] | None = None
        try:
            stored = await self._send(x)
        finally:
            admitting = self._admitting.pop(x.key, None) if x.kind == WriteKind.ADMIT else None
            # Done already when the batch was cancelled (the lease was lost) before this write.
            if admitting is not None and not admitting.done():
                admitting.set_result(stored)
        return None if stored is None else workload_view.WorkloadView(stored).resource_version

    async def _send(self, x: _Write) -> dict[str, Any] | None:
        w = self.world
        admitting = self._admitting.get(x.key) if x.kind == WriteKind.EVICT else None
        if admitting is not None:
            # Admitted earlier in the same batch: evict what that admission's write stored
            # (built on the older body, the two writes would race and the admission be lost).
            admitted = await asyncio.shield(admitting)
            if admitted is None:
                return None  # the admission was undone; there is nothing to evict
            stored_view = workload_view.WorkloadView(admitted)
            x.rv = stored_view.resource_version
            x.status = {
                "conditions": workloads.merge_conditions(stored_view.raw_conditions, x.changes)
            }
        earlier = self._sending.get(x.key) if x.kind != WriteKind.PENDING else None
        if earlier is not None:
            # A pending condition of the same workload is being written: wait for it, and
            # build on what it stored if it was built on the same body as this decision.
            based_on, stored_rv = await asyncio.shield(earlier)
            if stored_rv is not None and based_on == x.rv:
                x.rv = stored_rv
        try:
            stored = await workloads.patch_status(self.kube, x.key, x.rv, x.status)
        except errors.KubeError as e:
            self._undo(x, e)
            return None
        finally:
            if x.kind == WriteKind.ADMIT:
                w.in_flight.discard(x.key)
        self.failures.pop(x.key, None)
        if x.kind == WriteKind.ADMIT:
            a = x.status["admission"]
            log.info("admitted %s in ClusterQueue %s", x.key, a["clusterQueue"])
        w.apply("Workload", stored)
        w.settle_workload(x.key)  # events held while the write was in flight
        if x.event is not None:
            # Queued, not awaited: the next cycle must not wait for Events (best effort).
            self.recorder.record(stored, x.event[0], x.event[1], w.clock())
            if x.kind == WriteKind.ADMIT:
                self.recorder.record(stored, "Admitted", "The workload is admitted", w.clock())
        return stored

    def _undo(self, x: _Write, e: errors.KubeError) -> None:
        w = self.world
        if x.kind == WriteKind.PENDING:
            return  # advisory; the next cycle writes it again if it still holds
        log.warning("%s of %s failed: %s", x.kind, x.key, e)
        if x.kind == WriteKind.EVICT:
            w.state.undo_eviction(x.key)
            w.settle_workload(x.key)
            w.wake.schedule.set()
            return
        w.release(x.key)
        n = self.failures.get(x.key, 0) + 1
        self.failures[x.key] = n
        now = w.clock()
        info = w.infos.get(x.key)
        if isinstance(e, errors.NotFoundError) or info is None:
            return
        w.state.enqueue(info, now, requeue_at=now + min(_BACKOFF_BASE * 2 ** (n - 1), _BACKOFF_MAX))
        # A newer body may have arrived while the write was in flight.
        w.settle_workload(x.key)
        w.wake.schedule.set()


class _Effects:
    """The operator's effects of a cycle's decisions (``state.lifecycle.CycleEffects``): writes.

    An admission is in flight until its write returns; a victim's eviction is written and the
    job controller releases it once its job has stopped; the head a cycle tried gets its pending
    condition, as Kueue's scheduler writes it. The same-shape workloads parked with it are left
    as they are (Kueue's workload controller writes none on them either,
    ``UnadmittedWorkloadsExplicitStatus`` being off by default), which spares the API server a
    write per parked workload.
    """

    def __init__(self, scheduler: Scheduler, now: float) -> None:
        self.scheduler = scheduler
        self.now = now
        self.writes: list[_Write] = []

    def evicting(self, decision: cycle.Preempt) -> None:
        """Write Evicted and Preempted on the victim."""
        key = decision.victim.info.key
        self.writes.append(self.scheduler.evict_write(key, decision, self.now))

    def admitted(self, decision: cycle.Admit) -> None:
        """Write the admission; hold the workload's events until it returns."""
        key = decision.info.key
        self.scheduler.world.in_flight.add(key)
        self.writes.append(self.scheduler.admit_write(key, decision, self.now))

    def parked(
        self,
        decision: cycle.Pending,
        same_shape: list[pending.Told],  # noqa: ARG002 - left as they are (above)
    ) -> None:
        """Queue the head's pending condition for the background senders."""
        self.scheduler.note_pending(decision, self.now)
