"""Which admitted workloads may not be preempted now, and until when: protections and budgets.

A workload admitted less than its window ago is no victim of the preemptions the window covers
(Kueue's KEP-9876 ``preemptionProtection``, Slurm's ``PreemptExemptTime``): the windows are the
victim's ClusterQueue's ``spec.preemptionProtection``, each unset one the Configuration's. The
window starts when the workload's quota was reserved: Berth has no admission checks, so that is
also when it was admitted, the time Kueue's proposal counts from. A workload already being
evicted is never protected (nothing is left to save).

A **budget** (``spec.preemptionBudget`` of a ClusterQueue or a Cohort: the ``PreemptedClusterQueue``
scope of Kueue's ``PreemptionLimit``, KEP-13396) lets at most ``limit`` workloads below it be
preempted, for any reason, in any sliding window of ``limitWindowDuration``. ``Budgets`` counts
the evictions the driver recorded (``Evictions``) and those of the cycle so far; a candidate below
a spent budget is left out, and a preemptor whose victims together would overspend one waits.

The rules are checked after the preemption policy and the fair-sharing strategies accepted a
candidate, as Kueue's proposal does, so a protection is the only reason a protected candidate is
left out. A ``Guard`` serves one preemptor's target search at one ``now`` and remembers the
protections and budgets it applied, so the cycle can say until when the preemptor waits and when
to try again.
Called by ``berth.core.preemption`` and ``berth.core.fairsharing`` through ``berth.core.cycle``.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from berth.api import conditions, names
from berth.api import protection as api_protection
from berth.core import snapshot

_REASON = conditions.PreemptionReason


@dataclasses.dataclass(frozen=True, slots=True)
class Protected:
    """Candidates a protection left out of a search: how many, and when the first one's ends."""

    count: int
    until: float


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Owner:
    """A ClusterQueue or a Cohort that sets a preemption budget."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


Evictions = Mapping[Owner, Sequence[float]]
"""When the workloads below each budget's owner were preempted, oldest first (the driver's)."""

Budgeted = list[tuple[Owner, api_protection.PreemptionBudget]]


@dataclasses.dataclass(frozen=True, slots=True)
class Spent:
    """Budgets that kept a preemptor back: whose, and when the first lets one more go."""

    owners: tuple[Owner, ...]
    until: float


def budget_owners(snap: snapshot.Snapshot, cq: names.ClusterQueueName) -> Budgeted:
    """The budgets a preemption of a workload of ``cq`` counts against: its own, its cohorts'."""
    out: Budgeted = []
    info = snap.cluster_queues.get(cq)
    if info is not None and info.budget is not None:
        out.append((Owner("ClusterQueue", cq), info.budget))
    node = snap.cq_nodes.get(cq)
    for cohort in () if node is None else node.ancestors():
        budget = snap.cohort_budgets.get(names.CohortName(cohort.name))
        if budget is not None:
            out.append((Owner("Cohort", cohort.name), budget))
    return out


class Budgets:
    """What is left of each preemption budget at ``now``, this cycle's preemptions counted."""

    def __init__(self, snap: snapshot.Snapshot, evictions: Evictions, now: float) -> None:
        self.snap = snap
        self.evictions = evictions
        self.now = now
        self.none = not snap.cohort_budgets and all(
            cq.budget is None for cq in snap.cluster_queues.values()
        )
        """No queue or cohort sets a budget: every question has the same answer."""
        self._spent_now: dict[Owner, int] = {}
        """Preemptions this cycle issued, per owner."""
        self._owners: dict[str, Budgeted] = {}

    def _of(self, cq: names.ClusterQueueName) -> Budgeted:
        owners = self._owners.get(cq)
        if owners is None:
            owners = self._owners[cq] = budget_owners(self.snap, cq)
        return owners

    def _until(
        self, owner: Owner, budget: api_protection.PreemptionBudget, more: int
    ) -> float | None:
        """When ``more`` preemptions below ``owner`` fit its budget; None when they fit now."""
        times = self.evictions.get(owner, ())
        window = budget.limit_window_duration
        in_window = list(times[bisect.bisect_right(times, self.now - window) :])
        excess = len(in_window) + self._spent_now.get(owner, 0) + more - budget.limit
        if excess <= 0:
            return None
        # The oldest evictions leave the window first, this cycle's last; more victims than
        # the limit never fit together and wait for a whole window.
        if excess <= len(in_window):
            return in_window[excess - 1] + window
        return self.now + window

    def spent(self, victims: Iterable[snapshot.AdmittedWorkload]) -> Spent | None:
        """The budgets these victims together would overspend, or None if they fit."""
        if self.none:
            return None
        need: dict[Owner, tuple[api_protection.PreemptionBudget, int]] = {}
        for victim in victims:
            for owner, budget in self._of(victim.cluster_queue):
                need[owner] = (budget, need.get(owner, (budget, 0))[1] + 1)
        over = [
            (owner, until)
            for owner, (budget, more) in sorted(need.items())
            if (until := self._until(owner, budget, more)) is not None
        ]
        if not over:
            return None
        return Spent(tuple(o for o, _ in over), min(u for _, u in over))

    def spend(self, victim: snapshot.AdmittedWorkload) -> None:
        """Count a preemption this cycle issued."""
        if self.none:
            return
        for owner, _budget in self._of(victim.cluster_queue):
            self._spent_now[owner] = self._spent_now.get(owner, 0) + 1


class Guard:
    """Tells whether a candidate may not be preempted now for ``reason``: protected, or budgeted."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        default: api_protection.PreemptionProtection | None,
        now: float,
        budgets: Budgets | None = None,
    ) -> None:
        self.snap = snap
        self.default = default
        self.now = now
        self.budgets = budgets
        self._ends: dict[tuple[str, str], float] = {}
        """The protections applied so far: when each one ends, by workload key and reason."""
        self._windows: dict[str, api_protection.PreemptionProtection | None] = {}
        self._spent: dict[Owner, float] = {}
        """The budgets that left candidates out, or that the cycle found overspent: until when."""

    def protects(
        self, victim: snapshot.AdmittedWorkload, reason: conditions.PreemptionReason
    ) -> bool:
        """Tell whether ``victim`` may not be preempted for ``reason`` now; remember it if so."""
        if victim.evicted:
            return False
        window = self._window(victim, reason)
        if window > 0:
            ends = victim.reserved_at + window
            if ends > self.now:
                self._ends[(str(victim.info.key), reason.value)] = ends
                return True
        if self.budgets is not None:
            spent = self.budgets.spent((victim,))
            if spent is not None:
                self.note(spent)
                return True
        return False

    def note(self, spent: Spent) -> None:
        """Remember budgets found spent (by the search, or by the cycle for a set of victims)."""
        for owner in spent.owners:
            self._spent[owner] = min(spent.until, self._spent.get(owner, spent.until))

    def protected(self) -> Protected | None:
        """The candidates left out so far (each workload once), or None when none was."""
        if not self._ends:
            return None
        by_workload: dict[str, float] = {}
        for (key, _reason), ends in self._ends.items():
            by_workload[key] = min(ends, by_workload.get(key, ends))
        return Protected(len(by_workload), min(by_workload.values()))

    def spent(self) -> Spent | None:
        """The budgets that kept candidates out so far, or None."""
        if not self._spent:
            return None
        return Spent(tuple(sorted(self._spent)), min(self._spent.values()))

    def until(self) -> float | None:
        """When the first protection or budget that kept candidates out lets one more go."""
        ends = [x.until for x in (self.protected(), self.spent()) if x is not None]
        return min(ends, default=None)

    def _window(
        self, victim: snapshot.AdmittedWorkload, reason: conditions.PreemptionReason
    ) -> float:
        cq = victim.cluster_queue
        if cq not in self._windows:
            info = self.snap.cluster_queues.get(cq)
            own = None if info is None else info.protection
            self._windows[cq] = self.default if own is None else own.over(self.default)
        windows = self._windows[cq]
        if windows is None:
            return 0.0
        if reason == _REASON.IN_CLUSTER_QUEUE:
            chosen = windows.within_cluster_queue
        elif reason == _REASON.IN_COHORT_FAIR_SHARING:
            chosen = windows.fair_sharing
        else:  # InCohortReclamation, InCohortReclaimWhileBorrowing
            chosen = windows.reclaim_within_cohort
        return 0.0 if chosen is None else chosen.min_admit_duration


def phrase(protected: Protected, until: str) -> str:
    """What a pending message adds for ``protected``, its end written by the driver as ``until``."""
    return (
        f"{protected.count} workload(s) it could preempt are protected from preemption "
        f"until {until}"
    )


def budget_phrase(spent: Spent, until: str) -> str:
    """What a pending message adds for ``spent``, its end written by the driver as ``until``."""
    whose = ", ".join(str(o) for o in spent.owners)
    return f"the preemption budget of {whose} is spent until {until}"
