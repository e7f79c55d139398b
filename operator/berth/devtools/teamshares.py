"""Each team's share of GPU-hours over rolling windows, against its weighted share, for replays.

The measure of fairness ``berth bench trace`` prints: for every window of ``WINDOW`` seconds
(starting every ``STEP``) over the arrival period, each team's GPU-seconds held in it over
all teams' GPU-seconds held in it, divided by its *weighted share*: its weight over the weights
of the teams that held or waited for GPUs in the window (a team with no work claims no share).
Only windows where the team had work waiting from start to end count, since a team that waited
for nothing had all it asked for. Reported: the lowest such ratio (and whose), and how many of
those team-windows fell below one half. Pure over a replay's events; called by
``devtools.tracebench``.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

WINDOW = 7 * 24 * 3600.0
STEP = 24 * 3600.0
GOAL = 0.5
"""The goal: no team's 7-day share below half its weighted share while it has work waiting."""


@dataclasses.dataclass(frozen=True)
class Shares:
    """How the teams' shares of GPU-hours stood against their weighted shares."""

    counted: int
    """Team-windows where the team had work waiting throughout."""
    below: int
    """Of those, how many had less than ``GOAL`` of the weighted share."""
    lowest: float
    """The lowest share / weighted share among them (1.0 when none counted)."""
    lowest_team: str = ""
    lowest_at: float = 0.0
    """The start of the window of the lowest ratio."""

    @property
    def met(self) -> bool:
        """Tell whether no counted team-window fell below the goal."""
        return self.below == 0


@dataclasses.dataclass(frozen=True)
class Job:
    """What the measure needs of one job: its workload key, team, arrival and GPUs."""

    key: str
    team: str
    arrival: float
    gpus: int


def measure(
    events: Sequence[Mapping[str, Any]],
    jobs: Sequence[Job],
    until: float,
    weights: Mapping[str, float] | None = None,
) -> Shares:
    """The teams' shares over the windows that fit in ``[0, until]``."""
    weights = weights or {}
    by_key = {j.key: j for j in jobs}
    held: dict[str, list[tuple[float, float, int]]] = {}
    waiting: dict[str, list[tuple[float, float]]] = {}
    _intervals(events, by_key, held, waiting, until)
    starts = [i * STEP for i in range(int(max(until - WINDOW, 0.0) // STEP) + 1)]
    covered = {team: _union(spans) for team, spans in waiting.items()}
    counted = below = 0
    lowest, lowest_team, lowest_at = 1.0, "", 0.0
    for start in starts:
        end = start + WINDOW
        gpu_s = {t: _overlap(spans, start, end) for t, spans in held.items()}
        total = sum(gpu_s.values())
        active = {t for t, v in gpu_s.items() if v > 0} | {
            t for t, spans in covered.items() if _touches(spans, start, end)
        }
        if total <= 0 or not active:
            continue
        weight_sum = sum(weights.get(t, 1.0) for t in active)
        for team in sorted(active):
            if not _covers(covered.get(team, []), start, end):
                continue
            entitled = weights.get(team, 1.0) / weight_sum
            ratio = (gpu_s.get(team, 0.0) / total) / entitled
            counted += 1
            below += ratio < GOAL
            if ratio < lowest:
                lowest, lowest_team, lowest_at = ratio, team, start
    return Shares(counted, below, lowest, lowest_team, lowest_at)


def _intervals(
    events: Sequence[Mapping[str, Any]],
    by_key: Mapping[str, Job],
    held: dict[str, list[tuple[float, float, int]]],
    waiting: dict[str, list[tuple[float, float]]],
    until: float,
) -> None:
    """Each team's runs (begin, end, GPUs) and waits (begin, end) from the events.

    Runs and waits still open at the last event last until it, or ``until`` if later.
    """
    wait_from = {key: job.arrival for key, job in by_key.items()}
    run_from: dict[str, float] = {}
    last = until
    for e in events:
        key = str(e.get("workload") or "")
        job = by_key.get(key)
        t = float(e.get("t", 0.0))
        last = max(last, t)
        if job is None:
            continue
        if e["event"] == "Admitted":
            waiting.setdefault(job.team, []).append((wait_from.pop(key, t), t))
            run_from[key] = t
        elif e["event"] in {"Evicted", "Finished"} and key in run_from:
            held.setdefault(job.team, []).append((run_from.pop(key), t, job.gpus))
            if e["event"] == "Evicted":
                wait_from[key] = t
    for key, begin in wait_from.items():
        waiting.setdefault(by_key[key].team, []).append((begin, max(last, begin)))
    for key, begin in run_from.items():
        job = by_key[key]
        held.setdefault(job.team, []).append((begin, max(last, begin), job.gpus))


def _overlap(runs: Sequence[tuple[float, float, int]], start: float, end: float) -> float:
    return sum(g * max(0.0, min(b, end) - max(a, start)) for a, b, g in runs)


def _union(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Disjoint, sorted spans covering the same time."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _covers(spans: Sequence[tuple[float, float]], start: float, end: float) -> bool:
    """Tell whether one of the disjoint ``spans`` covers ``[start, end]`` whole."""
    i = bisect.bisect_right(spans, (start, float("inf"))) - 1
    return i >= 0 and spans[i][0] <= start and spans[i][1] >= end


def _touches(spans: Sequence[tuple[float, float]], start: float, end: float) -> bool:
    """Tell whether the disjoint ``spans`` meet ``[start, end)`` at all."""
    i = bisect.bisect_left(spans, (end, float("-inf")))
    return any(a < end and b > start for a, b in spans[max(i - 1, 0) : i + 1])
