"""``berth simulate``: replay a scenario through the scheduling core in virtual time.

The command line contract is SIMULATE.md: files (``-`` for standard input), ``--until``,
``--output jsonl|table|summary``; exit 2 with the document, field path and problem on bad input,
printing nothing on standard output in that case. ``--metrics-out FILE`` writes the Prometheus
exposition of the run's metrics at the end; ``--record URL`` writes the run into the history
store (the same schema the operator writes), so ``berth report`` works on simulated runs.
Neither changes what is printed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import pathlib
import sys
from typing import Any

import click

from berth.adapters import metrics
from berth.adapters.history import store, writer
from berth.entry import options
from berth.sim import documents, engine, observe, output


def _replay(
    files: tuple[str, ...], until: float | None, observers: list[engine.Observer]
) -> tuple[engine.Simulator, list[dict[str, Any]]]:
    """Run the scenario; exit 2 naming every problem of bad input, 1 if it never settles."""
    try:
        docs = documents.read_files(list(files), sys.stdin)
        sim = engine.Simulator(docs, until=until, observers=observers)
        return sim, sim.run()
    except documents.ScenarioError as err:
        for line in str(err).splitlines():
            click.echo(f"berth simulate: {line}", err=True)
        sys.exit(2)
    except engine.UnsettledError as err:
        # A limit of the scheduler, not of the input: said plainly, never as a traceback.
        click.echo(f"berth simulate: {err}", err=True)
        sys.exit(1)


@click.command(name="simulate")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--until", type=options.DURATION, help="Stop the virtual clock at this time (e.g. 1h)."
)
@click.option(
    "--output",
    "fmt",
    type=click.Choice(["jsonl", "table", "summary"]),
    default="jsonl",
    show_default=True,
    help="jsonl: one event per line; table: a timeline; summary: per-queue figures.",
)
@click.option(
    "--metrics-out",
    type=click.Path(dir_okay=False, writable=True, path_type=pathlib.Path),
    help="Write the run's metrics (Prometheus text format) to this file at the end.",
)
@click.option(
    "--record",
    "record_url",
    metavar="URL",
    help="Record the run in a history database (sqlite:///FILE, postgresql://..., or a path).",
)
def command(
    files: tuple[str, ...],
    until: float | None,
    fmt: str,
    metrics_out: pathlib.Path | None,
    record_url: str | None,
) -> None:
    """Replay queue configuration and jobs in FILES through Berth's scheduler, offline."""
    sink = metrics.Metrics()
    buffer = writer.Buffer()
    observers: list[engine.Observer] = []
    if metrics_out is not None:
        observers.append(observe.MetricsObserver(sink))
    if record_url is not None:
        observers.append(observe.HistoryRecorder(buffer))
    sim, lines = _replay(files, until, observers)
    if metrics_out is not None:
        metrics_out.write_text(sink.exposition())
    if record_url is not None:
        try:
            asyncio.run(
                writer.record_run(
                    record_url,
                    buffer,
                    kind="simulator",
                    label=" ".join(files),
                    started_at=dt.datetime.now(dt.UTC).replace(microsecond=0),
                )
            )
        except store.HistoryError as err:
            # Bad input, as a malformed file is: exit 2 with the reason, never a traceback.
            click.echo(f"berth simulate: --record: {err}", err=True)
            sys.exit(2)
    if fmt == "jsonl":
        click.echo(output.jsonl(lines), nl=False)
    elif fmt == "table":
        click.echo(output.table(lines), nl=False)
    else:
        click.echo(output.summary(sim), nl=False)
