"""``berth bench``: benchmarks that print figures (never pass/fail timings).

``berth bench core`` runs Kueue's scheduler-performance shapes through the simulator and reports
admission decisions per CPU-second and the cost of one scheduling cycle (p50/p99) at that scale.
``berth bench harness`` (``berth.devtools.bench_harness``) runs them against the operator on a real
API server.
"""

from __future__ import annotations

import resource
import statistics
import time
from typing import Any

import click

from berth.core import cycle, fairsharing
from berth.devtools import perfshape
from berth.devtools.bench_harness import command as harness_command
from berth.sim import engine


class _CycleTimer:
    """Watches a run: times and counts every scheduling cycle (an ``engine.Observer``)."""

    def __init__(self) -> None:
        self.cycle_seconds: list[float] = []
        self.decisions = 0
        self.admissions = 0
        self.preemptions = 0

    def on_event(self, simulator: engine.Simulator, line: dict[str, Any], sim: object) -> None:
        """Events are not counted here."""

    def on_cycle(
        self,
        simulator: engine.Simulator,  # noqa: ARG002 - the observer's signature
        result: cycle.CycleResult,
        seconds: float,
    ) -> None:
        """Count one cycle's decisions and keep its duration."""
        self.cycle_seconds.append(seconds)
        self.decisions += len(result.admitted) + len(result.pending)
        self.admissions += len(result.admitted)
        self.preemptions += len(result.preempted)

    def on_end(self, simulator: engine.Simulator) -> None:
        """Nothing to do at the end."""


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(pct / 100 * len(ordered)))]


@click.group(name="bench")
def command() -> None:
    """Benchmarks that print figures."""


command.add_command(harness_command.command)


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
        for cls in sorted(waits):
            values = waits[cls]
            click.echo(
                f"  {cls}: average time to admission {statistics.fmean(values):.2f}s "
                f"(virtual), p95 {_percentile(values, 95):.2f}s"
            )
