"""``berth bench harness-replay KUEUE_DIR --config CONFIG``: Kueue's run through Berth's core.

Reads the ``kueue`` folder a ``berth bench harness CONFIG --against kueue --dir DIR`` run left
(``DIR/kueue``: minimalkueue's log, Kueue's recorder's per-Workload states and summary),
replays the same Workloads through Berth's simulator with Kueue's create times and quota
holds (``replay``), once with scheduling cycles only when Kueue started one and
once with cycles as Berth's operator runs them, and prints one Markdown table of evictions and
average time to admission per workload class beside Kueue's own. Registered as a subcommand of
``berth bench``.
"""

from __future__ import annotations

from pathlib import Path

import click

from berth.devtools.harness import generator, kueue, replay


@click.command(name="harness-replay")
@click.argument("kueue_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--config",
    "config_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The generator config that Kueue's run was given.",
)
def command(kueue_dir: Path, config_file: Path) -> None:
    """Replay a run of Kueue's harness through Berth's core, paced as Kueue and at once."""
    try:
        config = generator.load(config_file)
        timeline = replay.read_timeline(kueue_dir)
        measured = kueue.read(kueue_dir)
        click.echo(
            f"{len(timeline.created)} Workloads, {len(timeline.cycles)} cycles of Kueue's; "
            "replaying twice",
            err=True,
        )
        paced = replay.replay(config, timeline, paced=True)
        at_once = replay.replay(config, timeline, paced=False)
    except (ValueError, kueue.KueueHarnessError) as e:
        raise click.UsageError(str(e)) from e
    click.echo(table(measured, len(timeline.cycles), paced, at_once))


def table(
    measured: kueue.KueueRun, kueue_cycles: int, paced: replay.Figures, at_once: replay.Figures
) -> str:
    """Kueue's figures and both replays' as one Markdown table."""
    names = sorted(measured.classes)
    rows = [
        (
            "evictions",
            f"{measured.evictions:,}",
            *(f"{sum(f.evictions.values()):,}" for f in (paced, at_once)),
        ),
        *(
            (
                f"evictions, {name}",
                f"{measured.classes[name].evictions:,}",
                *(f"{f.evictions.get(name, 0):,}" for f in (paced, at_once)),
            )
            for name in names
        ),
        *(
            (
                f"average time to admission, {name} (s)",
                f"{measured.classes[name].average_time_to_admission:.1f}",
                *(f"{f.average_wait.get(name, 0.0):.1f}" for f in (paced, at_once)),
            )
            for name in names
        ),
        ("scheduling cycles", f"{kueue_cycles:,}", f"{paced.cycles:,}", f"{at_once.cycles:,}"),
        ("never admitted", "n/a", f"{paced.unadmitted:,}", f"{at_once.unadmitted:,}"),
        ("wall (s)", f"{measured.wall_seconds:.1f}", f"{paced.end:.1f}", f"{at_once.end:.1f}"),
    ]
    head = "| figure | Kueue | Berth's core, Kueue's cycles | Berth's core, cycles at once |"
    return "\n".join(
        [head, "| --- | --- | --- | --- |", *("| " + " | ".join(r) + " |" for r in rows)]
    )
