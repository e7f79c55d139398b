"""``berth bench differential``: a campaign of random cases through Kueue and Berth, reported.

Needs Kueue's harness built (``scripts/build-control-plane``: minimalkueue and Kueue's CRDs) and
starts its own etcd and kube-apiserver. Prints the report as Markdown (``--report`` writes it
too); ``--out`` keeps the minimal Kueue/Berth YAML pair of every shrunk divergence. Exit 1 if any
deterministic divergence was found. Registered as a subcommand of ``berth bench``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from berth.devtools.devcluster import errors as devcluster_errors
from berth.devtools.differential import campaign


@click.command(name="differential")
@click.option("--cases", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True, help="The first case's seed.")
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=12,
    show_default=True,
    help="Cases played at once on Kueue's API server (names prefixed apart).",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Kueue runs again of each diverging case, to tell timing-dependent ones apart.",
)
@click.option("--shrink-per-class", type=click.IntRange(min=0), default=3, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write each minimal Kueue/Berth YAML pair under this folder.",
)
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the Markdown report to this file too.",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/berth-differential"),  # noqa: S108 - a scratch folder, overridable
    show_default=True,
    help="Control planes' run directories and minimalkueue's log.",
)
def command(  # noqa: PLR0917 - click passes every option positionally by name
    cases: int,
    seed: int,
    parallel: int,
    repeats: int,
    shrink_per_class: int,
    out: Path | None,
    report: Path | None,
    work: Path,
) -> None:
    """Run random cases through real Kueue and Berth's simulator; report every divergence."""
    settings = campaign.Settings(
        cases=cases,
        seed=seed,
        parallel=parallel,
        repeats=repeats,
        shrink_per_class=shrink_per_class,
        out=out,
        work=work,
    )
    try:
        result = asyncio.run(campaign.run(settings))
    except devcluster_errors.MissingBinaryError as e:
        raise click.ClickException(f"{e} (run scripts/build-control-plane)") from e
    text = result.markdown()
    click.echo(text)
    if report is not None:
        report.write_text(text + "\n")
    if result.by_class():
        raise SystemExit(1)
