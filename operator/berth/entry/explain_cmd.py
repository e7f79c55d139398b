"""``berth explain job/NAME|workload/NAME [-n NS]``, on the live cluster or a ``--scenario``.

Explains one workload with ``berth.state.explain`` on a state: the reason and message the core
gives it now, its position in its LocalQueue and ClusterQueue, what would have to free up, and
which admitted workloads it could preempt under its ClusterQueue's policy — beside the reason
last recorded for it (the simulator's, or the operator's ``QuotaReserved=False`` condition). The
state is the live cluster listed by ``berth.entry.live_state`` (``--kubeconfig``, ``--config``),
or a scenario played through the simulator up to ``--at`` (or its end). An admitted, finished or
deactivated workload is reported as such.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from berth.adapters.kube import workloads
from berth.api import duration, names
from berth.core import explain as core_explain
from berth.core import resources
from berth.entry import live_state, options
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
    except engine.UnsettledError as err:
        click.echo(f"berth {prog}: {err}", err=True)
        sys.exit(1)
    return sim


def _parse_target(target: str) -> tuple[str, str]:
    kind, sep, name = target.partition("/")
    if not sep or kind not in {*live_state.JOB_TARGETS, "workload"} or not name:
        kinds = ", ".join(f"{k}/NAME" for k in live_state.JOB_TARGETS)
        raise click.BadParameter(f"write {kinds} or workload/NAME", param_hint="TARGET")
    return kind, name


def _scenario_target(
    sim: engine.Simulator, kind: str, name: str, namespace: str
) -> live_state.Found:
    key = names.WorkloadKey(namespace, name)
    if kind in live_state.JOB_TARGETS:
        job = names.JobKey(live_state.JOB_TARGETS[kind], namespace, name)
        found = sim.intake.job_to_workload.get(job)
        if found is None:
            raise click.ClickException(f"no Berth job {key} in the scenario")
        key = found
    wl = sim.workloads.get(key)
    if wl is None:
        raise click.ClickException(f"no workload {key} in the scenario")
    return live_state.Found(
        key,
        None if wl.job is None else str(wl.job),
        wl.state,
        wl.info,
        wl.admission,
        sim.answer(wl),
    )


def settled(found: live_state.Found) -> str:
    """Say where a workload that is not pending stands, and where it is (or was) admitted."""
    who = f"job {found.job} (workload {found.key})" if found.job else f"workload {found.key}"
    adm = found.admission
    if adm is None or found.state not in ("admitted", "finished"):
        return f"{who}: {found.state}\n"
    lines = [f"{who}: {found.state} in ClusterQueue {adm.cluster_queue}"]
    lines.extend(
        f"  pod set {ps.name}: {ps.count} pod(s), "
        + ", ".join(f"{res} on flavor {flavor}" for res, flavor in sorted(ps.flavors.items()))
        for ps in adm.pod_sets
    )
    return "\n".join(lines) + "\n"


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
    exp: core_explain.Explanation,
    *,
    job: str | None,
    state: str,
    recorded: tuple[str, str],
    when: Callable[[float], str] = str,
) -> str:
    """The explanation as a person reads it; ``when`` prints a time (virtual or wall clock)."""
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
    lines.extend(_start_lines(exp, when))
    if exp.head is not None:
        lines.append(f"  blocked head: {exp.head}: {exp.head_reason}: {exp.head_message}")
    lines.extend(f"  note: {d}" for d in exp.details)
    lines.extend(_shortfall_lines(exp.shortfalls))
    lines.extend(_preemption_lines(exp, when))
    return "\n".join(lines) + "\n"


def _start_lines(exp: core_explain.Explanation, when: Callable[[float], str]) -> list[str]:
    if exp.estimated_start is None:
        return []
    if exp.protected is not None or exp.spent is not None:
        why = (
            "when enough of the workloads it could preempt are past their preemption protection "
            "or budget, if nothing else frees up first"
        )
    else:
        why = (
            "Backfill: when the running work's estimates leave it room, after the reservations "
            "ahead of it"
        )
    return [f"  estimated start: {when(exp.estimated_start)} ({why})"]


def _preemption_lines(exp: core_explain.Explanation, when: Callable[[float], str]) -> list[str]:
    if not exp.preemption_policy:
        return []
    lines = [f"  preemption policy: {exp.preemption_policy}"]
    if exp.victims:
        lines.extend(
            f"  could preempt: {v.workload} in {v.cluster_queue} "
            f"(priority {v.priority}, {v.reason})"
            for v in exp.victims
        )
    elif exp.protected is not None or exp.spent is not None:
        if exp.protected is not None:
            lines.append(
                f"  could preempt: nothing now; {exp.protected.count} workload(s) it could "
                f"preempt are protected until {when(exp.protected.until)} (preemptionProtection)"
            )
        if exp.spent is not None:
            whose = ", ".join(str(o) for o in exp.spent.owners)
            lines.append(
                f"  could preempt: nothing now; the preemption budget of {whose} is spent until "
                f"{when(exp.spent.until)} (preemptionBudget)"
            )
    elif exp.blocker not in ("namespace", "flavor", "queue"):
        lines.append("  could preempt: nothing under this policy")
    return lines


@click.command(name="explain")
@click.argument("target")
@click.option("-n", "--namespace", default="default", show_default=True, help="Its namespace.")
@click.option(
    "--scenario",
    "files",
    multiple=True,
    help="Scenario files to play instead of reading the cluster; repeatable.",
)
@click.option(
    "--at",
    type=options.DURATION,
    help="With --scenario: explain the state at this virtual time (e.g. 5m).",
)
@live_state.options
def command(  # noqa: PLR0917 - click passes every option positionally by name
    target: str,
    namespace: str,
    files: tuple[str, ...],
    at: float | None,
    kubeconfig: str | None,
    config_file: Path | None,
) -> None:
    """Say why TARGET (job/x, rayjob/x, ... or workload/x) is not admitted, and what would help."""
    kind, name = _parse_target(target)
    live_state.check_source(files, at, kubeconfig, config_file)
    if files:
        sim = run_scenario(files, at, "explain")
        state, policy, now = sim.state, sim.policy, sim.now
        found = _scenario_target(sim, kind, name, namespace)
        when: Callable[[float], str] = _virtual_time
    else:
        live = live_state.read(kubeconfig, config_file, namespace)
        world = live.world
        state, policy, now = world.state, world.policy, time.time()
        found = live_state.find(world, kind, name, namespace)
        when = workloads.timestamp
        click.echo(live.note(), nl=False)
    if found.state != "pending":
        click.echo(settled(found), nl=False)
        return
    exp = state_explain.explain(state, found.info, policy, now)
    click.echo(
        render(exp, job=found.job, state="pending", recorded=found.recorded, when=when), nl=False
    )


def _virtual_time(t: float) -> str:
    return f"t={duration.format(t)}"
