"""The simulator: the virtual clock and the instant effects of writes, driving ``berth.state``.

The engine plays the cluster's part on a virtual clock: it hands scenario documents at their
time to ``sim.intake`` (which turns Jobs into Workloads through their integration, as the
operator does, and tells the engine what to create, update or delete), runs scheduling cycles
until one changes nothing (or, given the instants a measured controller started its cycles, one
cycle at each of them), finishes workloads after their
duration, makes pods ready after ``ready-after``, and records every decision as an event in the
format fixed by SIMULATE.md. Every transition of state is ``state.lifecycle``'s and every
eviction rule ``state.evictions``'s, the code the operator runs; what is the simulator's own is
that each write takes effect at once (a victim is released and requeued while the cycle's
result is applied) and the timers that stand for the pods. Output is deterministic: identical
input gives identical events. Called by ``berth simulate``, ``berth explain``, tests and
benchmarks.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import heapq
import itertools
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from berth.adapters import collector
from berth.api import conditions, configuration, duration, errors, names
from berth.api import workload as api_workload
from berth.core import cycle, podsready, protection, workload
from berth.jobs import registry
from berth.jobs.framework import protocol, workload_body
from berth.sim import documents, events, intake, summary
from berth.sim.workloads import Phase, SimWorkload
from berth.state import cache as cache_mod
from berth.state import evictions, lifecycle, priorities
from berth.state.queues import manager, pending

__all__ = ["Observer", "Phase", "SimWorkload", "Simulator", "simulate"]

_MAX_CYCLES_PER_INSTANT = 100_000
_EVICT = conditions.EvictionReason
_RESTARTED = {_EVICT.LOCAL_QUEUE_STOPPED: "LocalQueueRestarted"}
"""The Requeued reason once a stopped queue runs again (ClusterQueueRestarted otherwise)."""


class Observer(Protocol):
    """Watches a run without changing it: the history recorder and the metrics feed."""

    def on_event(self, simulator: Simulator, line: dict[str, Any], sim: SimWorkload) -> None:
        """Take one event (``line`` in SIMULATE.md's shape, plus Queued and Deleted)."""

    def on_cycle(self, simulator: Simulator, result: cycle.CycleResult, seconds: float) -> None:
        """Take one scheduling cycle's decisions and its wall-clock duration."""

    def on_end(self, simulator: Simulator) -> None:
        """Take the state at the end of the run."""


class _Action(enum.Enum):
    APPLY = "apply"
    DELETE = "delete"
    FINISH = "finish"
    READY = "ready"
    READY_TIMEOUT = "ready-timeout"
    BACKOFF = "backoff"
    PROTECTION_ENDS = "protection-ends"
    """A preemption protection that kept a head pending ends (``Lifecycle.end_protections``)."""
    SAMPLE = "sample"
    """Admission fair sharing samples the LocalQueues' usage (``Lifecycle.sample_usage``)."""
    CHECKPOINT = "checkpoint"
    """A running workload saves a checkpoint: it changes the order of victims, never what fits."""
    CYCLE = "cycle"


@dataclasses.dataclass(order=True, slots=True)
class _Timer:
    at: float
    seq: int
    action: _Action = dataclasses.field(compare=False)
    doc: documents.Document | None = dataclasses.field(default=None, compare=False)
    """The document of APPLY and DELETE."""
    key: names.WorkloadKey | None = dataclasses.field(default=None, compare=False)
    """The workload of the other actions but CYCLE."""
    token: int = dataclasses.field(default=0, compare=False)
    """The workload's token when set: a newer token makes the timer stale."""


class UnsettledError(RuntimeError):
    """Scheduling at one instant never stopped changing: workloads preempt each other in a loop.

    The run cannot go on; the message names the instant and the workloads of the loop, from the
    last events, so the scenario that shows it can be reported.
    """

    def __init__(self, now: float, last: list[dict[str, Any]]) -> None:
        looping = sorted({str(e["workload"]) for e in last if e.get("event") == "Preempted"})
        super().__init__(
            f"scheduling did not settle at t={now:g} after {_MAX_CYCLES_PER_INSTANT} cycles: "
            f"{', '.join(looping) or 'workloads'} preempt each other in a loop"
        )
        self.now = now
        self.looping = looping


def _check_frameworks(
    docs: Sequence[documents.Document], enabled: Mapping[str, protocol.Integration]
) -> None:
    """Refuse job documents of a kind the Configuration does not integrate.

    The operator would never see them; every such document is named.
    """
    problems: list[tuple[documents.Location | None, errors.FieldError]] = [
        (
            doc.location,
            errors.FieldError(
                "kind",
                f"{doc.kind[1]} is not integrated: add {_FRAMEWORK_OF[doc.kind[1]]} to the "
                "Configuration's integrations.frameworks",
            ),
        )
        for doc in docs
        if doc.kind in documents.JOBS and doc.kind[1] not in enabled
    ]
    if problems:
        raise documents.ScenarioError(problems)


_FRAMEWORK_OF = {registry.make(name).kind: name.value for name in configuration.Framework}
"""The framework name that enables each kind, for the error that names it."""


class Simulator:
    """Runs one scenario; ``run`` returns the events, ending with the summary."""

    def __init__(
        self,
        docs: list[documents.Document],
        *,
        until: float | None = None,
        observers: Sequence[Observer] = (),
        cycles_at: Sequence[float] | None = None,
    ) -> None:
        """Load a scenario; ``cycles_at`` paces its scheduling when given.

        With ``cycles_at``, one cycle runs at each of these instants and none between them, as
        a controller whose cycles wait on its API writes runs them (``berth bench
        harness-replay``); by default cycles run at every instant until one changes nothing,
        as Berth's operator runs them.
        """
        self.until = until
        self.observers = tuple(observers)
        self.config = configuration.Configuration()
        for doc in docs:
            if isinstance(doc.obj, configuration.Configuration):
                self.config = doc.obj
        self.policy = cycle.Policy.from_configuration(self.config)
        watched: dict[protocol.ObjectKey, dict[str, Any]] = {}
        integrations = registry.for_configuration(self.config, watched)
        _check_frameworks(docs, integrations)
        self.state = lifecycle.Lifecycle()
        self.state.usage.configure(self.config.admission_fair_sharing)
        self.priorities = priorities.Registry()
        self.now = 0.0
        self.out = events.EventLog()
        self.out.listeners.extend(functools.partial(o.on_event, self) for o in self.observers)
        self.workloads: dict[names.WorkloadKey, SimWorkload] = {}
        self.intake = intake.Intake(
            self.config,
            integrations,
            watched,
            intake.Stores(self.state.cache, self.priorities),
            self,
        )
        self.usage_tracker = events.UsageTracker()
        self._timers: list[_Timer] = []
        self._queues_due = False
        self._drain_due = False
        self._recheck_at: float | None = None
        """When the protection-ends timer in the heap fires, if one is there."""
        self._sample_at: float | None = None
        """When the usage-sample timer in the heap fires, if one is there."""
        self._seq = itertools.count()
        self._tokens = itertools.count(1)
        self._paced = cycles_at is not None
        for at in cycles_at or ():
            self._schedule(at, _Action.CYCLE)
        for doc in docs:
            if isinstance(doc.obj, configuration.Configuration):
                continue
            self._schedule(doc.at, _Action.APPLY, doc=doc)
            if doc.delete_at is not None:
                self._schedule(doc.delete_at, _Action.DELETE, doc=doc)

    @property
    def cache(self) -> cache_mod.Cache:
        """The state's cache (read by observers and ``berth explain``)."""
        return self.state.cache

    @property
    def queues(self) -> manager.QueueManager:
        """The state's queues (read by observers and ``berth explain``)."""
        return self.state.queues

    # Timeline -----------------------------------------------------------------------------------

    def _schedule(
        self,
        at: float,
        action: _Action,
        *,
        doc: documents.Document | None = None,
        sim: SimWorkload | None = None,
    ) -> None:
        key, token = (None, 0) if sim is None else (sim.info.key, sim.token)
        heapq.heappush(self._timers, _Timer(at, next(self._seq), action, doc, key, token))

    def run(self) -> list[dict[str, Any]]:
        """Play the whole scenario and return every event, the summary last."""
        # A run makes no cyclic garbage, and walking its heap cost a third to a half of its CPU.
        with collector.paused():
            return self._run()

    def _run(self) -> list[dict[str, Any]]:
        while self._timers:
            at = self._timers[0].at
            if self.until is not None and at > self.until:
                break
            self.now = at
            cycle_due, changed = self._fire_due(at)
            if not (changed or cycle_due):
                self._schedule_sample()
                continue  # only checkpoints or samples: no cycle could decide anything new
            # Queue-level consequences of this instant's changes, once, after all of them.
            if self._drain_due:
                self._drain_due = False
                self._drain_stopped()
            if self._queues_due:
                self._queues_due = False
                self._refresh_queues()
            if not self._paced:
                self._settle()
            elif cycle_due:
                self._cycle()
            self._schedule_recheck()
            self._schedule_sample()
        end = self.until if self.until is not None else self.now
        self.now = end
        self.out.summary(summary.build(self, end))
        for observer in self.observers:
            observer.on_end(self)
        return self.out.lines

    def _fire_due(self, at: float) -> tuple[bool, bool]:
        """Fire every timer due at ``at``; say whether a paced cycle is due and what changed."""
        cycle_due = changed = False
        while self._timers and self._timers[0].at == at:
            timer = heapq.heappop(self._timers)
            if timer.action == _Action.CYCLE:
                cycle_due = True
            elif timer.action == _Action.SAMPLE:
                changed |= self._sampled(timer)
            else:
                self._fire(timer)
                changed |= timer.action != _Action.CHECKPOINT
        return cycle_due, changed

    def _schedule_recheck(self) -> None:
        """Set a timer for the first protection that keeps a head pending, if none is set."""
        recheck = self.state.next_recheck()
        if recheck is not None and (self._recheck_at is None or recheck < self._recheck_at):
            self._recheck_at = recheck
            self._schedule(recheck, _Action.PROTECTION_ENDS)

    def _schedule_sample(self) -> None:
        """Set a timer for the next usage sample, while anything else is still to happen.

        A sample changes only the order of queued workloads: with nothing left to happen it
        could decide nothing, and sampling on would never end the run.
        """
        due = self.state.usage.next_sample()
        if due is None or not self._timers:
            return
        if self._sample_at is None or due < self._sample_at:
            self._sample_at = max(due, self.now)
            self._schedule(self._sample_at, _Action.SAMPLE)

    def _sampled(self, timer: _Timer) -> bool:
        """Sample the usage; tell whether a cycle could decide anything new after it."""
        if timer.at == self._sample_at:
            self._sample_at = None
        return self.state.reorders(self.state.sample_usage(self.now))

    def _protections_end(self, timer: _Timer) -> None:
        if timer.at == self._recheck_at:
            self._recheck_at = None
        self.state.end_protections(self.now)

    def _fire(self, timer: _Timer) -> None:
        if timer.action == _Action.PROTECTION_ENDS:
            self._protections_end(timer)
            return
        if timer.doc is not None:
            if timer.action == _Action.APPLY:
                effect = self.intake.apply(timer.doc)
            else:
                effect = self.intake.delete(timer.doc)
            self._queues_due |= bool(effect & intake.Effect.QUEUES)
            self._drain_due |= bool(effect & intake.Effect.DRAIN)
            return
        sim = None if timer.key is None else self.workloads.get(timer.key)
        if sim is None:
            return
        if timer.action == _Action.BACKOFF:
            self._backoff_done(sim)
        elif sim.token == timer.token and sim.state == Phase.ADMITTED:
            self._fire_running(sim, timer.action)

    def _fire_running(self, sim: SimWorkload, action: _Action) -> None:
        """A timer of the admission ``sim`` holds now."""
        if action == _Action.FINISH:
            self._finish(sim)
        elif action == _Action.CHECKPOINT:
            self._checkpoint(sim)
        elif action == _Action.READY:
            sim.ready = True
        elif action == _Action.READY_TIMEOUT:
            self._ready_timeout(sim)

    # Workloads ----------------------------------------------------------------------------------

    def set_priority(self, sim: SimWorkload, value: int) -> None:
        """Change a workload's priority: it re-sorts if pending, and counts so in preemption."""
        if sim.info.priority == value:
            return
        sim.info = dataclasses.replace(sim.info, priority=value)
        if sim.state in (Phase.PENDING, Phase.ADMITTED):
            self._joined(self.state.change_info(sim.info, self.now))
        if sim.state == Phase.PENDING:
            self._note_blocker(sim)

    def create_workload(
        self,
        doc: documents.Document,
        new: workload_body.NewWorkload,
        uid: str,
        job: names.WorkloadKey | None,
    ) -> None:
        """Make a workload now: queued, or deactivated if its spec says so."""
        info = workload.from_api(
            new.obj,
            priority=new.resolved.value,
            creation_time=self.now,
            uid=uid,
            priority_class=new.resolved.class_name,
            job=job,
            excluded_prefixes=tuple(self.config.resources.exclude_resource_prefixes),
        )
        sim = SimWorkload(
            info,
            job,
            doc.duration,
            doc.ready_after,
            class_kind=new.resolved.class_kind,
            checkpoint_every=doc.checkpoint_every,
        )
        self.workloads[info.key] = sim
        if not info.active:
            sim.state = Phase.DEACTIVATED
            return
        self.out.notify(self.now, "Queued", sim)
        self._enqueue(sim)

    def deactivate_or_reactivate(self, sim: SimWorkload, obj: api_workload.Workload) -> None:
        """Apply a replaced Workload's spec.active: evict and withdraw it, or queue it again."""
        if obj.spec.active == sim.info.active:
            return
        sim.info = dataclasses.replace(sim.info, active=obj.spec.active)
        if not obj.spec.active:
            if sim.state == Phase.ADMITTED:
                self._evict_now(sim)
            self._withdraw(sim)
            sim.state = Phase.DEACTIVATED
            self.out.emit(self.now, "Deactivated", sim, reason="Deactivated")
            return
        sim.state = Phase.PENDING
        sim.requeue_count = 0
        self._requeued(sim, "Reactivated")
        self._enqueue(sim)

    def delete_workload(self, key: names.WorkloadKey) -> None:
        """Delete a workload now, releasing its quota if admitted."""
        sim = self.workloads.get(key)
        if sim is None:
            return
        if sim.state in (Phase.ADMITTED, Phase.PENDING):
            self.out.notify(self.now, "Deleted", sim, state=sim.state.value)
        if sim.state == Phase.ADMITTED:
            self._release(sim)
        self._withdraw(sim)
        sim.state = Phase.DELETED
        sim.token = next(self._tokens)

    # Queueing -----------------------------------------------------------------------------------

    def _withdraw(self, sim: SimWorkload) -> None:
        """Take a workload out of its queue, keeping what it was last told."""
        sim.reason, sim.message = self.answer(sim)
        self.state.withdraw(sim.info.key)

    def _enqueue(self, sim: SimWorkload, *, requeue_at: float = 0.0) -> None:
        sim.state = Phase.PENDING
        self._joined(self.state.enqueue(sim.info, self.now, requeue_at=requeue_at))
        self._note_blocker(sim)

    def _note_blocker(self, sim: SimWorkload) -> None:
        if sim.info.key in self.queues.outside:
            blocker = self.cache.blocker(sim.info)
            if blocker is not None:
                self._set_pending(sim, blocker.reason, blocker.message)

    def answer(self, sim: SimWorkload) -> tuple[str, str]:
        """Why a workload waits as it was last told: its reason and message ("" when not told).

        A workload parked with its shape holds the head's answer in the queues (``Note``),
        shared with the whole shape, until it is told something itself.
        """
        if sim.state == Phase.PENDING:
            note = self.queues.note(sim.info.key)
            if note is not None:
                return note.reason, note.message
        return sim.reason, sim.message

    def _set_pending(
        self,
        sim: SimWorkload,
        reason: str,
        message: str,
        *,
        estimated_start: float | None = None,
        protected: protection.Protected | None = None,
        spent: protection.Spent | None = None,
    ) -> None:
        changed = reason != self.answer(sim)[0]
        first_estimate = estimated_start is not None and sim.estimated_start is None
        if first_estimate:
            sim.estimated_start = estimated_start
        if estimated_start is not None:
            message = f"{message}; estimated start at {duration.format(estimated_start)}"
        until = None if protected is None else protected.until
        spent_until = None if spent is None else spent.until
        held = (until, spent_until)
        newly_held = held not in ((None, None), sim.held_until)
        sim.held_until = held
        if protected is not None:
            message = f"{message}; {protection.phrase(protected, duration.format(protected.until))}"
        if spent is not None:
            message = f"{message}; {protection.budget_phrase(spent, duration.format(spent.until))}"
        sim.reason, sim.message = reason, message
        self.queues.told(sim.info.key)
        if changed or first_estimate or newly_held:
            extra: dict[str, float] = {}
            if estimated_start is not None:
                extra["estimatedStart"] = round(estimated_start, 6)
            if until is not None:
                extra["protectedUntil"] = round(until, 6)
            if spent_until is not None:
                extra["budgetSpentUntil"] = round(spent_until, 6)
            self.out.emit(self.now, "Pending", sim, reason=reason, message=message, **extra)

    def _refresh_queues(self) -> None:
        self.state.queues_changed(self.now)
        for key in sorted(self.queues.outside):
            self._note_blocker(self.workloads[key])
        # Workloads drained by a stopped queue queue again once it runs.
        for key in sorted(self.workloads):
            sim = self.workloads[key]
            if sim.stopped_by is None or sim.state != Phase.PENDING:
                continue
            if self.cache.blocker(sim.info) is None:
                reason = _RESTARTED.get(sim.stopped_by, "ClusterQueueRestarted")
                sim.stopped_by = None
                self._requeued(sim, reason)

    def _drain_stopped(self) -> None:  # runs once per instant, after its documents
        """Evict admitted workloads of queues stopped with HoldAndDrain."""
        drained = dict(self.cache.drained())
        admitted = [evictions.Admitted(key) for key in drained]
        for e in evictions.due(admitted, drained, None, self.now):
            sim = self.workloads[e.key]
            self._evict(sim, e.reason, e.message, requeue=True)
            sim.stopped_by = e.reason

    # Scheduling: the cycle's effects, each taking place at once ---------------------------------

    def _all_ready(self) -> bool:
        # Read only under waitForPodsReady's blockAdmission: it walks every admitted workload.
        if not self.policy.block_admission:
            return True
        return all(self.workloads[k].ready for k in self.cache.admitted)

    def _settle(self) -> None:
        for _ in range(_MAX_CYCLES_PER_INSTANT):
            if not self._cycle():
                return
        raise UnsettledError(self.now, self.out.lines[-60:])

    def _cycle(self) -> bool:
        """Run one round of scheduling cycles and apply it; False once a round changes nothing.

        A round is one cycle per group of quota trees that share nothing
        (``state.lifecycle.Lifecycle.round``), each applied before the next runs.
        """
        progressed = False
        for group in self.state.round(self.policy):
            started = time.perf_counter()
            result = self.state.schedule(
                self.now, self.policy, all_pods_ready=self._all_ready(), among=group
            )
            if result is None:
                continue
            elapsed = time.perf_counter() - started
            for observer in self.observers:
                observer.on_cycle(self, result, elapsed)
            progressed = self.state.apply_cycle(result, self.now, self, settle=False) or progressed
        return self.state.end_round(progressed)

    def evicting(self, decision: cycle.Preempt) -> None:
        """A victim's eviction takes place at once: released and queued again."""
        victim = self.workloads[decision.victim.info.key]
        self.out.emit(
            self.now,
            "Preempted",
            victim,
            reason=decision.reason.value,
            by=str(decision.preemptor.key),
            message=decision.message,
        )
        self._evict(victim, _EVICT.PREEMPTED, decision.message, requeue=True)
        self._requeued(victim, _EVICT.PREEMPTED.value)

    def admitted(self, decision: cycle.Admit) -> None:
        """An admission starts the job at once; its pods and its end are timers."""
        sim = self.workloads[decision.info.key]
        self.usage_tracker.change(
            self.now, decision.admission.cluster_queue, decision.admission.usage, +1
        )
        sim.state = Phase.ADMITTED
        sim.admitted_at = self.now
        sim.admission = decision.admission
        sim.reason = sim.message = ""
        sim.token = next(self._tokens)
        queued = sim.info.creation_time if sim.requeued_at is None else sim.requeued_at
        sim.waited.append(self.now - queued)
        self.out.admitted(self.now, sim, decision.admission, sim.estimated_start)
        if sim.estimated_start is not None:
            sim.start_errors.append(self.now - sim.estimated_start)
        sim.estimated_start = None
        remaining = sim.remaining
        if remaining is not None:
            self._schedule(self.now + remaining, _Action.FINISH, sim=sim)
        self._next_checkpoint(sim)
        wfpr = self.config.wait_for_pods_ready
        sim.ready = False
        if sim.ready_after is not None:
            if sim.ready_after == 0:
                sim.ready = True
            else:
                self._schedule(self.now + sim.ready_after, _Action.READY, sim=sim)
        if wfpr is not None and not sim.ready:
            self._schedule(self.now + wfpr.timeout, _Action.READY_TIMEOUT, sim=sim)

    def _next_checkpoint(self, sim: SimWorkload) -> None:
        """Set the timer of its next checkpoint, if it saves one before it ends."""
        every, remaining = sim.checkpoint_every, sim.remaining
        if every is not None and every > 0 and (remaining is None or every < remaining):
            self._schedule(self.now + every, _Action.CHECKPOINT, sim=sim)

    def _checkpoint(self, sim: SimWorkload) -> None:
        """It saved its work so far: its Workload says so, as a job's ``checkpointed-at`` does."""
        assert sim.checkpoint_every is not None  # noqa: S101 - only such workloads set the timer
        sim.saved += sim.checkpoint_every
        sim.info = dataclasses.replace(sim.info, checkpointed_at=self.now)
        self.state.change_info(sim.info, self.now)
        self._next_checkpoint(sim)

    def parked(self, decision: cycle.Pending, same_shape: list[pending.Told]) -> None:
        """The head says why it waits; the same-shape workloads parked with it say so too.

        The queues hold their answer already (``queues.Note``); each of them that held another
        reason before tells of the change.
        """
        self._tell_same_shape(same_shape, decision.reason, decision.message)
        self._set_pending(
            self.workloads[decision.info.key],
            decision.reason,
            decision.message,
            estimated_start=decision.estimated_start,
            protected=decision.protected,
            spent=decision.spent,
        )

    def _tell_same_shape(self, same_shape: list[pending.Told], reason: str, message: str) -> None:
        """Each workload parked with its shape that held another reason tells of the change."""
        for pw, before in same_shape:
            sim = self.workloads[pw.info.key]
            if (sim.reason if before is None else before.reason) != reason:
                sim.reason, sim.message = reason, message
                self.out.emit(self.now, "Pending", sim, reason=reason, message=message)

    def _joined(self, joined: list[pending.Told]) -> None:
        """A workload that entered its queue joined its shape parked: it says why it waits."""
        for told in joined:
            note = self.queues.note(told.pw.info.key)
            if note is not None:
                self._tell_same_shape([told], note.reason, note.message)

    # Releases and evictions ---------------------------------------------------------------------

    def _requeued(self, sim: SimWorkload, reason: str) -> None:
        sim.requeued_at = self.now
        self.out.emit(self.now, "Requeued", sim, reason=reason)

    def _release(self, sim: SimWorkload, *, succeeded: bool = False) -> None:
        adm = self.state.release(sim.info.key, self.now, succeeded=succeeded)
        if adm is not None:
            self.usage_tracker.change(self.now, adm.cluster_queue, adm.admission.usage, -1)

    def _evict(
        self,
        sim: SimWorkload,
        reason: conditions.EvictionReason,
        message: str,
        *,
        requeue: bool,
        requeue_at: float = 0.0,
    ) -> None:
        self.out.emit(self.now, "Evicted", sim, reason=str(reason), message=message)
        self._release(sim)
        sim.token = next(self._tokens)
        sim.ready = False
        sim.reason = ""
        if requeue:
            self._enqueue(sim, requeue_at=requeue_at)

    def _admitted_view(self, sim: SimWorkload) -> evictions.Admitted:
        return evictions.Admitted(
            sim.info.key,
            active=sim.info.active,
            pods_ready=sim.ready,
            ready_since=sim.admitted_at or 0.0,
            requeue_count=sim.requeue_count,
        )

    def _evict_now(self, sim: SimWorkload) -> None:
        """Make the eviction ``state.evictions`` says is due for this workload, if any."""
        for e in evictions.due([self._admitted_view(sim)], {}, None, self.now):
            self._evict(sim, e.reason, e.message, requeue=False)

    def _finish(self, sim: SimWorkload) -> None:
        self._release(sim, succeeded=True)
        sim.state = Phase.FINISHED
        self.out.emit(self.now, "Finished", sim, reason=conditions.FinishReason.SUCCEEDED.value)

    def _ready_timeout(self, sim: SimWorkload) -> None:
        wfpr = self.config.wait_for_pods_ready
        due = evictions.due([self._admitted_view(sim)], {}, wfpr, self.now)
        if not due or due[0].requeue is None:
            return
        e, decision = due[0], due[0].requeue
        key = sim.info.key
        if isinstance(decision, podsready.Deactivate):
            self._evict(sim, _EVICT.DEACTIVATED, decision.message, requeue=False)
            self.state.withdraw(key)
            sim.state = Phase.DEACTIVATED
            sim.info = dataclasses.replace(sim.info, active=False)
            self.out.emit(self.now, "Deactivated", sim, reason="RequeuingLimitExceeded")
            return
        sim.requeue_count = decision.count
        if decision.order_time is not None:
            sim.info = sim.info.with_order_time(decision.order_time)
        self._evict(sim, e.reason, e.message, requeue=True, requeue_at=decision.requeue_at)
        if decision.backoff > 0:
            self._schedule(decision.requeue_at, _Action.BACKOFF, sim=sim)
        else:
            self._requeued(sim, "BackoffFinished")

    def _backoff_done(self, sim: SimWorkload) -> None:
        if sim.state != Phase.PENDING:
            return
        self._requeued(sim, "BackoffFinished")
        joined = self.state.end_backoff(sim.info.key, self.now)
        if joined is not None:
            self._joined(joined)
            self._note_blocker(sim)


def simulate(
    docs: list[documents.Document],
    *,
    until: float | None = None,
    observers: Sequence[Observer] = (),
) -> list[dict[str, Any]]:
    """Run a scenario and return its events."""
    return Simulator(docs, until=until, observers=observers).run()
