"""A run of Kueue's harness replayed through Berth's core, with Kueue's own timing.

Kueue's harness and Berth's differ in how fast each side schedules, which changes how full the
queues are and so how often a workload must preempt. To tell timing from semantics, this module
reads what one run of Kueue's harness (``berth bench harness --against kueue``) logged —
when minimalkueue saw each Workload created, when each of its scheduling cycles started, and how
long each Workload held its quota from its last admission to its finish (Kueue's recorder,
``wlStates.csv``) — and replays the same Workloads through Berth's simulator twice: with a cycle
at each instant Kueue started one and none between (``engine.Simulator(cycles_at=...)``), and
with cycles whenever anything changes, as Berth's operator runs them. If Berth's rules are
Kueue's, the paced replay evicts about as often as Kueue did. Used by ``berth bench
harness-replay``.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import datetime as dt
import json
import statistics
from pathlib import Path
from typing import Any

from berth.devtools.harness import generator
from berth.sim import documents, engine

LOG = "minimalkueue.err.log"
STATES = "wlStates.csv"
_CREATED = "Workload create event"
_CYCLE = "Scheduling cycle starts"

Key = tuple[str, str]
"""A Workload's namespace and name."""


class ReplayError(ValueError):
    """A Kueue run's files are missing or do not describe the config's Workloads."""


@dataclasses.dataclass(frozen=True, slots=True)
class KueueTimeline:
    """When things happened in one run of Kueue's harness, in seconds from its first create."""

    created: dict[Key, float]
    held: dict[Key, float]
    """Seconds from a Workload's last admission to its finish, as Kueue's recorder saw them."""
    cycles: list[float]
    """When minimalkueue started each scheduling cycle."""


@dataclasses.dataclass(frozen=True, slots=True)
class Figures:
    """One replay: evictions and average time to admission per workload class."""

    evictions: dict[str, int]
    average_wait: dict[str, float]
    """Seconds from creation to last admission, averaged over the class."""
    unadmitted: int
    """Workloads never admitted (a paced replay ends with Kueue's last cycle)."""
    cycles: int
    end: float
    """Virtual seconds from the first create to the last event."""


def _log_line(line: str) -> tuple[dt.datetime, str, dict[str, Any]] | None:
    # zap's development encoding: time, level, logger, caller, message, then the fields as JSON.
    parts = line.rstrip("\n").split("\t")
    if len(parts) < 6 or parts[4] not in {_CREATED, _CYCLE}:
        return None
    stamp = parts[0].removesuffix("Z")
    whole, _, fraction = stamp.partition(".")
    at = dt.datetime.fromisoformat(f"{whole}.{(fraction or '0')[:6]}").replace(tzinfo=dt.UTC)
    return at, parts[4], json.loads(parts[5])


def read_timeline(out: Path) -> KueueTimeline:
    """Read minimalkueue's log and the recorder's per-Workload states from a run's folder."""
    log, states = out / LOG, out / STATES
    for path in (log, states):
        if not path.is_file():
            raise ReplayError(f"{path} is missing: pass the 'kueue' folder of a harness run")
    created: dict[Key, dt.datetime] = {}
    cycles: list[dt.datetime] = []
    with log.open() as lines:
        for number, line in enumerate(lines, 1):
            try:
                parsed = _log_line(line)
            except ValueError as e:
                raise ReplayError(f"{log}:{number}: not a line of minimalkueue's log: {e}") from e
            if parsed is None:
                continue
            at, message, fields = parsed
            if message == _CYCLE:
                cycles.append(at)
            else:
                ref = fields.get("workload") or {}
                created.setdefault((str(ref.get("namespace")), str(ref.get("name"))), at)
    if not created:
        raise ReplayError(f"{log} names no created Workload: was it run with --withLogs?")
    start = min(created.values())
    held: dict[Key, float] = {}
    with states.open() as rows:
        for number, row in enumerate(csv.DictReader(rows), 2):
            try:
                held[row["namespace"], row["name"]] = (
                    int(row["ms to finish"]) - int(row["ms to admitted"])
                ) / 1000
            except (KeyError, TypeError, ValueError) as e:
                raise ReplayError(f"{states}:{number}: not a row of Kueue's recorder: {e!r}") from e
    return KueueTimeline(
        created={k: (t - start).total_seconds() for k, t in created.items()},
        held=held,
        cycles=[max(0.0, (t - start).total_seconds()) for t in cycles],
    )


def scenario(config: generator.Config, timeline: KueueTimeline) -> list[documents.Document]:
    """The config's queues at 0 and its Workloads at Kueue's create times, holding as long.

    A Workload holds its quota for the longer of its runtime and what Kueue's run measured, so
    the replay keeps Kueue's finishing lag without ever finishing a Workload early.
    """
    run = "replay"
    raws: list[dict[str, Any]] = [generator.flavor_body(run)]
    for q in generator.queues(config):
        raws += [generator.cluster_queue_body(q, run), generator.local_queue_body(q, run)]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for a in generator.arrivals(config):
        key = (a.queue.name, a.name)
        if key not in timeline.created or key not in timeline.held:
            raise ReplayError(f"Kueue's run has no record of Workload {key[0]}/{key[1]}")
        runtime = a.template.runtime_ms / 1000
        docs.append(
            documents.generated(
                generator.workload_body(a, run),
                len(docs),
                at=round(timeline.created[key], 6),
                run_for=round(max(runtime, timeline.held[key]), 6),
            )
        )
    return docs


class _Counter:
    """Counts a replay's rounds of cycles (an ``engine.Observer``).

    A round runs a cycle per group of quota trees that share nothing (``Lifecycle.round``);
    it decides what Kueue's one cycle over every queue decides, so rounds are what compare
    with Kueue's cycles.
    """

    def __init__(self) -> None:
        self.rounds: set[int] = set()

    @property
    def cycles(self) -> int:
        """Rounds that ran a cycle."""
        return len(self.rounds)

    def on_event(self, simulator: engine.Simulator, line: dict[str, Any], sim: object) -> None:
        """Events are read from the run's result."""

    def on_cycle(self, simulator: engine.Simulator, result: object, seconds: float) -> None:
        """Count the cycle's round."""
        del result, seconds
        self.rounds.add(simulator.queues.cycle)

    def on_end(self, simulator: engine.Simulator) -> None:
        """Nothing to do at the end."""


def _key(workload: str) -> Key:
    namespace, _, name = workload.partition("/")
    return namespace, name


def replay(config: generator.Config, timeline: KueueTimeline, *, paced: bool) -> Figures:
    """Replay Kueue's run through Berth's core; ``paced``: cycles only when Kueue's started."""
    counter = _Counter()
    sim = engine.Simulator(
        scenario(config, timeline),
        observers=[counter],
        cycles_at=timeline.cycles if paced else None,
    )
    events = sim.run()
    class_of = {(a.queue.name, a.name): a.template.class_name for a in generator.arrivals(config)}
    evictions = collections.Counter(
        class_of[_key(str(e["workload"]))] for e in events if e["event"] == "Preempted"
    )
    waits: dict[str, list[float]] = {c: [] for c in sorted(set(class_of.values()))}
    unadmitted = 0
    for key, sim_wl in sim.workloads.items():
        ref = (key.namespace, key.name)
        if sim_wl.admitted_at is None:
            unadmitted += 1
        else:
            waits[class_of[ref]].append(sim_wl.admitted_at - timeline.created[ref])
    return Figures(
        evictions={c: evictions.get(c, 0) for c in waits},
        average_wait={c: statistics.fmean(w) if w else 0.0 for c, w in waits.items()},
        unadmitted=unadmitted,
        cycles=counter.cycles,
        end=sim.now,
    )
