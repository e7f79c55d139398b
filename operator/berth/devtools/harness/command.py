"""``berth bench harness CONFIG.yaml``: Kueue's scheduler performance run, against Berth.

In order: a control plane (the one ``--kubeconfig`` names, or etcd + kube-apiserver started
here), Berth's CRDs, the API server's own ceiling (``ceiling``), the operator as its own process
(``berth run``), the queues of the config, then the run itself (``runner``) with the API server's
request counters, the operator's CPU time and peak memory read around it, and optionally the API
server's Go CPU profile taken during it (``--apiserver-profile``). Prints the summary as YAML
(``--out`` writes it too).

With ``--against kueue``, Kueue's own harness (``kueue``) runs the same config first,
on a control plane of its own from the same binaries, and then Berth's on a fresh one, on equal
terms: Berth's creates paced as Kueue's generator paces them and no admission webhook on the
Workload path (minimalkueue registers none). It prints one Markdown table of both, with Berth ÷
Kueue per figure; ``--out`` writes both summaries. Registered as a subcommand of ``berth bench``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import click
import yaml

from berth.api import crd
from berth.devtools.devcluster import errors as devcluster_errors
from berth.devtools.devcluster import launcher
from berth.devtools.harness import api as api_mod
from berth.devtools.harness import ceiling, generator, kueue, proc, runner, summary

_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_WEBHOOKS = "/apis/admissionregistration.k8s.io/v1"
_PPROF = "/debug/pprof/profile"


@dataclasses.dataclass(frozen=True, slots=True)
class ApiserverProfile:
    """Where and when to take the API server's CPU profile."""

    path: Path
    seconds: int
    """How long the profile samples."""
    delay: float
    """Seconds after the start of arrivals at which it starts."""


@contextlib.contextmanager
def _cluster(
    kubeconfig: str | None, work: Path, *, profiling: bool
) -> Iterator[tuple[str, dict[str, int]]]:
    """The kubeconfig to use, and the pids of the components started here (none if given)."""
    if kubeconfig is not None:
        yield kubeconfig, {}
        return
    config = launcher.ControlPlaneConfig(work / "control-plane", profiling=profiling)
    with launcher.ControlPlane(config) as plane:
        yield str(plane.kubeconfig), plane.pids()


async def _install_crds(api: api_mod.Api, within: float = 60.0) -> None:
    docs = crd.all_crds().values()
    for doc in docs:
        await api.create(_CRDS, doc, exist_ok=True)
    deadline = time.monotonic() + within
    for doc in docs:
        while True:
            got = await api.request("GET", f"{_CRDS}/{doc['metadata']['name']}")
            conditions = (got.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {doc['metadata']['name']} not Established")
            await asyncio.sleep(0.2)


async def _scrape(api: api_mod.Api) -> str:
    return await api.text("/metrics")


async def fetch_apiserver_profile(
    api: api_mod.Api, run: runner.Runner, want: ApiserverProfile
) -> dict[str, Any]:
    """Take the profile ``want.delay`` s into the arrivals and write it; the summary's entry."""
    # Runner.run sets t0 as arrivals start; polling it spares the runner a hook for this alone.
    while not run.t0:  # noqa: ASYNC110 - the runner has no event to wait on, only t0
        await asyncio.sleep(0.05)
    await asyncio.sleep(max(0.0, want.delay - run.now()))
    started = run.now()
    try:
        # The server holds the answer for the whole profile; the margin is for sending it.
        data = await api.raw(f"{_PPROF}?seconds={want.seconds}", seconds=want.seconds + 60)
    except (api_mod.ApiError, aiohttp.ClientError, TimeoutError) as e:
        return {"error": _one_line(f"GET {_PPROF}: {e}")}
    try:
        await asyncio.to_thread(want.path.write_bytes, data)
    except OSError as e:
        return {"error": _one_line(f"writing {want.path}: {e}")}
    return {"path": str(want.path), "seconds": want.seconds, "startedAtSeconds": round(started, 1)}


async def apiserver_profile_entry(
    task: asyncio.Task[dict[str, Any]], want: ApiserverProfile
) -> dict[str, Any]:
    """End the profile's task if the run ended first; the summary's entry either way."""
    task.cancel()  # a no-op once it is done
    await asyncio.wait([task])
    if task.cancelled():
        return {
            "error": f"the run ended before the profile ({want.seconds} s from "
            f"{want.delay:g} s into arrivals) was complete"
        }
    if (e := task.exception()) is not None:
        return {"error": _one_line(f"{type(e).__name__}: {e}")}
    return task.result()


def _one_line(text: str) -> str:
    return " ".join(text.split())


async def _run_profiled(
    api: api_mod.Api, run: runner.Runner, limit: float, want: ApiserverProfile | None
) -> tuple[float, dict[str, Any] | None]:
    """``run.run``, with the API server's profile taken beside it if wanted; its entry."""
    if want is None:
        return await run.run(limit=limit), None
    task = asyncio.create_task(fetch_apiserver_profile(api, run, want))
    try:
        wall = await run.run(limit=limit)
    finally:
        entry = await apiserver_profile_entry(task, want)
    return wall, entry


async def _drop_webhooks(api: api_mod.Api) -> None:
    """Remove the operator's webhook configurations (a local-mode operator registers them once)."""
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        with contextlib.suppress(api_mod.ApiError):
            await api.request("DELETE", f"{_WEBHOOKS}/{kind}/berth")


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        with contextlib.suppress(OSError):
            out[name] = proc.cpu_seconds(pid)
    return out


async def _run(
    config: generator.Config,
    kubeconfig: str,
    pids: dict[str, int],
    work: Path,
    *,
    limit: float,
    measure_ceiling: bool,
    profile: Path | None,
    apiserver_profile: ApiserverProfile | None,
    pacing: runner.Pacing = runner.Pacing.TIMELINE,
    webhooks: bool = True,
) -> dict[str, Any]:
    api = await api_mod.Api.open(kubeconfig)
    operator = proc.Operator(kubeconfig, work / "operator.log")
    try:
        await _install_crds(api)
        limits = await ceiling.measure(api) if measure_ceiling else {}
        await asyncio.to_thread(operator.start)
        if not webhooks:
            await _drop_webhooks(api)
        run = runner.Runner(api, config, secrets.token_hex(4), pacing=pacing)
        await run.setup()
        if profile is not None:
            operator.profile(profile)
        before = await _scrape(api)
        harness_before = sum(api.requests.values())
        cpu_before = operator.cpu_seconds()
        components_before = _cpu(pids)
        harness_cpu_before = time.process_time()
        wall, profiled = await _run_profiled(api, run, limit, apiserver_profile)
        harness_cpu = time.process_time() - harness_cpu_before
        operator_cpu = operator.cpu_seconds() - cpu_before
        components = {
            name: round(cpu - components_before.get(name, 0.0), 1)
            for name, cpu in _cpu(pids).items()
        }
        rss = operator.peak_rss_mib()
        operator_cpu_whole = operator.cpu_seconds()
        harness_requests = sum(api.requests.values()) - harness_before
        after = await _scrape(api)
    finally:
        await asyncio.to_thread(operator.stop)
        await _drop_webhooks(api)
        await api.close()
    out = summary.summarize(config, run.records.values(), wall)
    by_kind = summary.requests_between(
        summary.counter(before, "apiserver_request_total"),
        summary.counter(after, "apiserver_request_total"),
    )
    total = sum(by_kind.values())
    admissions = max(1, out["admissions"])
    out["apiserver"] = {
        "requests": total,
        "harnessRequests": harness_requests,
        "operatorRequests": max(0, total - harness_requests),
        "requestsPerAdmission": round(total / admissions, 2),
        "operatorRequestsPerAdmission": round(max(0, total - harness_requests) / admissions, 2),
        "requestsPerSecond": round(total / wall, 1) if wall else 0.0,
        "byVerbAndResource": dict(list(by_kind.items())[:12]),
        "webhooks": summary.webhook_latency(before, after),
    }
    out["operator"] = {
        "cpuSeconds": round(operator_cpu, 1),
        "cpuSecondsWholeProcess": round(operator_cpu_whole, 1),
        "cpuMsPerAdmission": round(1000 * operator_cpu / admissions, 2),
        "cpuShareOfWall": round(operator_cpu / wall, 2) if wall else 0.0,
        "peakRssMiB": round(rss, 1),
    }
    out["harness"] = {
        "cpuSeconds": round(harness_cpu, 1),
        "watchEvents": run.watch_events,
        "conflicts": run.conflicts,
        "finishLagSeconds": summary.spread(
            [r.finish_lag for r in run.records.values() if r.finish_lag is not None]
        ),
        "watchLagSeconds": summary.spread(run.watch_lags),
    }
    if components:
        out["controlPlaneCpuSeconds"] = components
    if profiled is not None:
        out["apiserverProfile"] = profiled
    if limits:
        patches = limits["statusPatchesPerSecond"]
        out["apiserverCeiling"] = limits
        out["ratioToCeiling"] = {
            "admissionsPerSecond": round(out["admissionsPerSecond"] / patches, 3),
            "apiserverRequestsPerSecond": round(out["apiserver"]["requestsPerSecond"] / patches, 3),
        }
    out["creates"] = {"pacing": pacing.value, "admissionWebhooks": webhooks}
    if run.errors:
        out["errors"] = run.errors[:20]
        out["errorCount"] = len(run.errors)
    return out


@click.command(name="harness")
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--kubeconfig",
    default=None,
    help="Run against this cluster (Berth's CRDs are installed; no operator may run there). "
    "Default: start etcd and kube-apiserver here.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the summary.")
@click.option(
    "--dir",
    "work_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the control plane and the operator's log go (default: a temporary directory).",
)
@click.option("--timeout", default=1800.0, show_default=True, help="Give up after this many s.")
@click.option("--no-ceiling", is_flag=True, help="Skip measuring the API server's ceiling.")
@click.option(
    "--profile",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Sample the operator with py-spy during the run; collapsed stacks into this file.",
)
@click.option(
    "--apiserver-profile",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a Go CPU profile of kube-apiserver taken during the run (go tool pprof reads it).",
)
@click.option(
    "--apiserver-profile-seconds",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="How long the API server's profile samples.",
)
@click.option(
    "--apiserver-profile-delay",
    type=click.FloatRange(min=0.0),
    default=15.0,
    show_default=True,
    help="Start the API server's profile this many seconds after arrivals start.",
)
@click.option(
    "--pacing",
    type=click.Choice([p.value for p in runner.Pacing]),
    default=None,
    help="timeline: each create when due, up to 64 in flight; sequential: as Kueue's generator, "
    "each workload set waits an interval, creates and waits for the answer. Default: timeline, "
    "or sequential with --against.",
)
@click.option(
    "--webhooks/--no-webhooks",
    default=None,
    help="Keep Berth's admission webhooks on the Workload path. Default: on, off with --against "
    "(minimalkueue has none).",
)
@click.option(
    "--against",
    type=click.Choice(["kueue"]),
    default=None,
    help="First run Kueue's own harness (built by scripts/build-control-plane) on the same "
    "config and binaries; print both side by side.",
)
def command(  # noqa: PLR0917 - click passes every option positionally by name
    config_file: Path,
    kubeconfig: str | None,
    out: Path | None,
    work_dir: Path | None,
    timeout: float,
    no_ceiling: bool,
    profile: Path | None,
    apiserver_profile: Path | None,
    apiserver_profile_seconds: int,
    apiserver_profile_delay: float,
    pacing: str | None,
    webhooks: bool | None,
    against: str | None,
) -> None:
    """Run a Kueue scheduler-performance generator config against Berth on a real API server."""
    if against is not None and kubeconfig is not None:
        raise click.UsageError(
            "--against runs both on control planes of their own; no --kubeconfig"
        )
    paced = runner.Pacing(pacing or ("sequential" if against else "timeline"))
    hooked = webhooks if webhooks is not None else against is None
    try:
        config = generator.load(config_file)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    want = (
        None
        if apiserver_profile is None
        else ApiserverProfile(apiserver_profile, apiserver_profile_seconds, apiserver_profile_delay)
    )
    with contextlib.ExitStack() as stack:
        if work_dir is None:
            work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="berth-bench-")))
        work_dir.mkdir(parents=True, exist_ok=True)
        click.echo(
            f"{config_file}: {len(generator.queues(config))} ClusterQueues, "
            f"{generator.workload_count(config)} workloads; logs in {work_dir}",
            err=True,
        )
        kueue_run = _kueue(config_file, work_dir, timeout) if against == "kueue" else None
        kube, pids = stack.enter_context(_cluster(kubeconfig, work_dir, profiling=want is not None))
        result = asyncio.run(
            _run(
                config,
                kube,
                pids,
                work_dir,
                limit=timeout,
                measure_ceiling=not no_ceiling,
                profile=profile,
                apiserver_profile=want,
                pacing=paced,
                webhooks=hooked,
            )
        )
    result = {"config": str(config_file), **result}
    rows: list[kueue.Row] | None = None
    if kueue_run is not None:
        rows = kueue.compare(kueue_run, result)
        result.update(kueue.as_yaml(kueue_run, rows))
    if "error" in result.get("apiserverProfile", {}):
        click.echo(
            f"warning: no API server profile: {result['apiserverProfile']['error']}", err=True
        )
    text = yaml.safe_dump(result, sort_keys=False, allow_unicode=True)
    # Beside Kueue, the table is what is printed; the summaries go to --out.
    click.echo(text if rows is None else kueue.table(rows))
    if out is not None:
        out.write_text(text)
    if "errors" in result:
        sys.exit(1)


def _kueue(config_file: Path, work: Path, timeout: float) -> kueue.KueueRun:
    click.echo("running Kueue's harness first (minimalkueue, no webhooks)", err=True)
    try:
        done = kueue.run(config_file, work, timeout=timeout)
    except devcluster_errors.MissingBinaryError as e:
        raise click.ClickException(str(e)) from e  # it names the build script
    except kueue.KueueHarnessError as e:
        raise click.ClickException(str(e)) from e
    click.echo(
        f"Kueue: wall {done.wall_seconds:.0f}s, {done.evictions} evictions; now Berth's run",
        err=True,
    )
    return done
