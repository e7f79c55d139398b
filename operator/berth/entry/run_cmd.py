"""``berth run``: the operator against the current kubeconfig, until interrupted.

Thin: parses options and the Configuration file, then hands over to
``berth.entry.operator_main``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path

import click
import yaml

from berth.adapters import collector
from berth.adapters.history import store
from berth.adapters.kube import errors as kube_errors
from berth.adapters.kube import leader
from berth.api import configuration, errors, kinds
from berth.entry import operator_main
from berth.entry import options as entry_options
from berth.operator.webhooks import certificates


def load_configuration(path: Path | None) -> configuration.Configuration:
    """Read a Configuration file (defaults without one); exit 2 naming every bad field."""
    if path is None:
        return configuration.Configuration()
    try:
        obj = kinds.load(yaml.safe_load(path.read_text()))
    except errors.ApiError as err:
        # An admin's bad YAML is bad input: one line per problem, never a traceback.
        for problem in err.errors:
            click.echo(f"berth: {path}: {problem}", err=True)
        sys.exit(2)
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
@click.option(
    "--metrics-host", default="127.0.0.1", show_default=True, help="Address /metrics listens on."
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=-1, max=65535),
    default=8080,
    show_default=True,
    help="Port of /metrics; 0 picks a free one, -1 serves no metrics.",
)
@click.option(
    "--metrics-secure/--no-metrics-secure",
    default=False,
    show_default=True,
    help="Serve /metrics over HTTPS, only to bearers of a token that RBAC lets get /metrics "
    "(the ClusterRole berth-metrics-reader); the health probes stay open.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the embedded history store lives. Default: $BERTH_DATA_DIR or "
    "~/.local/share/berth.",
)
@click.option(
    "--history-db",
    metavar="URL",
    default=None,
    help="History store: sqlite:///PATH, a path, or postgresql://... Default: "
    "history.db in the data directory.",
)
@click.option("--no-history", is_flag=True, help="Record no history.")
@click.option(
    "--webhook-secret",
    metavar="NAME",
    default=None,
    help="Cluster mode: serve the webhooks with the certificate of this Secret in the operator's "
    "namespace, shared by every replica, and leave the webhook configurations to the chart.",
)
@click.option(
    "--webhook-service",
    metavar="NAME",
    default=None,
    help="Cluster mode: the webhook Service, whose names the certificate carries.",
)
@click.option(
    "--manage-webhook-certs/--no-manage-webhook-certs",
    default=True,
    show_default=True,
    help="Cluster mode: the leader creates and renews the Secret and keeps the configurations' "
    "caBundle (off when cert-manager does).",
)
@click.option(
    "--cluster-domain", default="cluster.local", show_default=True, help="The cluster's DNS domain."
)
def command(  # noqa: PLR0917 - one parameter per command-line option
    kubeconfig: str | None,
    config_file: Path | None,
    webhook_host: str,
    webhook_port: int,
    lease_duration: int,
    metrics_host: str,
    metrics_port: int,
    data_dir: Path | None,
    history_db: str | None,
    *,
    metrics_secure: bool,
    no_history: bool,
    webhook_secret: str | None,
    webhook_service: str | None,
    manage_webhook_certs: bool,
    cluster_domain: str,
) -> None:
    """Run the operator: watch queues and Jobs, admit Workloads, start and stop Jobs."""
    cluster = None
    if webhook_secret is not None:
        if manage_webhook_certs and webhook_service is None:
            msg = "--webhook-service names the certificate (or give --no-manage-webhook-certs)"
            raise click.UsageError(msg)
        cluster = certificates.ClusterWebhooks(
            secret=webhook_secret,
            service=webhook_service,
            manage=manage_webhook_certs,
            cluster_domain=cluster_domain,
        )
    elif webhook_service is not None:
        raise click.UsageError("--webhook-service needs --webhook-secret (cluster mode)")
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
        metrics_host=metrics_host,
        metrics_port=None if metrics_port < 0 else metrics_port,
        metrics_secure=metrics_secure,
        history_url=None if no_history else history_url(history_db, data_dir),
        cluster_webhooks=cluster,
    )
    collector.fewer_young_collections()
    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(operator_main.run(options))
        except store.HistoryError as err:
            msg = f"{err} (set --history-db to a store this process can write, or --no-history)"
            raise click.ClickException(msg) from err
        except kube_errors.KubeError as err:
            # Start-up could not use the cluster at all (a kubeconfig Berth cannot use, a
            # credential plugin that is missing, a server that refuses it); once running, the
            # operator's tasks retry on their own and never end up here.
            raise click.ClickException(f"cannot use the cluster: {err}") from err
        except leader.TermStuckError as err:
            # Exit non-zero: the Deployment (or whoever runs it) starts a fresh process.
            raise click.ClickException(f"{err}; stopping so that a fresh process leads") from err


def history_url(url: str | None, data_dir: Path | None) -> str:
    """The history store to use: ``url``, else the data directory's embedded one."""
    if url:
        return url
    return entry_options.default_history_url(data_dir)
