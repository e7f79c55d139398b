"""``berth bench``: benchmarks that print figures (never pass/fail timings).

``berth bench core`` runs Kueue's scheduler-performance shapes through the simulator and reports
admission decisions per CPU-second and the cost of one scheduling cycle (p50/p99) at that scale,
overall and by kind of cycle (``CycleKind``).
``berth bench trace`` replays a public GPU trace (``berth.devtools.tracebench``) under each
queueing strategy and prints utilisation beside the work-conserving bound, time queued by gang
size, preemptions and the simulator's jobs per CPU-second, the replays side by side in a process
per usable CPU (``--workers``); ``--sizes`` prints its cost against the number of jobs instead.
``berth bench harness`` (``berth.devtools.harness``) runs them against the operator on a real
API server. ``berth bench differential`` (``berth.devtools.differential``) runs random cases
through real Kueue and the simulator and reports every divergence.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
import pydantic

from berth.api import duration
from berth.api import protection as api_protection
from berth.api.clusterqueue import PreemptionPolicy, QueueingStrategy
from berth.core import cycle, fairsharing
from berth.devtools import perfshape, teamshares, topologybench, tracebench
from berth.devtools.differential import command as differential_command
from berth.devtools.harness import command as harness_command
from berth.devtools.harness import replay_command
from berth.entry import options
from berth.sim import engine


class CycleKind(enum.Enum):
    """What a cycle decided, which is what its cost depends on."""

    PREEMPTING = "issued preemptions"
    ALL_ADMITTED = "admitted every head"
    NONE_ADMITTED = "admitted no head"
    MIXED = "admitted some heads"

    @classmethod
    def of(cls, result: cycle.CycleResult) -> CycleKind:
        """The kind of a cycle by its decisions (preemptions first: they cost the most)."""
        if result.preempted:
            return cls.PREEMPTING
        if not result.admitted:
            return cls.NONE_ADMITTED
        return cls.MIXED if result.pending else cls.ALL_ADMITTED


class _CycleTimer:
    """Watches a run: times and counts every scheduling cycle (an ``engine.Observer``)."""

    def __init__(self) -> None:
        self.cycle_seconds: list[float] = []
        self.round_seconds: dict[int, float] = {}
        """What each round of cycles cost in all (one cycle per group of quota trees that
        share nothing, ``Lifecycle.round``), by the queues' cycle count."""
        self.by_kind: dict[CycleKind, list[float]] = {}
        self.decisions = 0
        self.admissions = 0
        self.preemptions = 0

    def on_event(self, simulator: engine.Simulator, line: dict[str, Any], sim: object) -> None:
        """Events are not counted here."""

    def on_cycle(
        self, simulator: engine.Simulator, result: cycle.CycleResult, seconds: float
    ) -> None:
        """Count one cycle's decisions and keep its duration, and add it to its round's."""
        self.cycle_seconds.append(seconds)
        count = simulator.queues.cycle
        self.round_seconds[count] = self.round_seconds.get(count, 0.0) + seconds
        self.by_kind.setdefault(CycleKind.of(result), []).append(seconds)
        self.decisions += len(result.admitted) + len(result.pending)
        self.admissions += len(result.admitted)
        self.preemptions += len(result.preempted)

    def on_end(self, simulator: engine.Simulator) -> None:
        """Nothing to do at the end."""

    def kinds(self) -> list[str]:
        """One line per kind of cycle seen: how many, and their p50 and slowest cost."""
        return [
            f"{kind.value}: {len(times)} cycle{'' if len(times) == 1 else 's'}, "
            f"p50 {1000 * _percentile(times, 50):.2f} ms, "
            f"max {1000 * max(times):.2f} ms"
            for kind in CycleKind
            if (times := self.by_kind.get(kind))
        ]


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(pct / 100 * len(ordered)))]


@click.group(name="bench")
def command() -> None:
    """Benchmarks that print figures."""


command.add_command(harness_command.command)
command.add_command(replay_command.command)
command.add_command(differential_command.command)


@command.command(name="core")
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    type=click.Choice(sorted(perfshape.SHAPES)),
    help="Shapes to run (default: all).",
)
@click.option("--fair-sharing", is_flag=True, help="Enable fair sharing (both strategies).")
def core(shapes: tuple[str, ...], fair_sharing: bool) -> None:
    """Run Kueue's scheduler-performance shapes through the simulator and report throughput."""
    for name in shapes or ("baseline", "large-scale"):
        shape = perfshape.SHAPES[name]
        click.echo(perfshape.describe(shape))
        build_start = time.process_time()
        docs = perfshape.scenario(shape)
        build = time.process_time() - build_start
        timer = _CycleTimer()
        sim = engine.Simulator(docs, observers=[timer])
        if fair_sharing:
            sim.policy = cycle.Policy(
                fair_sharing=True,
                fair_sharing_strategies=fairsharing.DEFAULT_STRATEGIES,
            )
        cpu_start = time.process_time()
        wall_start = time.perf_counter()
        events = sim.run()
        cpu = time.process_time() - cpu_start
        wall = time.perf_counter() - wall_start
        waits: dict[str, list[float]] = {}
        for wl in sim.workloads.values():
            cls = wl.info.key.name.split("-", 1)[0]
            waits.setdefault(cls, []).extend(wl.waited)
        finished = sum(1 for e in events if e["event"] == "Finished")
        cycles = timer.cycle_seconds
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        click.echo(
            f"  mode: {'fair sharing' if fair_sharing else 'classical'}; built in {build:.1f}s CPU"
        )
        click.echo(
            f"  virtual time {sim.now:.1f}s; {timer.admissions} admissions, {finished} finished, "
            f"{timer.preemptions} preemptions, {len(cycles)} cycles"
        )
        click.echo(f"  CPU {cpu:.1f}s (wall {wall:.1f}s), peak RSS {rss:.0f} MiB")
        click.echo(
            f"  admission decisions per CPU-second: {timer.decisions / cpu:,.0f} "
            f"({timer.decisions} decisions); "
            f"admissions per CPU-second: {timer.admissions / cpu:,.0f}"
        )
        click.echo(
            f"  cycle cost: p50 {1000 * _percentile(cycles, 50):.2f} ms, "
            f"p99 {1000 * _percentile(cycles, 99):.2f} ms, "
            f"mean {1000 * statistics.fmean(cycles) if cycles else 0:.2f} ms"
        )
        rounds = list(timer.round_seconds.values())
        click.echo(
            f"  round cost (a cycle per group of quota trees, {len(rounds)} rounds): "
            f"p50 {1000 * _percentile(rounds, 50):.2f} ms, "
            f"p99 {1000 * _percentile(rounds, 99):.2f} ms"
        )
        for line in timer.kinds():
            click.echo(f"    {line}")
        for cls in sorted(waits):
            values = waits[cls]
            click.echo(
                f"  {cls}: average time to admission {statistics.fmean(values):.2f}s "
                f"(virtual), p95 {_percentile(values, 95):.2f}s"
            )


def _default_traces_dir() -> Path:
    # The project sits beside the shared folder that holds the public traces.
    return Path(__file__).resolve().parents[4] / "shared" / "traces"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}h"


def _trace_row(f: tracebench.Figures, bound: tracebench.Figures | None) -> str:
    waits = "  ".join(
        f"{_hours(f.waits[b.name].mean):>6} {_hours(f.waits[b.name].p95):>7}"
        for b in tracebench.BUCKETS
    )
    bound_util = f"{100 * bound.utilisation:5.1f}%" if bound is not None else "     -"
    return (
        f"{f.label:<20} {100 * f.utilisation:5.1f}% {bound_util} {100 * f.lost:5.1f}%  {waits}  "
        f"{_hours(f.longest_wait):>8} {f.preemptions:>7} {f.preemptions_per_job:>8.3f} "
        f"{100 * f.preempted_share:>8.1f}% {f.never_admitted:>5} "
        f"{_estimates(f):>12} {f.jobs_per_cpu_second:>10,.0f} {f.cpu_seconds:>7.1f}"
    )


def goal_lines(rows: Sequence[tracebench.Figures]) -> list[str]:
    """Each policy against Backfill's goal, beside BestEffortFIFO's utilisation."""
    best_effort = next(
        (f for f in rows if f.label == QueueingStrategy.BEST_EFFORT_FIFO.value), None
    )
    gang, ratio, points = tracebench.GOAL_GANG, tracebench.GOAL_RATIO, tracebench.GOAL_POINTS
    head = (
        f"goal: p95 wait of >={gang}-GPU jobs at most {ratio:g}x that of 1-GPU jobs, "
        f"utilisation within {points:g} points of BestEffortFIFO's"
    )
    lines = [head]
    for f in rows:
        g = tracebench.goal(f, best_effort)
        shown = "undefined" if g.ratio is None else f"{g.ratio:.2f}x"
        if g.points is None:
            verdict = "utilisation not compared (replay BestEffortFIFO too)"
        else:
            # Rounded first, and -0.0 made 0.0: a hair below BestEffortFIFO prints +0.0, not -0.0.
            shown_points = round(g.points, 1) + 0.0
            verdict = f"utilisation {shown_points:+.1f} points: {'met' if g.met else 'not met'}"
        lines.append(
            f"  {f.label:<20} >={gang} p95 {_hours(f.big_gangs.p95)} / 1-GPU p95 "
            f"{_hours(f.waits[tracebench.BUCKETS[0].name].p95)} = {shown}, {verdict}"
        )
    return lines


def _estimates(f: tracebench.Figures) -> str:
    """Mean absolute error of the estimated starts and how many there were, or -."""
    error = f.estimate_error
    return "-" if error is None else f"{_hours(error)} n={len(f.estimate_errors):,}"


_F = TypeVar("_F", bound=Callable[..., Any])


def _trace_options(command: _F) -> _F:
    """The options every trace replay takes: which trace, where, how many jobs, what load."""
    for option in reversed(
        (
            click.option(
                "--trace",
                "trace_name",
                type=click.Choice([t.value for t in tracebench.TraceName]),
                default=tracebench.TraceName.PHILLY.value,
                show_default=True,
                help="Which public trace to replay.",
            ),
            click.option(
                "--traces-dir",
                type=click.Path(file_okay=False, path_type=Path),
                envvar="BERTH_TRACES_DIR",
                help="The shared/traces folder (default: the one beside the project).",
            ),
            click.option(
                "--jobs", type=click.IntRange(min=1), help="Replay only the first N jobs."
            ),
            click.option(
                "--load",
                type=click.FloatRange(min=0.01, max=10),
                default=0.9,
                show_default=True,
                help="Size the capacity so the jobs' average demand fills this share of it.",
            ),
        )
    ):
        command = option(command)
    return command


def _read_trace(name: tracebench.TraceName, traces_dir: Path | None) -> list[tracebench.TraceJob]:
    folder = traces_dir or _default_traces_dir()
    try:
        return tracebench.read(name, folder)
    except (OSError, KeyError, ValueError) as e:
        msg = f"cannot read the {name.value} trace under {folder}: {e}; give --traces-dir"
        raise click.ClickException(msg) from e


def _first(
    jobs: list[tracebench.TraceJob], count: int | None, name: tracebench.TraceName
) -> list[tracebench.TraceJob]:
    selected = jobs[:count] if count else jobs
    if not selected:
        raise click.ClickException(f"the {name.value} trace holds no GPU job")
    return selected


@command.command(name="trace")
@_trace_options
@click.option("--gpus", type=click.IntRange(min=1), help="Capacity in GPUs (default: by --load).")
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice([p.value for p in tracebench.STRATEGIES]),
    help="Queueing strategies to replay (default: all).",
)
@click.option(
    "--sizes",
    help="Comma-separated job counts: print the simulator's cost against size instead.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also draw the mean and p95 wait per gang-size bucket of each policy into this PNG.",
)
@click.option(
    "--scenario-out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the replay (first --policy) as berth simulate input instead, and stop.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Replays run side by side in this many processes (default: one per usable CPU).",
)
@click.option(
    "--protect",
    "protections",
    multiple=True,
    type=options.DURATION,
    help=(
        "Also replay each policy with admitted jobs protected from reclaim this long "
        "(preemptionProtection.reclaimWithinCohort.minAdmitDuration, e.g. 2h); repeatable."
    ),
)
@click.option(
    "--reclaim",
    type=click.Choice([PreemptionPolicy.ANY.value, PreemptionPolicy.NEVER.value]),
    default=PreemptionPolicy.ANY.value,
    show_default=True,
    help="The teams' reclaimWithinCohort (Never: a lender waits for what it lent to come back).",
)
@click.option(
    "--checkpoint-every",
    type=options.DURATION,
    help=(
        "Every job saves a checkpoint this often (e.g. 1h): a preempted one loses only the "
        "work since its last and resumes from it, and the lost column counts only that."
    ),
)
@click.option(
    "--fair-usage",
    multiple=True,
    type=options.DURATION,
    help=(
        "Also replay the teams' LocalQueues in one ClusterQueue under admission fair sharing "
        "with this usageHalfLifeTime (e.g. 24h), beside the bound (the same queue by "
        "arrival); repeatable."
    ),
)
def trace(  # click passes every option by name
    *,
    trace_name: str,
    traces_dir: Path | None,
    jobs: int | None,
    gpus: int | None,
    load: float,
    policies: tuple[str, ...],
    sizes: str | None,
    plot_path: Path | None,
    scenario_out: Path | None,
    workers: int | None,
    protections: tuple[float, ...],
    reclaim: str,
    checkpoint_every: float | None,
    fair_usage: tuple[float, ...],
) -> None:
    """Replay a public GPU trace under each queueing strategy and print what it measured."""
    name = tracebench.TraceName(trace_name)
    all_jobs = _read_trace(name, traces_dir)
    if sizes is not None:
        _cost_against_size(all_jobs, sizes, load, gpus)
        return
    selected = _first(all_jobs, jobs, name)
    capacity = gpus or tracebench.default_capacity(selected, load)
    chosen = [QueueingStrategy(v) for v in policies] or list(tracebench.STRATEGIES)
    windows = _protection_windows(protections)
    if checkpoint_every is not None and checkpoint_every <= 0:
        raise click.BadParameter(
            "must be longer than 0s; write e.g. 1h", param_hint="--checkpoint-every"
        )
    common = tracebench.Settings(
        reclaim=PreemptionPolicy(reclaim), checkpoint_every=checkpoint_every
    )
    if scenario_out is not None:
        settings = dataclasses.replace(common, protection=windows[1] if len(windows) > 1 else 0.0)
        docs = tracebench.scenario(selected, chosen[0], capacity, settings)
        scenario_out.write_text(tracebench.scenario_yaml(docs))
        click.echo(f"wrote {len(selected):,} jobs on {capacity} GPUs to {scenario_out}")
        return
    teams = len({j.team for j in selected})
    window = selected[-1].arrival
    click.echo(
        f"{name.value}: {len(selected):,} jobs arriving over {window / 86400:.1f} days, "
        f"{teams} teams, capacity {capacity} GPUs"
        + ("" if gpus else f" (average demand {load:.0%} of it)")
        + f", reclaimWithinCohort: {reclaim}"
        + (
            ""
            if checkpoint_every is None
            else f", checkpoints every {duration.format(checkpoint_every)}"
        )
    )
    asked = [
        tracebench.Replay(
            p.value if not w else f"{p.value} +{duration.format(w)}",
            p,
            dataclasses.replace(common, protection=w),
        )
        for p in chosen
        for w in windows
    ]
    asked.extend(
        tracebench.Replay(
            f"shared AFS {duration.format(h)}",
            QueueingStrategy.BEST_EFFORT_FIFO,
            dataclasses.replace(common, bound=True, fair_usage_half_life=h),
        )
        for h in fair_usage
    )
    asked.append(
        tracebench.Replay(
            "bound", QueueingStrategy.BEST_EFFORT_FIFO, dataclasses.replace(common, bound=True)
        )
    )
    side_by_side = min(workers or len(os.sched_getaffinity(0)), len(asked))
    began = time.monotonic()
    *rows, bound = tracebench.replay_each(selected, capacity, asked, workers=side_by_side)
    took = time.monotonic() - began
    buckets = "  ".join(f"{'wait ' + b.name + ' mean/p95':>14}" for b in tracebench.BUCKETS)
    click.echo(
        f"{'policy':<20} {'util':>6} {'bound':>6} {'lost':>6}  {buckets}  {'longest':>8} "
        f"{'preempt':>7} {'per job':>8} {'preempted':>9} {'never':>5} {'start error':>12} "
        f"{'jobs/CPU-s':>10} {'CPU s':>7}"
    )
    for figures in rows:
        click.echo(_trace_row(figures, bound))
    click.echo(_trace_row(bound, None))
    click.echo(
        f"{len(asked)} replays took {took:,.1f} s of wall time, "
        + ("one after the other" if side_by_side == 1 else f"{side_by_side} side by side")
    )
    counts = "  ".join(f"{b.name}: {bound.waits[b.name].jobs:,}" for b in tracebench.BUCKETS)
    click.echo(
        f"jobs per gang-size bucket (GPUs) {counts}  "
        f">={tracebench.GOAL_GANG}: {bound.big_gangs.jobs:,}"
    )
    for line in goal_lines(rows):
        click.echo(line)
    for line in share_lines([*rows, bound]):
        click.echo(line)
    if plot_path is not None:
        title = f"{name.value}: {len(selected):,} jobs on {capacity} GPUs"
        tracebench.plot_waits([*rows, bound], title, plot_path)
        click.echo(f"wrote {plot_path}")


def share_lines(rows: Sequence[tracebench.Figures]) -> list[str]:
    """Each replay's 7-day shares of GPU-hours against the teams' weighted shares."""
    head = (
        "7-day share of GPU-hours / weighted share, for teams with work waiting all window "
        f"(goal: never below {teamshares.GOAL:g}x):"
    )
    out = [head]
    for f in rows:
        sh = f.shares
        if sh is None or not sh.counted:
            out.append(f"  {f.label:<20} no team waited a whole window")
            continue
        out.append(
            f"  {f.label:<20} lowest {sh.lowest:.2f}x (team {sh.lowest_team}, from day "
            f"{sh.lowest_at / 86400:.0f}), {sh.below:,} of {sh.counted:,} team-windows below "
            f"{teamshares.GOAL:g}x: " + ("met" if sh.met else "not met")
        )
    return out


def _protection_windows(protections: tuple[float, ...]) -> list[float]:
    """0 (no protection) and each ``--protect`` window, checked as the Configuration checks it."""
    out = [0.0]
    for seconds in protections:
        try:
            api_protection.MinAdmitDuration.model_validate(
                {"minAdmitDuration": duration.format(seconds)}
            )
        except pydantic.ValidationError as e:
            reason = e.errors()[0]["msg"].removeprefix("Value error, ")
            raise click.BadParameter(reason, param_hint="--protect") from None
        if seconds > 0 and seconds not in out:
            out.append(seconds)
    return out


@command.command(name="topology")
@_trace_options
@click.option(
    "--sample",
    type=click.FloatRange(min=1),
    default=600.0,
    show_default=True,
    help="Seconds of virtual time between two counts of stranded GPUs.",
)
def topology(
    *, trace_name: str, traces_dir: Path | None, jobs: int | None, load: float, sample: float
) -> None:
    """Replay a trace on racks of hosts, packed and spread: the GPUs fragmentation strands."""
    name = tracebench.TraceName(trace_name)
    selected = _first(_read_trace(name, traces_dir), jobs, name)
    capacity = tracebench.default_capacity(selected, load)
    nodes = topologybench.hosts(capacity)
    click.echo(
        f"{name.value}: {len(selected):,} jobs over {selected[-1].arrival / 86400:.1f} days on "
        f"{len(nodes)} hosts of 8 GPUs ({topologybench.HOSTS_PER_RACK} to a rack, "
        f"{topologybench.RACKS_PER_BLOCK} racks to a block)"
    )
    buckets = "  ".join(f"{'wait ' + b.name:>10}" for b in tracebench.BUCKETS)
    click.echo(
        f"{'profile':<18} {'stranded GPUs':>13} {'share':>6} {'util':>6}  {buckets}  {'CPU s':>7}"
    )
    for profile in topologybench.PROFILES:
        f = topologybench.replay(selected, capacity, profile, sample=sample)
        waits = "  ".join(f"{_hours(f.mean_wait[b.name]):>10}" for b in tracebench.BUCKETS)
        click.echo(
            f"{profile.value:<18} {f.stranded:>13.1f} {100 * f.stranded_share:>5.1f}% "
            f"{100 * f.utilisation:>5.1f}%  {waits}  {f.cpu_seconds:>7.1f}"
        )


def _cost_against_size(
    jobs: list[tracebench.TraceJob], sizes: str, load: float, gpus: int | None
) -> None:
    try:
        counts = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError as e:
        raise click.BadParameter(
            f"{sizes!r}: give job counts, e.g. 1000,2000,4000", param_hint="--sizes"
        ) from e
    click.echo(
        f"{'jobs':>8} {'capacity':>8} {'peak queued':>11} {'CPU s':>8} {'jobs/CPU-s':>10} "
        f"{'CPU ms/job':>10}"
    )
    for count in counts:
        selected = jobs[:count]
        capacity = gpus or tracebench.default_capacity(selected, load)
        f = tracebench.replay(str(count), selected, QueueingStrategy.BEST_EFFORT_FIFO, capacity)
        click.echo(
            f"{f.jobs:>8,} {capacity:>8} {f.peak_pending:>11,} {f.cpu_seconds:>8.1f} "
            f"{f.jobs_per_cpu_second:>10,.0f} "
            f"{1000 * f.cpu_seconds / max(f.jobs, 1):>10.2f}"
        )
