"""The live cluster as ``berth explain`` and ``berth queues`` read it without ``--scenario``.

``read`` opens a session from the kubeconfig, lists every kind the operator watches into a fresh
``World`` with the operator's own ``prime`` (so the cache and queues are built by the same intake
the operator's leader starts from), and closes the session. ``find`` turns ``job/NAME`` or
``workload/NAME`` into the Workload it means and says where that workload stands: pending (with
the reason the operator last wrote on its ``QuotaReserved=False`` condition), admitted, finished
or deactivated. ``options`` adds the ``--kubeconfig`` and ``--config`` options and ``check_source``
refuses options that belong to the other source.

No scheduling cycle runs on the listed state: pending workloads sit in their queues in queue
order, none parked as inadmissible by a cycle, as right after a leader's priming. Every failure
to reach or read the cluster becomes one ``click.ClickException`` line. Called by
``berth.entry.explain_cmd`` and ``berth.entry.queues_cmd``.

A team member need not read the whole cluster: with the chart's ClusterRole ``berth-queue-reader``
(Berth's kinds, Nodes, Namespaces and PriorityClasses, cluster-wide) and the namespace's own
Jobs and Pods, a kind the user may not list cluster-wide is listed in the namespace asked about
(``Read.narrowed`` names them, and the commands say so). Only a cluster-scoped kind the user may
not list stops the read, naming the role to ask for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from berth.adapters.kube import errors
from berth.api import conditions, configuration, names, workload_view
from berth.core import admission, workload
from berth.jobs import registry
from berth.operator import world as world_mod
from berth.operator.webhooks import configurations

_COND = conditions.WorkloadCondition
_F = TypeVar("_F", bound=Callable[..., Any])


def options(command: _F) -> _F:
    """Add ``--kubeconfig`` and ``--config``, the live source's options, to a command."""
    command = click.option(
        "--config",
        "config_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="The operator's berth.dev/v1beta1 Configuration file (fair sharing, "
        "waitForPodsReady ... change the policy). Live cluster only.",
    )(command)
    return click.option(
        "--kubeconfig",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="Which cluster. Default: $KUBECONFIG or ~/.kube/config, else in-cluster.",
    )(command)


def check_source(
    files: tuple[str, ...], at: float | None, kubeconfig: str | None, config_file: Path | None
) -> None:
    """Refuse options of the other source: ``--at`` without ``--scenario``, cluster ones with it."""
    if files and (kubeconfig is not None or config_file is not None):
        msg = "--kubeconfig and --config read the live cluster; a --scenario brings its own"
        raise click.UsageError(msg)
    if not files and at is not None:
        msg = "--at needs --scenario: the live cluster is read as it is now"
        raise click.UsageError(msg)


QUEUE_READER_ROLE = "berth-queue-reader"
"""The chart's ClusterRole that lets a team member read what ``berth explain`` needs."""
QUEUE_READER_RULES: tuple[dict[str, Any], ...] = (
    {
        "apiGroups": ["berth.dev"],
        "resources": list(configurations.BERTH_PLURALS),
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": [""], "resources": ["nodes", "namespaces"], "verbs": ["get", "list"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["list"]},
)
"""That role's rules (the chart renders the same; ``tests/chart`` keeps them equal): every
Berth kind, the Nodes topology places on, the Namespaces queues select and the pod
PriorityClasses, cluster-wide; no Jobs and no Pods beyond what the user's namespace grants."""
_FORBIDDEN = 403


@dataclasses.dataclass(frozen=True, slots=True)
class Read:
    """The cluster as the user may read it."""

    world: world_mod.World
    narrowed: tuple[str, ...] = ()
    """Kinds listed in the namespace asked about only (the user may not list them all)."""

    def note(self) -> str:
        """A line saying what the figures leave out, or '' when the whole cluster was read."""
        if not self.narrowed:
            return ""
        return (
            f"(read as a namespace user: {', '.join(self.narrowed)} of this namespace only; "
            "positions and usage count what you may read)\n"
        )


def read(kubeconfig: str | None, config_file: Path | None, namespace: str | None = None) -> Read:
    """List the cluster into a fresh ``World``; one error line if it cannot be read.

    ``namespace``: where to list the namespaced kinds the user may not list cluster-wide.
    """
    # Imported here: the Kubernetes client and the operator's composition root (kopf, aiohttp,
    # the history store) are seconds of start-up that the --scenario path never needs.
    from berth.entry import run_cmd  # noqa: PLC0415 - see above

    config = run_cmd.load_configuration(config_file)
    try:
        return asyncio.run(_list(kubeconfig, config, namespace))
    except errors.KubeError as e:
        msg = f"cannot read the cluster: {e}"
        if e.status == _FORBIDDEN:
            msg += f" (ask an admin to bind you the ClusterRole {QUEUE_READER_ROLE})"
        raise click.ClickException(msg) from e


async def _list(
    kubeconfig: str | None, config: configuration.Configuration, namespace: str | None
) -> Read:
    from berth.adapters.kube import client  # noqa: PLC0415 - as in read
    from berth.entry import operator_main  # noqa: PLC0415 - as in read

    kube = await client.Kube.open(kubeconfig)
    try:
        world = world_mod.World(config, time.time)
        narrowed = await operator_main.prime(world, kube, narrow_to=namespace)
    finally:
        await kube.close()
    return Read(world, narrowed)


@dataclasses.dataclass(frozen=True, slots=True)
class Found:
    """A workload of the live cluster and where it stands."""

    key: names.WorkloadKey
    job: str | None
    """The Job that owns it (``ns/name``), if any."""
    state: str
    """pending, admitted, finished or deactivated (Kueue's Workload states); else not queued."""
    info: workload.WorkloadInfo
    """The core's view of it."""
    admission: workload.Admission | None
    """Where it is (or, once finished, was) admitted."""
    recorded: tuple[str, str]
    """Reason and message of its ``QuotaReserved=False`` condition, as the operator wrote them."""


JOB_TARGETS = {i.kind.lower(): i.kind for i in registry.EVERY_KIND}
"""``berth explain`` targets that name a job, and the job kind each means."""


def find(world: world_mod.World, kind: str, name: str, namespace: str) -> Found:
    """Find the Workload that ``job`` or ``workload`` NAME in NAMESPACE means; exit 1 if none."""
    key = names.WorkloadKey(namespace, name)
    job: names.WorkloadKey | None = None
    if kind in JOB_TARGETS:
        job = key
        job_kind = JOB_TARGETS[kind]
        job_body = world.jobs.get(names.JobKey(job_kind, namespace, name))
        if job_body is None:
            msg = f"no {job_kind} {name} in namespace {namespace}"
            raise click.ClickException(msg)
        found = world.workload_for_job(job_body)
        if found is None:
            why = (
                "the operator has not created it yet"
                if world.managed(job_body)
                else "Berth does not manage it (no berth.dev/queue-name label)"
            )
            msg = f"{job_kind} {name} in namespace {namespace} has no Workload: {why}"
            raise click.ClickException(msg)
        key = found
    view = world.workloads.get(key)
    if view is None:
        msg = f"no Workload {key.name} in namespace {key.namespace}"
        raise click.ClickException(msg)
    if job is None:
        uid = view.owner_job_uid
        owner = None if uid is None else world.job_of_uid.get(uid)
        job = None if owner is None else owner.object_key
    info = world.infos.get(key)
    if info is None:
        msg = (
            f"Workload {key.name} in namespace {key.namespace} is invalid; the operator ignores it"
        )
        raise click.ClickException(msg)
    state, adm = _state(world, key, view, info)
    return Found(key, None if job is None else str(job), state, info, adm, _recorded(view))


def _state(
    world: world_mod.World,
    key: names.WorkloadKey,
    view: workload_view.WorkloadView,
    info: workload.WorkloadInfo,
) -> tuple[str, workload.Admission | None]:
    admitted = world.cache.admitted.get(key)
    if admitted is not None:
        return "admitted", admitted.admission
    stored = view.admission
    written = None if stored is None else admission.from_status(info, stored)
    if view.is_true(_COND.FINISHED):
        return "finished", written
    if key in world.queues.pending:
        return "pending", None
    return ("deactivated" if not info.active else "not queued"), None


def _recorded(view: workload_view.WorkloadView) -> tuple[str, str]:
    reserved = view.condition(_COND.QUOTA_RESERVED)
    if reserved is not None and not reserved.status:
        return reserved.reason, reserved.message
    return "", ""
