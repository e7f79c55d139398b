"""``berth explain job/NAME|workload/NAME [-n NS] --scenario FILE... [--at DURATION]``.

Plays the scenario through the simulator up to ``--at`` (or its end), then explains the
workload with ``berth.state.explain`` on the state the run reached: the reason and message the
core gave it, its position in its LocalQueue and ClusterQueue, what would have to free up, and
which admitted workloads it could preempt under its ClusterQueue's policy. The live-cluster
source (reading the operator's state) plugs into the same ``state.explain``.
"""

from __future__ import annotations

import sys

import click

from berth.api import names
from berth.core import explain as core_explain
from berth.core import resources
from berth.entry import options
from berth.sim import documents, engine
from berth.state import explain as state_explain


def run_scenario(files: tuple[str, ...], at: float | None, prog: str) -> engine.Simulator:
    """Play a scenario up to ``at``; exit 2 with every problem on bad input."""
    try:
        docs = documents.read_files(list(files), sys.stdin)
        sim = engine.Simulator(docs, until=at)
        sim.run()
    except documents.ScenarioError as err:
        for line in str(err).splitlines():
            click.echo(f"berth {prog}: {line}", err=True)
        sys.exit(2)
    return sim


def _target(sim: engine.Simulator, target: str, namespace: str) -> names.WorkloadKey:
    kind, sep, name = target.partition("/")
    if not sep or kind not in ("job", "workload"):
        raise click.BadParameter("write job/NAME or workload/NAME", param_hint="TARGET")
    key = names.WorkloadKey(namespace, name)
    if kind == "workload":
        return key
    found = sim.job_to_workload.get(key)
    if found is None:
        raise click.ClickException(f"no Berth job {key} in the scenario")
    return found


def _shortfall_lines(shortfalls: tuple[core_explain.Shortfall, ...]) -> list[str]:
    """Per flavor (in the ClusterQueue's order): what must free up, or why it never fits."""
    by_flavor: dict[str, list[core_explain.Shortfall]] = {}
    for s in shortfalls:
        by_flavor.setdefault(s.flavor, []).append(s)
    lines = []
    for flavor, cells in by_flavor.items():
        never = [s for s in cells if s.never_fits]
        if never:
            parts = ", ".join(
                f"{s.resource} {resources.fmt(s.resource, s.requested)} > "
                f"{resources.fmt(s.resource, s.maximum)}"
                for s in never
            )
            lines.append(f"  flavor {flavor}: can never fit (request > queue maximum: {parts})")
            continue
        parts = ", ".join(
            f"{resources.fmt(s.resource, s.needed)} {s.resource} "
            f"({resources.fmt(s.resource, s.available)} of "
            f"{resources.fmt(s.resource, s.requested)} available)"
            for s in cells
        )
        lines.append(f"  flavor {flavor}: must free up {parts}")
    return lines


def render(
    exp: core_explain.Explanation, *, job: str | None, state: str, recorded: tuple[str, str]
) -> str:
    """The explanation as a person reads it."""
    who = f"job {job} (workload {exp.workload})" if job else f"workload {exp.workload}"
    lines = [f"{who}: {state}"]
    lines.append(
        f"  queues: LocalQueue {exp.local_queue or '-'} -> ClusterQueue {exp.cluster_queue or '-'}"
    )
    if recorded[0] and recorded != (exp.reason, exp.message):
        lines.append(f"  condition: {recorded[0]}: {recorded[1]}")
    lines.append(f"  why: {exp.reason or 'Fits'}: {exp.message}")
    if exp.position_in_cluster_queue is not None:
        lines.append(
            f"  position: {exp.position_in_local_queue} in its LocalQueue, "
            f"{exp.position_in_cluster_queue} in ClusterQueue {exp.cluster_queue} (0 = head)"
        )
    if exp.ahead:
        lines.append(f"  ahead of it: {', '.join(exp.ahead)}")
    if exp.head is not None:
        lines.append(f"  blocked head: {exp.head}: {exp.head_reason}: {exp.head_message}")
    lines.extend(f"  note: {d}" for d in exp.details)
    lines.extend(_shortfall_lines(exp.shortfalls))
    if exp.preemption_policy:
        lines.append(f"  preemption policy: {exp.preemption_policy}")
        if exp.victims:
            lines.extend(
                f"  could preempt: {v.workload} in {v.cluster_queue} "
                f"(priority {v.priority}, {v.reason})"
                for v in exp.victims
            )
        elif exp.blocker not in ("namespace", "flavor", "queue"):
            lines.append("  could preempt: nothing under this policy")
    return "\n".join(lines) + "\n"


@click.command(name="explain")
@click.argument("target")
@click.option("-n", "--namespace", default="default", show_default=True, help="Its namespace.")
@click.option(
    "--scenario",
    "files",
    multiple=True,
    required=True,
    help="Scenario files to play (the live-cluster source comes with the operator).",
)
@click.option(
    "--at", type=options.DURATION, help="Explain the state at this virtual time (e.g. 5m)."
)
def command(target: str, namespace: str, files: tuple[str, ...], at: float | None) -> None:
    """Say why TARGET (job/NAME or workload/NAME) is not admitted, and what would change it."""
    sim = run_scenario(files, at, "explain")
    key = _target(sim, target, namespace)
    wl = sim.workloads.get(key)
    if wl is None:
        raise click.ClickException(f"no workload {key} in the scenario")
    job = str(wl.job) if wl.job is not None else None
    if wl.state != "pending":
        where = f" in ClusterQueue {wl.admission.cluster_queue}" if wl.admission else ""
        click.echo(f"{'job ' + job if job else 'workload ' + str(key)}: {wl.state}{where}")
        return
    exp = state_explain.explain(sim.cache, sim.queues, wl.info, sim.policy)
    click.echo(render(exp, job=job, state="pending", recorded=(wl.reason, wl.message)), nl=False)
