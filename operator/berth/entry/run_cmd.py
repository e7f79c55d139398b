"""``berth run``: the operator against the current kubeconfig, until interrupted.

Thin: parses options and the Configuration file, then hands over to
``berth.entry.operator.main``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import click
import yaml

from berth.api import configuration, kinds
from berth.entry.operator import main as operator_main


def load_configuration(path: Path | None) -> configuration.Configuration:
    """Read a Configuration file (defaults without one)."""
    if path is None:
        return configuration.Configuration()
    obj = kinds.load(yaml.safe_load(path.read_text()))
    if not isinstance(obj, configuration.Configuration):
        raise click.UsageError(f"{path} holds a {obj.kind}, not a Configuration")
    return obj


@click.command(name="run")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="Default: $KUBECONFIG or ~/.kube/config, else in-cluster.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A berth.dev/v1beta1 Configuration file.",
)
@click.option(
    "--webhook-host",
    default="127.0.0.1",
    show_default=True,
    help="Address the webhook server listens on and the API server calls.",
)
@click.option(
    "--webhook-port", default=0, show_default=True, help="Webhook port; 0 picks a free one."
)
@click.option(
    "--lease-duration",
    default=15,
    show_default=True,
    help="Seconds a leader's Lease lasts without renewal.",
)
def command(
    kubeconfig: str | None,
    config_file: Path | None,
    webhook_host: str,
    webhook_port: int,
    lease_duration: int,
) -> None:
    """Run the operator: watch queues and Jobs, admit Workloads, start and stop Jobs."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("kopf").setLevel(logging.WARNING)
    options = operator_main.Options(
        kubeconfig=kubeconfig,
        config=load_configuration(config_file),
        webhook_host=webhook_host,
        webhook_port=webhook_port,
        lease_duration=lease_duration,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(operator_main.run(options))
