"""``berth dev``: a local control plane with fake GPU nodes, for a developer, in one command.

``up`` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake GPU
nodes, detached, in a run directory under the per-user cache, and with ``--framework`` the real
controllers of job frameworks (JobSet, the Kubeflow training-operator, KubeRay, the Kubeflow
Trainer) the integrations are tested against; ``env`` prints the shell lines that point kubectl
at it; ``down`` stops it. The work is done by `berth.devtools.devcluster`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from berth.devtools.devcluster import (
    binaries,
    errors,
    frameworks,
    kwok,
    launcher,
    realnode,
)


def _default_dir() -> Path:
    return binaries.cache_dir() / "dev"


_dir_option = click.option(
    "--dir",
    "run_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory (PKI, kubeconfig, etcd data, logs). Default: <cache>/dev.",
)


@click.group(name="dev")
def command() -> None:
    """Start, stop or print the environment of a local control plane with fake GPU nodes."""


@command.command()
@click.option("--nodes", default=2, show_default=True, help="Fake nodes (without --pool).")
@click.option(
    "--gpus-per-node",
    default=8,
    show_default=True,
    help="nvidia.com/gpu per node (without --pool).",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    metavar="SPEC",
    help=(
        "A node pool, repeatable: name=a100,nodes=2,gpus=8[,cpu=64][,memory=512Gi]"
        "[,label=k=v]...[,taint=k=v:NoSchedule]... Replaces --nodes/--gpus-per-node."
    ),
)
@click.option(
    "--minimal", is_flag=True, help="Only etcd and kube-apiserver: no scheduling, no nodes."
)
@click.option(
    "--framework",
    "framework_names",
    multiple=True,
    type=click.Choice(sorted(frameworks.FRAMEWORKS)),
    help="Also install and run this job framework's real controller (its CRDs and webhooks), "
    "repeatable; trainer brings jobset.",
)
@click.option(
    "--real-node",
    "real_node_spec",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[name=real-0,gpus=8,label=k=v...]",
    help="Also start one real node (containerd, runc, CNI, kubelet, kube-proxy) whose pods really "
    "run, advertising fake GPUs; needs root and scripts/setup-real-node.",
)
@click.option("--timeout", default=90.0, show_default=True, help="Seconds per component.")
@_dir_option
def up(
    *,
    nodes: int,
    gpus_per_node: int,
    pools: tuple[str, ...],
    minimal: bool,
    framework_names: tuple[str, ...],
    real_node_spec: str | None,
    timeout: float,
    run_dir: Path | None,
) -> None:
    """Start the control plane in the background and wait until its nodes are Ready."""
    if minimal and framework_names:
        raise click.UsageError("--framework needs the scheduling components; drop --minimal")
    run_dir = (run_dir or _default_dir()).resolve()
    # An `up` killed while starting: what it had started is stopped, then this one starts.
    if (stopped := launcher.clear_abandoned(run_dir)) is not None:
        click.echo(f"stopped what an interrupted `up` left ({', '.join(stopped) or 'nothing'})")
    if running := launcher.running_components(run_dir):
        raise click.ClickException(
            f"already running in {run_dir} ({', '.join(running)}); run `berth dev down` first"
        )
    node_pools, real_node = _nodes(nodes, gpus_per_node, pools, real_node_spec, minimal=minimal)
    # A new cluster each time: stale etcd data or certificates would only confuse.
    shutil.rmtree(run_dir, ignore_errors=True)
    plane = launcher.ControlPlane(
        launcher.ControlPlaneConfig(
            run_dir=run_dir,
            scheduling=not minimal,
            node_pools=node_pools,
            real_node=real_node,
            detach=True,
            start_timeout=timeout,
        )
    )
    try:
        plane.start()
        started: set[str] = set()
        for name in framework_names:
            frameworks.start(plane, name, started)
    except errors.MissingBinaryError as e:
        plane.stop()
        msg = f"{e}; scripts/build-control-plane builds every framework's controller"
        raise click.ClickException(msg) from e
    except errors.DevClusterError as e:
        plane.stop()
        raise click.ClickException(str(e)) from e
    _describe(plane)


def _nodes(
    nodes: int,
    gpus_per_node: int,
    pools: tuple[str, ...],
    real_node_spec: str | None,
    *,
    minimal: bool,
) -> tuple[tuple[kwok.NodePool, ...], realnode.RealNodeConfig | None]:
    """Return the kwok pools (empty ones dropped) and the real node ``up`` was asked for."""
    if minimal:
        if real_node_spec is not None:
            raise click.UsageError("--real-node needs the scheduling components; drop --minimal")
        return (), None
    try:
        node_pools = (
            tuple(kwok.parse_pool(spec) for spec in pools)
            if pools
            else (kwok.NodePool(name="gpu", nodes=nodes, gpus_per_node=gpus_per_node),)
        )
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--pool") from e
    try:
        real_node = None if real_node_spec is None else realnode.parse_spec(real_node_spec)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--real-node") from e
    return tuple(p for p in node_pools if p.nodes), real_node


def _describe(plane: launcher.ControlPlane) -> None:
    for name, pid in plane.pids().items():
        click.echo(f"  {name:<24} pid {pid:<8} {plane.logs / (name + '.log')}")
    real = plane.config.real_node
    if real is not None:
        click.echo(
            f"  real node {real.name}: {real.gpus} {kwok.GPU_RESOURCE} (advertised in its status;"
            " the pods really run, in containerd)"
        )
    for pool in plane.config.node_pools:
        click.echo(
            f"  pool {pool.name}: {pool.nodes} nodes x {pool.gpus_per_node} {kwok.GPU_RESOURCE}"
        )
    click.echo(f"API server {plane.server} ready in {plane.timings['total']:.1f}s")
    click.echo('Point kubectl at it with: eval "$(berth dev env)"')


@command.command()
@_dir_option
def down(run_dir: Path | None) -> None:
    """Stop the control plane; its run directory and logs stay until the next ``up``."""
    run_dir = (run_dir or _default_dir()).resolve()
    stopped = launcher.stop_detached(run_dir)
    if stopped:
        click.echo(f"stopped {', '.join(stopped)} (logs in {run_dir / 'logs'})")
    else:
        click.echo(f"nothing running in {run_dir}")


@command.command()
@_dir_option
def env(run_dir: Path | None) -> None:
    """Print shell lines that point KUBECONFIG (and PATH, for the cached kubectl) at the cluster."""
    run_dir = (run_dir or _default_dir()).resolve()
    state = launcher.load_state(run_dir)
    if state is None or not launcher.running_components(run_dir):
        raise click.ClickException(f"no control plane running in {run_dir}; run `berth dev up`")
    click.echo(f"export KUBECONFIG={state['kubeconfig']}")
    kubectl = binaries.BinaryCache.default().path("kubectl")
    click.echo(f'export PATH="{kubectl.parent}:$PATH"')
