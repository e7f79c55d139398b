"""``berth up``: the whole system on a laptop in one command, with the sample queues and jobs.

Starts the local control plane (``berth.devtools.devcluster``) with fake GPU node pools that
match ``config/samples/queues.yaml`` (`POOLS`), installs the CRDs generated from the models and
the sample queues, runs the operator (``berth run``, as a child process whose log is in the run
directory), then submits the demo Jobs of ``config/samples/jobs.yaml`` at their
``sim.berth.dev/at`` times, sped up ``--speed`` times. Each Job's pods run for its
``sim.berth.dev/duration`` (sped up too, like the pods' termination grace period) through kwok's
pod timing annotations; the simulator's annotations are stripped. Admissions, pending reasons,
preemptions and finishes are printed as the operator writes them onto the Workloads. Everything
stops when every Job finished, on Ctrl-C, or after ``--timeout``; ``--keep`` leaves the cluster
and the operator running for ``berth dev env`` until ``berth dev down``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click
import yaml

from berth.adapters.kube import client
from berth.adapters.kube import errors as kube_errors
from berth.adapters.kube import jobs as kube_jobs
from berth.api import base, crd, duration
from berth.devtools.devcluster import binaries, errors, kwok, launcher, processes
from berth.entry import options
from berth.jobs import batchjob

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "config" / "samples"
SIM_PREFIX = "sim.berth.dev/"
_BATCH = batchjob.BatchJob()
_POLL = 0.5
_DEFAULT_RUN = 600.0
"""Seconds a demo Job without ``sim.berth.dev/duration`` runs, before the speed-up."""
_GRACE = 30
"""Kubernetes' default termination grace period, in seconds, before the speed-up."""

POOLS = (
    kwok.A100_POOL,
    # The sample h100 flavor has no tolerations, so its pool is untainted: pods admitted on it
    # land by its node label alone (the e2e cluster taints its h100 pool to test tolerations).
    kwok.H100_POOL,
    # The cohort's spot CPU pool: the sample spot flavor's label, taint and toleration.
    kwok.NodePool(
        name="spot",
        nodes=1,
        gpus_per_node=0,
        memory="256Gi",
        labels={"karpenter.sh/capacity-type": "spot"},
        taints=(kwok.Taint("cloud.example.com/spot", "true", "NoSchedule"),),
    ),
)
"""Fake nodes matching the sample flavors and quotas: 16 A100 and 16 H100 GPUs, spot CPU."""


@dataclasses.dataclass(frozen=True, slots=True)
class DemoJob:
    """A sample Job ready to submit: when, and the body without the simulator's annotations."""

    at: float
    runs_for: float
    body: dict[str, Any]

    @property
    def key(self) -> str:
        """``namespace/name``."""
        meta = self.body["metadata"]
        return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def demo_jobs(path: Path, speed: float) -> list[DemoJob]:
    """Read the sample Jobs, strip ``sim.berth.dev/*`` and make kwok run their pods, sped up."""
    out: list[DemoJob] = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc or doc.get("kind") != "Job":
            continue
        meta = doc.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        annotations = meta.get("annotations") or {}
        at = duration.parse(annotations.get(SIM_PREFIX + "at", 0)) / speed
        runs = duration.parse(annotations.get(SIM_PREFIX + "duration", _DEFAULT_RUN)) / speed
        kept = {k: v for k, v in annotations.items() if not k.startswith(SIM_PREFIX)}
        if kept:
            meta["annotations"] = kept
        else:
            meta.pop("annotations", None)
        template = doc.setdefault("spec", {}).setdefault("template", {})
        pod_meta = template.setdefault("metadata", {})
        pod_meta["annotations"] = {
            **(pod_meta.get("annotations") or {}),
            **kwok.pod_timing(f"{runs:.3f}s"),
        }
        # kwok keeps a deleted pod until its grace period ends, as a kubelet would at worst; a
        # preempted Job releases its quota only when its pods are gone, so that wait is sped up.
        pod_spec = template.setdefault("spec", {})
        pod_spec.setdefault("terminationGracePeriodSeconds", max(1, round(_GRACE / speed)))
        out.append(DemoJob(at, runs, doc))
    return sorted(out, key=lambda j: j.at)


# Printing what the operator decides --------------------------------------------------------------


def _job_of(wl: dict[str, Any]) -> str:
    meta = wl["metadata"]
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job":
            return f"{meta['namespace']}/{ref['name']}"
    return f"{meta['namespace']}/{meta['name']}"


def _placement(wl: dict[str, Any]) -> str:
    adm = (wl.get("status") or {}).get("admission") or {}
    parts = []
    for psa in adm.get("podSetAssignments") or []:
        flavors = ",".join(sorted(set((psa.get("flavors") or {}).values())))
        parts.append(f"[{psa.get('name')}x{psa.get('count')}] on {flavors}")
    return f"{adm.get('clusterQueue')} {' '.join(parts)}"


class Narrator:
    """Prints a line for each change of a Workload's conditions that a person cares about."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.seen: dict[str, dict[str, tuple[str, str]]] = {}
        self.finished: set[str] = set()
        self.admissions = 0
        self.preemptions = 0

    def say(self, verb: str, job: str, details: str) -> None:
        """Print one timeline line."""
        line = f"{time.monotonic() - self.started:7.1f}s  {verb:<10} {job:<22} {details}"
        click.echo(line[:160])

    def look(self, workloads: list[dict[str, Any]]) -> None:
        """Compare every Workload with what was seen before; print what changed."""
        for wl in sorted(workloads, key=lambda w: w["metadata"].get("creationTimestamp") or ""):
            job = _job_of(wl)
            before = self.seen.get(job, {})
            now = {
                c["type"]: (c.get("status", ""), c.get("reason", ""))
                for c in (wl.get("status") or {}).get("conditions") or []
            }
            messages = {
                c["type"]: c.get("message", "")
                for c in (wl.get("status") or {}).get("conditions") or []
            }
            self.seen[job] = now

            def became(
                kind: str,
                status: str = "True",
                n: dict[str, tuple[str, str]] = now,
                b: dict[str, tuple[str, str]] = before,
            ) -> bool:
                return n.get(kind, ("", ""))[0] == status and b.get(kind) != n.get(kind)

            if became("Preempted"):
                self.preemptions += 1
                if "True" not in (
                    before.get("Admitted", ("", ""))[0],
                    now.get("Admitted", ("", ""))[0],
                ):
                    # Admitted and preempted between two looks: the admission happened all the same.
                    self.admissions += 1
                reason = now["Preempted"][1]
                self.say("preempted", job, f"{reason}: {messages['Preempted']}")
            elif became("Evicted"):
                self.say("evicted", job, f"{now['Evicted'][1]}: {messages['Evicted']}")
            if became("Admitted"):
                self.admissions += 1
                self.say("admitted", job, _placement(wl))
            elif became("QuotaReserved", "False"):
                self.say("pending", job, f"{now['QuotaReserved'][1]}: {messages['QuotaReserved']}")
            if became("Finished"):
                self.finished.add(job)
                self.say("finished", job, now["Finished"][1])


# The run --------------------------------------------------------------------------------------


async def _drive(
    kubeconfig: Path, jobs: list[DemoJob], narrator: Narrator, deadline: float | None
) -> bool:
    """Submit the Jobs on time and narrate until all finished; tell whether they did."""
    kube = await client.Kube.open(str(kubeconfig))
    wl_path = f"/apis/{base.GROUP}/{base.VERSION}/workloads"
    try:
        queue = list(jobs)
        wanted = {j.key for j in jobs}
        while True:
            elapsed = time.monotonic() - narrator.started
            while queue and queue[0].at <= elapsed:
                job = queue.pop(0)
                ns = job.body["metadata"]["namespace"]
                await kube.request("POST", kube_jobs.path(_BATCH, ns), body=job.body)
                pods = job.body["spec"].get("parallelism", 1)
                narrator.say("submitted", job.key, f"{pods} pods, run {job.runs_for:.1f}s each")
            with contextlib.suppress(kube_errors.TransientError):
                items, _rv = await kube.list_items(wl_path)
                narrator.look(items)
            if not queue and wanted <= narrator.finished:
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            await asyncio.sleep(_POLL)
    finally:
        await kube.close()


async def _usage_drained(kubeconfig: Path, within: float) -> bool:
    """Wait until no ClusterQueue reserves anything; tell whether that happened in time."""
    kube = await client.Kube.open(str(kubeconfig))
    try:
        end = time.monotonic() + within
        while True:
            items, _rv = await kube.list_items(f"/apis/{base.GROUP}/{base.VERSION}/clusterqueues")
            if all((cq.get("status") or {}).get("reservingWorkloads", 0) == 0 for cq in items):
                return True
            if time.monotonic() > end:
                return False
            await asyncio.sleep(_POLL)
    finally:
        await kube.close()


def _install(plane: launcher.ControlPlane, queues: Path) -> None:
    crds = plane.run_dir / "crds"
    crds.mkdir(exist_ok=True)
    for name, doc in crd.all_crds().items():
        (crds / name).write_text(crd.render(doc))
    kubectl = plane.kubectl()
    kubectl.run("apply", "-f", str(crds))
    kubectl.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    kubectl.run("apply", "-f", str(queues))


def _operator(
    plane: launcher.ControlPlane, timeout: float, *, detach: bool
) -> processes.ManagedProcess:
    # The same interpreter runs ``berth run``, whether or not a ``berth`` script is on PATH.
    argv = [
        sys.executable,
        "-c",
        "from berth.entry import cli; cli.main()",
        "run",
        f"--kubeconfig={plane.kubeconfig}",
        "--lease-duration=5",
        "--metrics-port=0",
    ]
    log = plane.logs / "berth-operator.log"
    op = processes.ManagedProcess("berth-operator", argv, log, detach=detach)
    op.start()
    op.wait_ready(
        lambda: "primed:" in log.read_text(errors="replace"), timeout, what="leading (primed)"
    )
    return op


def _leave(
    plane: launcher.ControlPlane,
    operator: processes.ManagedProcess | None,
    run_dir: Path,
    *,
    keep: bool,
) -> None:
    """Stop everything, or with ``--keep`` hand the operator to the detached control plane."""
    if keep and operator is not None:
        # Its webhooks stay registered with failurePolicy Fail: the operator must go on
        # answering them until `berth dev down` stops it (before the API server).
        plane.adopt(operator)
    elif operator is not None:
        operator.stop()
    if keep:
        click.echo(f'cluster and operator left running: eval "$(berth dev env --dir {run_dir})"')
        click.echo(f"stop them with: berth dev down --dir {run_dir}")
    else:
        plane.stop()
        click.echo(f"stopped; logs in {plane.logs}")


@click.command(name="up")
@click.option(
    "--queues",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=SAMPLES / "queues.yaml",
    show_default="config/samples/queues.yaml",
    help="Queues (and namespaces) to apply.",
)
@click.option(
    "--jobs",
    "jobs_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=SAMPLES / "jobs.yaml",
    show_default="config/samples/jobs.yaml",
    help="Jobs to submit, timed by their sim.berth.dev/at and /duration annotations.",
)
@click.option(
    "--speed",
    default=20.0,
    show_default=True,
    type=click.FloatRange(min=0.01),
    help="How many times faster than the annotations say Jobs arrive and run.",
)
@click.option(
    "--timeout",
    default=0.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Give up (exit 1) when the Jobs have not all finished after this many seconds; 0: never.",
)
@click.option("--keep", is_flag=True, help="Leave the cluster running (see `berth dev env`).")
@click.option(
    "--dir",
    "run_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory (PKI, kubeconfig, etcd data, logs). Default: <cache>/dev.",
)
def command(
    *,
    queues: Path,
    jobs_file: Path,
    speed: float,
    timeout: float,
    keep: bool,
    run_dir: Path | None,
) -> None:
    """Start a local GPU cluster, the operator and the sample queues; run the demo Jobs."""
    run_dir = (run_dir or binaries.cache_dir() / "dev").resolve()
    # A `berth up --keep` or `berth dev up` killed while starting: what it started is stopped.
    if (stopped := launcher.clear_abandoned(run_dir)) is not None:
        click.echo(f"stopped what an interrupted `up` left ({', '.join(stopped) or 'nothing'})")
    if running := launcher.running_components(run_dir):
        raise click.ClickException(
            f"a cluster already runs in {run_dir} ({', '.join(running)}); "
            "run `berth dev down` first"
        )
    jobs = demo_jobs(jobs_file, speed)
    shutil.rmtree(run_dir, ignore_errors=True)
    plane = launcher.ControlPlane(
        launcher.ControlPlaneConfig(run_dir=run_dir, scheduling=True, node_pools=POOLS, detach=keep)
    )
    operator: processes.ManagedProcess | None = None
    finished = False
    try:
        click.echo("starting the control plane ...")
        plane.start()
        pools = ", ".join(
            f"{p.name} {p.nodes}x{p.gpus_per_node} GPUs" if p.gpus_per_node else f"{p.name} CPU"
            for p in POOLS
        )
        click.echo(f"control plane ready in {plane.timings['total']:.1f}s ({pools})")
        _install(plane, queues)
        click.echo(f"installed the CRDs and {queues.name}")
        operator = _operator(plane, timeout=60, detach=keep)
        served = re.findall(r"metrics served at (\S+)", operator.log.read_text(errors="replace"))
        click.echo(
            f"operator running (log: {operator.log}; metrics: {served[-1] if served else '-'})"
        )
        click.echo(f"submitting {len(jobs)} Jobs from {jobs_file.name}, {speed:g}x faster")
        started = time.monotonic()
        narrator = Narrator(started)
        deadline = None if not timeout else started + timeout
        finished = asyncio.run(_drive(plane.kubeconfig, jobs, narrator, deadline))
        if finished:
            drained = asyncio.run(_usage_drained(plane.kubeconfig, 30))
            click.echo(
                f"all {len(jobs)} Jobs finished in {time.monotonic() - started:.1f}s: "
                f"{narrator.admissions} admissions, {narrator.preemptions} preemptions; "
                + ("ClusterQueue usage back to zero" if drained else "ClusterQueues still reserve")
            )
            click.echo(f"history recorded in {options.default_history_url()}: run `berth report`")
            finished = drained
        else:
            left = sorted({j.key for j in jobs} - narrator.finished)
            click.echo(f"timed out after {timeout:g}s; not finished: {', '.join(left)}", err=True)
    except KeyboardInterrupt:
        click.echo("\ninterrupted", err=True)
    except errors.DevClusterError as e:
        raise click.ClickException(str(e)) from e
    finally:
        _leave(plane, operator, run_dir, keep=keep)
    if not finished:
        raise SystemExit(1)
