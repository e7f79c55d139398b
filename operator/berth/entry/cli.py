"""The ``berth`` command line: the root group and the table of its subcommands.

Subcommands live in their own modules and are imported only when invoked, so ``berth --help``
stays fast and a command's heavy dependencies load only for that command. Two console scripts
run it (``[project.scripts]``): ``berth`` (``main``) and the kubectl plugin ``kubectl-berth``
(``kubectl_plugin``).
"""

from __future__ import annotations

import importlib

import click

import berth

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help shown by ``berth --help``)
    "manifests": (
        "berth.entry.manifests_cmd",
        "Write the CRD manifests generated from the API models.",
    ),
    "import": (
        "berth.entry.import_cmd",
        "Convert Kueue YAML (v1beta1 or v1beta2) into Berth YAML.",
    ),
    "dev": (
        "berth.entry.dev_cmd",
        "Start, stop or print the environment of a local control plane with fake GPU nodes.",
    ),
    "bench": (
        "berth.entry.bench_cmd",
        "Benchmarks that print figures: the scheduling core at Kueue's performance shapes.",
    ),
    "run": (
        "berth.entry.run_cmd",
        "Run the operator against the current kubeconfig.",
    ),
    "up": (
        "berth.entry.up_cmd",
        "Start a local GPU cluster, the operator and the sample queues; run the demo Jobs.",
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
"""Every subcommand: its module (which defines ``command``) and its summary."""


class _LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 - click's signature
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: ARG002 - click's signature
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[cmd_name][0])
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:  # noqa: ARG002 - click's signature
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
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
