"""The ``berth`` command line: the root group and the table of its subcommands.

Subcommands live in their own modules and are imported only when invoked, so ``berth --help``
stays fast and a command's heavy dependencies load only for that command. The production
commands are listed here; development and benchmark commands (``dev``, ``up``, ``bench``) plug in
through the ``berth.commands`` entry-point group (``berth.devtools.commands``), so no production
module imports the development tools. Two console scripts
run it (``[project.scripts]``): ``berth`` (``main``) and the kubectl plugin ``kubectl-berth``
(``kubectl_plugin``).
"""

from __future__ import annotations

import functools
import importlib
from importlib import metadata

import click

import berth

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help shown by ``berth --help``)
    "manifests": (
        "berth.entry.manifests_cmd",
        "Write the CRDs and webhook configurations generated from the models and the operator.",
    ),
    "import": (
        "berth.entry.import_cmd",
        "Convert Kueue YAML (v1beta1 or v1beta2) into Berth YAML.",
    ),
    "run": (
        "berth.entry.run_cmd",
        "Run the operator against the current kubeconfig.",
    ),
    "simulate": (
        "berth.entry.simulate_cmd",
        "Replay queues and jobs through the scheduler in virtual time, offline.",
    ),
    "report": (
        "berth.entry.report_cmd",
        "Per-queue admissions, waits, utilisation and preemption rate from the history store.",
    ),
    "explain": (
        "berth.entry.explain_cmd",
        "Say why a job waits: reason, queue position, what must free up, what it could preempt.",
    ),
    "queues": (
        "berth.entry.queues_cmd",
        "List queues with usage bars and pending counts.",
    ),
}
"""The production subcommands: their module (which defines ``command``) and their summary."""

PLUGIN_GROUP = "berth.commands"
"""Entry-point group of command tables (``{name: (module, summary)}``) that extend ``COMMANDS``."""


@functools.cache
def commands() -> dict[str, tuple[str, str]]:
    """Every subcommand: the production table and the tables plugged in by entry points."""
    table = dict(COMMANDS)
    for point in sorted(metadata.entry_points(group=PLUGIN_GROUP), key=lambda p: p.name):
        plugged: dict[str, tuple[str, str]] = point.load()
        for name, row in plugged.items():
            table.setdefault(name, row)  # a plugin never replaces a production command
    return table


class _LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 - click's signature
        return sorted(commands())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: ARG002 - click's signature
        table = commands()
        if cmd_name not in table:
            return None
        module = importlib.import_module(table[cmd_name][0])
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:  # noqa: ARG002 - click's signature
        table = commands()
        rows = [(name, table[name][1]) for name in sorted(table)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=_LazyGroup)
@click.version_option(berth.__version__, prog_name="berth")
def main() -> None:
    """Berth: admission control and queueing for GPU batch work on Kubernetes."""


def kubectl_plugin() -> None:
    """Run the same command line as the kubectl plugin ``kubectl berth`` (``kubectl-berth``).

    kubectl finds an executable named ``kubectl-berth`` on ``PATH`` and runs it for
    ``kubectl berth ...``; only the program name in usage lines differs from ``berth``.
    """
    main(prog_name="kubectl berth")
