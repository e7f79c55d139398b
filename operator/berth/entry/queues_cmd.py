"""``berth queues``: queues with usage bars and pending counts, live or from a ``--scenario``.

Prints every ClusterQueue (cohort, strategy, status, pending active/inadmissible, admitted, a
bar of usage against nominal quota per flavor and resource, and a Backfill queue's reservations)
and every LocalQueue, from the
live cluster listed by ``berth.entry.live_state`` or from a scenario played through the
simulator up to ``--at``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path

import click

from berth.adapters import metrics
from berth.adapters.kube import workloads
from berth.api import duration
from berth.core import resources
from berth.core.backfill import planning
from berth.entry import explain_cmd, live_state, options
from berth.state import explain as state_explain
from berth.state import lifecycle

BAR = 20


def bar(used: int, nominal: int, width: int = BAR) -> str:
    """A usage bar: ``#`` within nominal quota, ``+`` borrowed beyond it, ``.`` free."""
    if nominal <= 0:
        return "[" + ("+" * width if used else "." * width) + "]"
    filled = min(width, round(width * used / nominal))
    over = used > nominal
    return "[" + ("+" if over else "#") * filled + "." * (width - filled) + "]"


def render(state: lifecycle.Lifecycle, now: float, when: Callable[[float], str] = str) -> str:
    """Every ClusterQueue with its cells and reservations, then every LocalQueue.

    ``when`` prints a time: virtual in a scenario, UTC on a cluster.
    """
    cache, queues = state.cache, state.queues
    snap = cache.snapshot
    held: dict[str, list[planning.Reservation]] = {}
    for r in state_explain.reservations(state, now):
        held.setdefault(r.holder.cluster_queue, []).append(r)
    counts: dict[str, dict[str, int]] = {}
    lq_counts: dict[tuple[str, str], int] = {}
    for key, pw in sorted(queues.pending.items()):
        status = metrics.pending_status(queues, pw)
        cq_name = cache.cluster_queue_for(pw.info)
        if cq_name is not None:
            counts.setdefault(cq_name, {}).setdefault(status, 0)
            counts[cq_name][status] += 1
        lq_key = (key.namespace, pw.info.local_queue or "")
        lq_counts[lq_key] = lq_counts.get(lq_key, 0) + 1
    lines = []
    for name in sorted(snap.cluster_queues):
        info = snap.cluster_queues[name]
        c = counts.get(name, {})
        status = "active" if info.active else f"inactive ({info.inactive_reason})"
        lines.append(
            f"{name}  cohort={info.cohort or '-'}  {info.strategy.value}  {status}  "
            f"pending={c.get(metrics.PENDING_ACTIVE, 0)} active/"
            f"{c.get(metrics.PENDING_INADMISSIBLE, 0)} inadmissible  "
            f"admitted={len(snap.admitted.get(name, {}))}"
        )
        for cell in metrics.cluster_queue_cells(cache, name):
            used = resources.fmt(cell.resource, cell.usage)
            nominal = resources.fmt(cell.resource, cell.nominal)
            lines.append(
                f"  {cell.flavor + '/' + cell.resource:<28} {bar(cell.usage, cell.nominal)} "
                f"{used}/{nominal}"
            )
        lines.extend(
            f"  reservation: {r.holder.info.key} from {when(r.start)} to {when(r.end)} "
            f"(estimated runtime {r.holder.estimate.describe()})"
            for r in held.get(name, [])
        )
    lines.append("")
    lines.append("LOCALQUEUE  CLUSTERQUEUE  PENDING  ADMITTED")
    admitted: dict[tuple[str, str], int] = {}
    for key, adm in cache.admitted.items():
        lq_key = (key.namespace, adm.info.local_queue or "")
        admitted[lq_key] = admitted.get(lq_key, 0) + 1
    for (namespace, lq_name), local_queue in sorted(cache.local_queues.items()):
        lines.append(
            f"{namespace}/{lq_name}  {local_queue.spec.cluster_queue}  "
            f"{lq_counts.get((namespace, lq_name), 0)}  {admitted.get((namespace, lq_name), 0)}"
        )
    return "\n".join(lines) + "\n"


@click.command(name="queues")
@click.option(
    "--scenario",
    "files",
    multiple=True,
    help="Scenario files to play instead of reading the cluster; repeatable.",
)
@click.option(
    "--at", type=options.DURATION, help="With --scenario: show the state at this virtual time."
)
@live_state.options
def command(
    files: tuple[str, ...], at: float | None, kubeconfig: str | None, config_file: Path | None
) -> None:
    """List ClusterQueues with usage bars and pending counts, then LocalQueues."""
    live_state.check_source(files, at, kubeconfig, config_file)
    if files:
        sim = explain_cmd.run_scenario(files, at, "queues")
        click.echo(f"at {duration.format(sim.now)}")
        click.echo(render(sim.state, sim.now, duration.format), nl=False)
        return
    live = live_state.read(kubeconfig, config_file)
    world = live.world
    now = time.time()
    click.echo(f"at {dt.datetime.fromtimestamp(now, dt.UTC):%Y-%m-%d %H:%M:%S} UTC")
    click.echo(render(world.state, now, workloads.timestamp), nl=False)
