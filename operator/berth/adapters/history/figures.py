"""The numbers ``berth report`` prints, computed from one run's history rows (pure).

For a window ``[start, end]`` (seconds since the run started), per ClusterQueue and LocalQueue:

- **admitted**, **finished**: Admitted and Finished rows in the window.
- **wait p50 / p95 / max**: ``wait_seconds`` of the Admitted rows (nearest-rank percentiles,
  as ``berth simulate --output summary``).
- **utilisation** per flavor and resource: usage integrated over the window divided by nominal
  quota integrated over the window. Usage starts at an Admitted row and ends at the workload's
  next Evicted, Finished or Deleted row; the first quota table of a run holds from its start.
  A LocalQueue's utilisation is the share of its ClusterQueue's nominal quota it used.
- **borrowing share** (ClusterQueues): of the usage integral, the part above nominal quota.
- **preemptions per 100 admissions**: Preempted rows whose victim was admitted in the queue,
  per 100 Admitted rows of the queue (none without admissions).

``series`` gives the step functions behind ``--plot``: utilisation of nominal quota and pending
workloads over time per ClusterQueue. Called by ``berth report`` and its tests.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import TypeVar

from berth.adapters.history import records

_K = records.EventKind
_ENDS_ADMISSION = (_K.EVICTED, _K.FINISHED, _K.DELETED)

_V = TypeVar("_V", float, int)

Cell = tuple[str, str]
"""(flavor, resource)."""


@dataclasses.dataclass(slots=True)
class QueueFigures:
    """The report's numbers for one queue."""

    kind: str
    """ClusterQueue or LocalQueue."""
    name: str
    """A ClusterQueue's name, or ``namespace/name`` of a LocalQueue."""
    cluster_queue: str
    admitted: int = 0
    finished: int = 0
    preempted: int = 0
    waits: list[float] = dataclasses.field(default_factory=list)
    utilisation: dict[Cell, float] = dataclasses.field(default_factory=dict)
    borrowing: dict[Cell, float] = dataclasses.field(default_factory=dict)

    @property
    def wait_p50(self) -> float | None:
        """Median wait (nearest rank); None without admissions."""
        return percentile(self.waits, 50)

    @property
    def wait_p95(self) -> float | None:
        """95th-percentile wait (nearest rank); None without admissions."""
        return percentile(self.waits, 95)

    @property
    def wait_max(self) -> float | None:
        """Longest wait; None without admissions."""
        return max(self.waits) if self.waits else None

    @property
    def preemptions_per_100(self) -> float | None:
        """Victims in this queue per 100 admissions into it; None without admissions."""
        return 100 * self.preempted / self.admitted if self.admitted else None


@dataclasses.dataclass(slots=True)
class Report:
    """Every queue's figures for one window of one run."""

    start: float
    end: float
    cluster_queues: list[QueueFigures]
    local_queues: list[QueueFigures]


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _quota_tables(
    quotas: Iterable[records.QuotaRow],
) -> list[tuple[float, dict[str, dict[Cell, int]]]]:
    """The quota tables in time order: (from t, ClusterQueue -> cell -> nominal)."""
    tables: dict[float, dict[str, dict[Cell, int]]] = {}
    for q in quotas:
        tables.setdefault(q.t, {}).setdefault(q.cluster_queue, {})[(q.flavor, q.resource)] = (
            q.nominal
        )
    ordered = sorted(tables.items())
    if ordered:
        ordered[0] = (0.0, ordered[0][1])
    return ordered


class _Integrator:
    """Integrals over ``[start, end]`` of step functions keyed by anything hashable."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end
        self.value: dict[object, float] = {}
        self.since: dict[object, float] = {}
        self.total: dict[object, float] = {}

    def set(self, key: object, t: float, value: float) -> None:
        """The function ``key`` takes ``value`` from ``t`` on."""
        self._advance(key, t)
        self.value[key] = value

    def _advance(self, key: object, t: float) -> None:
        last = self.since.get(key, t)
        lo, hi = max(last, self.start), min(t, self.end)
        if hi > lo:
            self.total[key] = self.total.get(key, 0.0) + self.value.get(key, 0.0) * (hi - lo)
        self.since[key] = t

    def integral(self, key: object) -> float:
        """The integral over the window."""
        self._advance(key, max(self.end, self.since.get(key, self.end)))
        return self.total.get(key, 0.0)


def compute(
    events: list[records.Record], quotas: list[records.QuotaRow], *, start: float, end: float
) -> Report:
    """Compute every queue's figures over ``[start, end]`` from a run's rows (in time order)."""
    walk = _Walk(_quota_tables(quotas), start, end)
    for r in events:
        walk.event(r)
    walk.quota_changes_until(end)
    walk.fill_utilisation()
    cqs, lqs = walk.cqs, walk.lqs
    return Report(start, end, [cqs[k] for k in sorted(cqs)], [lqs[k] for k in sorted(lqs)])


class _Walk:
    """One pass over a run's rows in time order, counting and integrating."""

    def __init__(
        self, tables: list[tuple[float, dict[str, dict[Cell, int]]]], start: float, end: float
    ) -> None:
        self.tables = tables
        self.start, self.end = start, end
        self.cqs: dict[str, QueueFigures] = {}
        self.lqs: dict[str, QueueFigures] = {}
        self.integ = _Integrator(start, end)
        self.usage: dict[tuple[str, str, str, str], int] = {}
        self.current: dict[str, tuple[str, str, dict[str, dict[str, int]]]] = {}
        self.pending_tables = list(tables)
        for _, table in tables:
            for cq in table:
                self.cq_fig(cq)

    def cq_fig(self, name: str) -> QueueFigures:
        return self.cqs.setdefault(name, QueueFigures("ClusterQueue", name, name))

    def lq_fig(self, lq: str, cq: str) -> QueueFigures:
        return self.lqs.setdefault(lq, QueueFigures("LocalQueue", lq, cq))

    def borrowed(self, t: float, cq: str, flavor: str, res: str) -> float:
        nominal = _nominal_at(self.tables, t, cq, (flavor, res))
        return max(0, self.usage.get(("cq", cq, flavor, res), 0) - nominal)

    def change(
        self, t: float, cq: str, lq: str, resources: dict[str, dict[str, int]], sign: int
    ) -> None:
        for flavor, amounts in resources.items():
            for res, amount in amounts.items():
                for key in (("cq", cq, flavor, res), ("lq", lq, flavor, res)):
                    self.usage[key] = self.usage.get(key, 0) + sign * amount
                    self.integ.set(key, t, self.usage[key])
                self.integ.set(("borrowed", cq, flavor, res), t, self.borrowed(t, cq, flavor, res))

    def quota_changes_until(self, t: float) -> None:
        # A new quota table moves the borrowed amount of every cell it names.
        while self.pending_tables and self.pending_tables[0][0] <= t:
            since, table = self.pending_tables.pop(0)
            for cq, cells in table.items():
                for flavor, res in cells:
                    self.integ.set(
                        ("borrowed", cq, flavor, res), since, self.borrowed(since, cq, flavor, res)
                    )

    def event(self, r: records.Record) -> None:
        self.quota_changes_until(r.t)
        inside = self.start <= r.t <= self.end
        lq_name = f"{r.namespace}/{r.local_queue}"
        if r.kind == _K.ADMITTED:
            self.current[r.workload] = (r.cluster_queue, lq_name, r.resources)
            self.change(r.t, r.cluster_queue, lq_name, r.resources, +1)
            if inside:
                for fig in (self.cq_fig(r.cluster_queue), self.lq_fig(lq_name, r.cluster_queue)):
                    fig.admitted += 1
                    if r.wait_seconds is not None:
                        fig.waits.append(r.wait_seconds)
        elif r.kind in _ENDS_ADMISSION and r.workload in self.current:
            cq, lq, resources = self.current.pop(r.workload)
            self.change(r.t, cq, lq, resources, -1)
            if inside and r.kind == _K.FINISHED:
                self.cq_fig(cq).finished += 1
                self.lq_fig(lq, cq).finished += 1
        elif r.kind == _K.PREEMPTED and inside and r.workload in self.current:
            cq, lq, _ = self.current[r.workload]
            self.cq_fig(cq).preempted += 1
            self.lq_fig(lq, cq).preempted += 1

    def fill_utilisation(self) -> None:
        tables, integ, start, end = self.tables, self.integ, self.start, self.end
        cells: dict[str, set[Cell]] = {}
        for _, table in tables:
            for cq, table_cells in table.items():
                cells.setdefault(cq, set()).update(table_cells)
        for name, fig in self.cqs.items():
            for cell in sorted(cells.get(name, set())):
                nominal = _nominal_integral(tables, name, cell, start, end)
                used = integ.integral(("cq", name, *cell))
                if nominal > 0:
                    fig.utilisation[cell] = used / nominal
                if used > 0:
                    fig.borrowing[cell] = integ.integral(("borrowed", name, *cell)) / used
        for name, fig in self.lqs.items():
            for cell in sorted(cells.get(fig.cluster_queue, set())):
                nominal = _nominal_integral(tables, fig.cluster_queue, cell, start, end)
                if nominal > 0:
                    fig.utilisation[cell] = integ.integral(("lq", name, *cell)) / nominal


def _nominal_at(
    tables: list[tuple[float, dict[str, dict[Cell, int]]]], t: float, cq: str, cell: Cell
) -> int:
    nominal = 0
    for since, table in tables:
        if since > t:
            break
        nominal = table.get(cq, {}).get(cell, 0)
    return nominal


def _nominal_integral(
    tables: list[tuple[float, dict[str, dict[Cell, int]]]],
    cq: str,
    cell: Cell,
    start: float,
    end: float,
) -> float:
    total = 0.0
    for i, (since, table) in enumerate(tables):
        until = tables[i + 1][0] if i + 1 < len(tables) else end
        lo, hi = max(since, start), min(until, end)
        if hi > lo:
            total += table.get(cq, {}).get(cell, 0) * (hi - lo)
    return total


@dataclasses.dataclass(frozen=True, slots=True)
class Series:
    """Step functions for the plot: times and values per ClusterQueue."""

    utilisation: dict[str, list[tuple[float, float]]]
    """Per ClusterQueue: total usage over total nominal quota of its resources, in percent,
    averaged over the flavor-resource cells with nominal quota."""
    pending: dict[str, list[tuple[float, int]]]
    """Per ClusterQueue: workloads queued and not admitted."""


def series(events: list[records.Record], quotas: list[records.QuotaRow]) -> Series:
    """Utilisation and pending workloads over time, per ClusterQueue."""
    tables = _quota_tables(quotas)
    usage: dict[str, dict[Cell, int]] = {}
    current: dict[str, tuple[str, dict[str, dict[str, int]]]] = {}
    pending_where: dict[str, str] = {}
    util: dict[str, list[tuple[float, float]]] = {}
    pending: dict[str, list[tuple[float, int]]] = {}

    def note(t: float, cq: str) -> None:
        cells = {cell: n for cell, n in _table_at(tables, t).get(cq, {}).items() if n > 0}
        shares = [100 * usage.get(cq, {}).get(cell, 0) / n for cell, n in cells.items()]
        count = sum(1 for where in pending_where.values() if where == cq)
        _step(util.setdefault(cq, []), t, sum(shares) / len(shares) if shares else 0.0)
        _step(pending.setdefault(cq, []), t, count)

    for r in events:
        cq = r.cluster_queue
        requeued = r.kind in (_K.QUEUED, _K.REQUEUED) or (
            r.kind == _K.EVICTED and r.workload in current
        )
        if requeued and cq:
            pending_where[r.workload] = cq
        if r.kind == _K.ADMITTED:
            pending_where.pop(r.workload, None)
            current[r.workload] = (cq, r.resources)
            _add(usage.setdefault(cq, {}), r.resources, +1)
        elif r.kind in _ENDS_ADMISSION and r.workload in current:
            old_cq, resources = current.pop(r.workload)
            _add(usage.setdefault(old_cq, {}), resources, -1)
            cq = old_cq
        if r.kind in (_K.DEACTIVATED, _K.DELETED, _K.FINISHED):
            pending_where.pop(r.workload, None)
        if cq:
            note(r.t, cq)
    return Series(util, pending)


def _table_at(
    tables: list[tuple[float, dict[str, dict[Cell, int]]]], t: float
) -> dict[str, dict[Cell, int]]:
    found: dict[str, dict[Cell, int]] = {}
    for since, table in tables:
        if since > t:
            break
        found = table
    return found


def _add(target: dict[Cell, int], resources: dict[str, dict[str, int]], sign: int) -> None:
    for flavor, amounts in resources.items():
        for res, amount in amounts.items():
            target[(flavor, res)] = target.get((flavor, res), 0) + sign * amount


def _step(points: list[tuple[float, _V]], t: float, value: _V) -> None:
    """Append a step; several changes at one instant keep only the last value."""
    if points and points[-1][0] == t:
        points[-1] = (t, value)
    else:
        points.append((t, value))
