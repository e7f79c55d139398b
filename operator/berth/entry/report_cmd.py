"""``berth report``: per-queue admissions, waits, utilisation and preemption rate from history.

Reads one run of the history store (the latest unless ``--run``), computes the figures with
``history.figures`` over the window ``--since`` counts back from the run's end (for a run still
going: now), and prints them as a table, JSON or CSV. ``--plot FILE.png`` draws utilisation of
nominal quota and pending workloads over time per ClusterQueue (matplotlib, Agg backend).
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import importlib.util
import io
import json
import pathlib
import sys
from typing import Any

import click

from berth.adapters.history import figures, store
from berth.api import duration
from berth.entry import options


async def _load(url: str, run_id: int | None) -> store.RunData | None:
    engine = await store.open_store(url)
    try:
        return await store.read_run(engine, run_id)
    finally:
        await engine.dispose()


def _fmt_wait(value: float | None) -> str:
    return "-" if value is None else duration.format(value)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _cells(values: dict[figures.Cell, float]) -> str:
    return "; ".join(f"{f}/{r} {_pct(v)}" for (f, r), v in sorted(values.items())) or "-"


def _rate(fig: figures.QueueFigures) -> str:
    rate = fig.preemptions_per_100
    return "-" if rate is None else f"{rate:.1f}"


def table(report: figures.Report) -> str:
    """Two aligned tables: ClusterQueues, then LocalQueues."""
    out = [
        (
            f"window: {duration.format(report.start)} to {duration.format(report.end)} "
            "after the run started"
        ),
        "",
    ]
    for title, queues in (
        ("CLUSTERQUEUE", report.cluster_queues),
        ("LOCALQUEUE", report.local_queues),
    ):
        rows = [
            (
                title,
                "ADMITTED",
                "FINISHED",
                "WAIT P50",
                "WAIT P95",
                "WAIT MAX",
                "PREEMPTED/100",
                "UTILISATION OF NOMINAL",
                "BORROWED",
            )
        ]
        rows.extend(
            (
                fig.name,
                str(fig.admitted),
                str(fig.finished),
                _fmt_wait(fig.wait_p50),
                _fmt_wait(fig.wait_p95),
                _fmt_wait(fig.wait_max),
                _rate(fig),
                _cells(fig.utilisation),
                _cells(fig.borrowing) if fig.kind == "ClusterQueue" else "-",
            )
            for fig in queues
        )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out.extend(
            "  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(r)).rstrip() for r in rows
        )
        out.append("")
    return "\n".join(out)


def as_dicts(report: figures.Report) -> list[dict[str, Any]]:
    """Every queue's figures as JSON-ready mappings (seconds and fractions, not text)."""
    return [
        {
            "kind": fig.kind,
            "name": fig.name,
            "clusterQueue": fig.cluster_queue,
            "admitted": fig.admitted,
            "finished": fig.finished,
            "preempted": fig.preempted,
            "waitP50": fig.wait_p50,
            "waitP95": fig.wait_p95,
            "waitMax": fig.wait_max,
            "preemptionsPer100Admissions": fig.preemptions_per_100,
            "utilisation": [
                {"flavor": f, "resource": r, "fraction": v}
                for (f, r), v in sorted(fig.utilisation.items())
            ],
            "borrowing": [
                {"flavor": f, "resource": r, "fraction": v}
                for (f, r), v in sorted(fig.borrowing.items())
            ],
        }
        for fig in [*report.cluster_queues, *report.local_queues]
    ]


_CSV_FIELDS = (
    "kind",
    "name",
    "admitted",
    "finished",
    "waitP50",
    "waitP95",
    "waitMax",
    "preemptionsPer100Admissions",
    "flavor",
    "resource",
    "utilisation",
    "borrowing",
)


def as_csv(report: figures.Report) -> str:
    """One row per queue and flavor-resource (queue figures repeated); no cells: one row."""
    buf = io.StringIO()
    out = csv.DictWriter(buf, fieldnames=_CSV_FIELDS, lineterminator="\n")
    out.writeheader()
    for item in as_dicts(report):
        base = {k: item[k] for k in _CSV_FIELDS[:8]}
        borrowing = {(b["flavor"], b["resource"]): b["fraction"] for b in item["borrowing"]}
        cells = item["utilisation"] or [{"flavor": "", "resource": "", "fraction": None}]
        for cell in cells:
            out.writerow(
                {
                    **base,
                    "flavor": cell["flavor"],
                    "resource": cell["resource"],
                    "utilisation": cell["fraction"],
                    "borrowing": borrowing.get((cell["flavor"], cell["resource"])),
                }
            )
    return buf.getvalue()


def plot(data: store.RunData, path: pathlib.Path) -> None:
    """Draw utilisation of nominal quota and pending workloads over time into a PNG."""
    import matplotlib as mpl  # noqa: PLC0415 - heavy; only --plot needs it

    mpl.use("Agg")
    from matplotlib import pyplot as plt  # noqa: PLC0415 - after choosing the backend

    lines = figures.series(data.events, data.quotas)
    end = (
        data.run.duration
        if data.run.duration is not None
        else max((e.t for e in data.events), default=0.0)
    )
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
    for cq, points in sorted(lines.utilisation.items()):
        xs, ys = [p[0] for p in points] + [end], [p[1] for p in points] + [points[-1][1]]
        top.step(xs, ys, where="post", label=cq)
    for cq, counts in sorted(lines.pending.items()):
        xs = [p[0] for p in counts] + [end]
        bottom.step(xs, [p[1] for p in counts] + [counts[-1][1]], where="post", label=cq)
    top.set_ylabel("utilisation of nominal (%)")
    bottom.set_ylabel("pending workloads")
    bottom.set_xlabel("seconds since the run started")
    top.set_title(f"run {data.run.id} ({data.run.kind}) {data.run.label}"[:100])
    for axes in (top, bottom):
        axes.grid(visible=True, alpha=0.3)
        if axes.has_data():
            axes.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


@click.command(name="report")
@click.option(
    "--since", type=options.DURATION, help="Only the last DURATION of the run (e.g. 24h)."
)
@click.option("--db", "db_url", metavar="URL", help="History database (default: the data dir's).")
@click.option("--run", "run_id", type=int, help="Report on this run (default: the latest).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="How to print the figures.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True, path_type=pathlib.Path),
    help="Also draw utilisation and pending workloads over time into this PNG file.",
)
def command(
    since: float | None,
    db_url: str | None,
    run_id: int | None,
    fmt: str,
    plot_path: pathlib.Path | None,
) -> None:
    """Per ClusterQueue and LocalQueue: admissions, waits, utilisation, preemption rate."""
    if plot_path is not None and importlib.util.find_spec("matplotlib") is None:
        # matplotlib is an extra (a third of the image's root), so say how to get it.
        msg = "--plot needs matplotlib, which is not installed: pip install 'berth[plot]'"
        raise click.UsageError(msg)
    url = db_url or options.default_history_url()
    try:
        data = asyncio.run(_load(url, run_id))
    except store.HistoryError as err:
        click.echo(f"berth report: --db: {err}", err=True)
        sys.exit(2)
    if data is None:
        raise click.ClickException(f"no run recorded in {url}")
    if data.run.duration is not None:
        end = data.run.duration
    else:
        end = (dt.datetime.now(dt.UTC) - data.run.started_at).total_seconds()
    start = 0.0 if since is None else max(0.0, end - since)
    report = figures.compute(data.events, data.quotas, start=start, end=end)
    if fmt == "table":
        click.echo(table(report), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(as_dicts(report), indent=2))
    else:
        click.echo(as_csv(report), nl=False)
    if plot_path is not None:
        plot(data, plot_path)
