"""``berth simulate``: replay a scenario through the scheduling core in virtual time.

The command line contract is SIMULATE.md: files (``-`` for standard input), ``--until``,
``--output jsonl|table|summary``; exit 2 with the document, field path and problem on bad input,
printing nothing on standard output in that case.
"""

from __future__ import annotations

import sys

import click

from berth.api import duration
from berth.sim import documents, engine, output


def _until(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return duration.parse(value)
    except duration.DurationError as err:
        raise click.BadParameter(str(err)) from err


@click.command(name="simulate")
@click.argument("files", nargs=-1, required=True)
@click.option("--until", callback=_until, help="Stop the virtual clock at this time (e.g. 1h).")
@click.option(
    "--output",
    "fmt",
    type=click.Choice(["jsonl", "table", "summary"]),
    default="jsonl",
    show_default=True,
    help="jsonl: one event per line; table: a timeline; summary: per-queue figures.",
)
def command(files: tuple[str, ...], until: float | None, fmt: str) -> None:
    """Replay queue configuration and jobs in FILES through Berth's scheduler, offline."""
    try:
        docs = documents.read_files(list(files), sys.stdin)
        sim = engine.Simulator(docs, until=until)
        lines = sim.run()
    except documents.ScenarioError as err:
        for line in str(err).splitlines():
            click.echo(f"berth simulate: {line}", err=True)
        sys.exit(2)
    if fmt == "jsonl":
        click.echo(output.jsonl(lines), nl=False)
    elif fmt == "table":
        click.echo(output.table(lines), nl=False)
    else:
        click.echo(output.summary(sim), nl=False)
