"""The simulator's output: events in SIMULATE.md's shape, and time-weighted usage.

``EventLog`` builds each event as an ordered mapping (``t``, ``event``, ``workload``, ``job``,
then the event's own fields); ``UsageTracker`` integrates each ClusterQueue's usage over virtual
time for utilisation figures. Called by ``berth.sim.engine``; printed by ``berth.sim.output``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from berth.core import admission as core_admission
from berth.core import resources, workload

if TYPE_CHECKING:
    from berth.sim.workloads import SimWorkload


def _t(now: float) -> float:
    return round(now, 6)


Listener = Callable[[dict[str, Any], "SimWorkload"], None]
"""Told of every event as it happens (history, metrics); may not change it."""


class EventLog:
    """The ordered list of events of one run, and the listeners told of each."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.listeners: list[Listener] = []

    @staticmethod
    def _line(now: float, event: str, sim: SimWorkload, fields: dict[str, Any]) -> dict[str, Any]:
        line: dict[str, Any] = {"t": _t(now), "event": event, "workload": str(sim.info.key)}
        if sim.job is not None:
            line["job"] = str(sim.job)
        line.update(fields)
        return line

    def emit(self, now: float, event: str, sim: SimWorkload, **fields: Any) -> None:  # noqa: ANN401 - event fields are JSON values of several types
        """Record one event about a workload."""
        line = self._line(now, event, sim, fields)
        self.lines.append(line)
        for listener in self.listeners:
            listener(line, sim)

    def notify(self, now: float, event: str, sim: SimWorkload, **fields: Any) -> None:  # noqa: ANN401 - as for emit
        """Tell the listeners of an event that SIMULATE.md's output leaves out (Queued, Deleted)."""
        line = self._line(now, event, sim, fields)
        for listener in self.listeners:
            listener(line, sim)

    def admitted(
        self,
        now: float,
        sim: SimWorkload,
        admission: workload.Admission,
        estimated_start: float | None = None,
    ) -> None:
        """Record an admission: its ClusterQueue, every pod set's flavors, and its estimate.

        The estimate is the start first estimated for it while it held a reservation (Backfill).
        """
        extra = {} if estimated_start is None else {"estimatedStart": _t(estimated_start)}
        self.emit(
            now,
            "Admitted",
            sim,
            clusterQueue=admission.cluster_queue,
            podSets=[_pod_set(ps) for ps in admission.pod_sets],
            **extra,
        )

    def summary(self, body: dict[str, Any]) -> None:
        """Record the closing summary."""
        line: dict[str, Any] = {"t": _t(body.pop("t")), "event": "Summary"}
        line.update(body)
        self.lines.append(line)


def _pod_set(ps: workload.PodSetAdmission) -> dict[str, Any]:
    out: dict[str, Any] = {"name": ps.name, "count": ps.count, "flavors": dict(ps.flavors)}
    if ps.topology is not None:
        out["topologyAssignment"] = core_admission.topology_status(ps.topology)
    return out


class UsageTracker:
    """Integrates usage per ClusterQueue and flavor-resource over virtual time."""

    def __init__(self) -> None:
        self.current: dict[tuple[str, resources.FlavorResource], int] = {}
        self.integral: dict[tuple[str, resources.FlavorResource], float] = {}
        self.since: dict[tuple[str, resources.FlavorResource], float] = {}

    def change(
        self, now: float, cq: str, usage: resources.FlavorResourceAmounts, sign: int
    ) -> None:
        """Add (sign +1) or remove (sign -1) usage at time ``now``."""
        for fr, amount in usage.items():
            key = (cq, fr)
            self._advance(key, now)
            self.current[key] = self.current.get(key, 0) + sign * amount

    def _advance(self, key: tuple[str, resources.FlavorResource], now: float) -> None:
        last = self.since.get(key, now)
        self.integral[key] = self.integral.get(key, 0.0) + self.current.get(key, 0) * (now - last)
        self.since[key] = now

    def used_time(self, cq: str, fr: resources.FlavorResource, end: float) -> float:
        """Usage integrated from time 0 to ``end`` (amount x seconds)."""
        key = (cq, fr)
        if key not in self.integral and key not in self.current:
            return 0.0
        self._advance(key, end)
        return self.integral[key]
