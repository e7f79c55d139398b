"""``berth import``: convert a stream of Kueue YAML documents into Berth YAML.

Reads a multi-document YAML stream (a file, or ``-`` for standard input), converts every document
with ``berth.api.kueue_convert`` and writes the result to standard output in the same order. Every
warning goes to standard error, prefixed with the document's position; documents Berth does not
know pass through unchanged. Exit status 2 when the input is not UTF-8 YAML.
"""

from __future__ import annotations

from typing import Any, TextIO

import click
import yaml

from berth.api import kueue_convert


@click.command("import")
@click.argument("source", type=click.File("r"), default="-")
@click.option("--quiet", "-q", is_flag=True, help="Do not print warnings.")
def command(source: TextIO, quiet: bool) -> None:
    """Convert Kueue YAML (v1beta1 or v1beta2) in SOURCE (a file or -) into Berth YAML."""
    name = getattr(source, "name", "-")
    try:
        docs = [d for d in yaml.safe_load_all(source) if d is not None]
    except yaml.YAMLError as err:
        click.echo(f"berth import: {name} is not valid YAML: {err}", err=True)
        raise SystemExit(2) from err
    except UnicodeDecodeError as err:
        click.echo(
            f"berth import: {name} is not UTF-8 text (byte {err.object[err.start]:#04x} at "
            f"offset {err.start}); save it as UTF-8 YAML",
            err=True,
        )
        raise SystemExit(2) from err
    out: list[Any] = []
    for index, doc in enumerate(docs):
        if isinstance(doc, dict):
            converted, warnings = kueue_convert.convert(doc)
        else:
            converted, warnings = doc, ["not a mapping; left unchanged"]
        out.append(converted)
        if not quiet:
            for warning in warnings:
                click.echo(f"{name} document {index}: {warning}", err=True)
    text = yaml.safe_dump_all(out, sort_keys=False, explicit_start=len(out) > 1)
    click.echo(text if out else "", nl=False)
