"""Which admitted workloads are protected from preemption at a given time, and until when.

A workload admitted less than its window ago is no victim of the preemptions the window covers
(Kueue's KEP-9876 ``preemptionProtection``, Slurm's ``PreemptExemptTime``): the windows are the
victim's ClusterQueue's ``spec.preemptionProtection``, each unset one the Configuration's. The
window starts when the workload's quota was reserved: Berth has no admission checks, so that is
also when it was admitted, the time Kueue's proposal counts from. A workload already being
evicted is never protected (nothing is left to save).

The rules are checked after the preemption policy and the fair-sharing strategies accepted a
candidate, as Kueue's proposal does, so a protection is the only reason a protected candidate is
left out. A ``Guard`` serves one preemptor's target search at one ``now`` and remembers the
protections it applied, so the cycle can say until when the preemptor waits and when to try again.
Called by ``berth.core.preemption`` and ``berth.core.fairsharing`` through ``berth.core.cycle``.
"""

from __future__ import annotations

import dataclasses

from berth.api import conditions
from berth.api import protection as api_protection
from berth.core import snapshot

_REASON = conditions.PreemptionReason


@dataclasses.dataclass(frozen=True, slots=True)
class Protected:
    """Candidates a protection left out of a search: how many, and when the first one's ends."""

    count: int
    until: float


class Guard:
    """Tells whether a candidate is protected at ``now`` from a preemption for ``reason``."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        default: api_protection.PreemptionProtection | None,
        now: float,
    ) -> None:
        self.snap = snap
        self.default = default
        self.now = now
        self._ends: dict[tuple[str, str], float] = {}
        """The protections applied so far: when each one ends, by workload key and reason."""
        self._windows: dict[str, api_protection.PreemptionProtection | None] = {}

    def protects(
        self, victim: snapshot.AdmittedWorkload, reason: conditions.PreemptionReason
    ) -> bool:
        """Tell whether ``victim`` may not be preempted for ``reason`` now; remember it if so."""
        if victim.evicted:
            return False
        window = self._window(victim, reason)
        if window <= 0:
            return False
        ends = victim.reserved_at + window
        if ends <= self.now:
            return False
        self._ends[(str(victim.info.key), reason.value)] = ends
        return True

    def protected(self) -> Protected | None:
        """The candidates left out so far (each workload once), or None when none was."""
        if not self._ends:
            return None
        by_workload: dict[str, float] = {}
        for (key, _reason), ends in self._ends.items():
            by_workload[key] = min(ends, by_workload.get(key, ends))
        return Protected(len(by_workload), min(by_workload.values()))

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
