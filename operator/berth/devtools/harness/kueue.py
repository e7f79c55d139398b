"""Kueue's own scheduler-performance harness, run on this machine beside Berth's.

``berth bench harness CONFIG --against kueue`` runs Kueue's ``test/performance/scheduler`` runner
with minimalkueue (Kueue's scheduler, queue manager and cache, without webhooks), both built at
the pinned ``kueue`` version by ``scripts/build-control-plane``. The runner starts its own
control plane envtest-style from ``KUBEBUILDER_ASSETS`` — here a folder of links to the project's
own cached etcd, kube-apiserver and kubectl, so both harnesses run on the same binaries — creates
the config's queues and Workloads with Kueue's generator, plays the jobs' part, and writes
``summary.yaml`` (per workload class: count, evictions, average time to admission; per
ClusterQueue class its first and last status event) and ``minimalkueue.stats.yaml`` (the
controller's wall, user and system time, and peak RSS). This module runs it and reads those
two files into `KueueRun`. Called by ``command``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from berth.devtools.devcluster import binaries

STATS = "minimalkueue.stats.yaml"
SUMMARY = "summary.yaml"


class KueueHarnessError(RuntimeError):
    """Kueue's runner failed or wrote no summary; the message names its log."""


@dataclasses.dataclass(frozen=True, slots=True)
class ClassFigures:
    """One workload class as Kueue's recorder summarises it."""

    count: int
    evictions: int
    average_time_to_admission: float
    """Seconds from the Workload's first watch event to its last admission, averaged."""


@dataclasses.dataclass(frozen=True, slots=True)
class KueueRun:
    """What one run of Kueue's harness measured."""

    wall_seconds: float
    """First to last ClusterQueue status event seen by the recorder: arrivals to last finish."""
    classes: dict[str, ClassFigures]
    controller_cpu_seconds: float
    """minimalkueue's user + system time over its whole life."""
    controller_peak_rss_mib: float
    controller_wall_seconds: float
    dropped_events: int
    """Workload events the recorder dropped (its channel was full); 0 in a sound run."""
    runner_seconds: float
    """The runner's whole process, control plane start and stop included."""

    @property
    def evictions(self) -> int:
        """Evictions over every class."""
        return sum(c.evictions for c in self.classes.values())


def _time(value: object) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(str(value))  # RFC 3339, as Go writes it


def read(out: Path, runner_seconds: float = 0.0) -> KueueRun:
    """Read a finished run's ``summary.yaml`` and ``minimalkueue.stats.yaml`` from ``out``."""
    try:
        summary: dict[str, Any] = yaml.safe_load((out / SUMMARY).read_text()) or {}
        stats: dict[str, Any] = yaml.safe_load((out / STATS).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise KueueHarnessError(f"Kueue's runner left no readable summary in {out}: {e}") from e
    queues = (summary.get("clusterQueueClasses") or {}).values()
    if not queues:
        raise KueueHarnessError(f"{out / SUMMARY} has no ClusterQueue class")
    first = min(_time(q["firstEventTime"]) for q in queues)
    last = max(_time(q["lastEventTime"]) for q in queues)
    classes = {
        name: ClassFigures(
            count=int(c.get("count") or 0),
            evictions=int(c.get("totalEvictions") or 0),
            average_time_to_admission=int(c.get("averageTimeToAdmissionMs") or 0) / 1000,
        )
        for name, c in sorted((summary.get("workloadClasses") or {}).items())
    }
    return KueueRun(
        wall_seconds=(last - first).total_seconds(),
        classes=classes,
        controller_cpu_seconds=(int(stats.get("userMs") or 0) + int(stats.get("sysMs") or 0))
        / 1000,
        # Go reports the getrusage maxrss, which Linux counts in KiB.
        controller_peak_rss_mib=int(stats.get("maxrss") or 0) / 1024,
        controller_wall_seconds=int(stats.get("wallMs") or 0) / 1000,
        dropped_events=int(summary.get("droppedWorkloadEvents") or 0),
        runner_seconds=runner_seconds,
    )


def _assets(cache: binaries.BinaryCache, folder: Path) -> Path:
    """A ``KUBEBUILDER_ASSETS`` folder: links to the project's etcd, kube-apiserver, kubectl."""
    folder.mkdir(parents=True, exist_ok=True)
    for component in ("etcd", "kube-apiserver", "kubectl"):
        link = folder / component
        link.unlink(missing_ok=True)
        link.symlink_to(cache.find(component))
    return folder


def run(config_file: Path, work: Path, *, timeout: float) -> KueueRun:
    """Run Kueue's harness on ``config_file`` with its output in ``work``; read what it measured.

    Raises `KueueHarnessError` naming the runner's log if it fails, and
    ``devcluster.errors.MissingBinaryError`` if the harness is not built.
    """
    cache = binaries.BinaryCache.default()
    runner = cache.find("kueue-perf-runner")
    minimal = cache.find("minimalkueue")
    crds = cache.kueue_crds()
    out = work / "kueue"
    out.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "KUBEBUILDER_ASSETS": str(_assets(cache, work / "kueue-assets")),
        # Kueue's test utilities read it at start (any folder will do, with a trailing slash).
        "PROJECT_DIR": f"{runner.parent}/",
    }
    argv = [
        str(runner),
        f"--o={out}",
        f"--crds={crds}",
        f"--generatorConfig={config_file.resolve()}",
        f"--minimalKueue={minimal}",
        f"--timeout={int(timeout)}s",
        "--withLogs=true",
        "--logToFile=true",
    ]
    log = work / "kueue-runner.log"
    started = time.monotonic()
    with log.open("w") as sink:
        try:
            done = subprocess.run(  # noqa: S603 - our own cached binary, fixed arguments
                argv,
                env=env,
                cwd=out,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=timeout + 300,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise KueueHarnessError(f"Kueue's runner did not end in {timeout + 300:.0f}s") from e
    if done.returncode != 0:
        raise KueueHarnessError(f"Kueue's runner exited {done.returncode}; see {log}")
    return read(out, time.monotonic() - started)


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    """One figure of both harnesses, and Berth's over Kueue's."""

    figure: str
    kueue: float
    berth: float

    @property
    def ratio(self) -> float | None:
        """Berth ÷ Kueue (None when Kueue's figure is 0)."""
        return self.berth / self.kueue if self.kueue else None


def compare(kueue: KueueRun, berth: dict[str, Any]) -> list[Row]:
    """The figures both harnesses measure, by the same definitions, Kueue's first.

    ``berth`` is Berth's harness summary (``summary.summarize`` with the command's additions).
    """
    classes = berth.get("workloadClasses") or {}
    rows = [Row("wall (s)", kueue.wall_seconds, float(berth["wallSeconds"]))]
    rows += [
        Row(
            f"average time to admission, {name} (s)",
            figures.average_time_to_admission,
            float((classes.get(name) or {}).get("averageSeenToLastAdmissionSeconds") or 0.0),
        )
        for name, figures in kueue.classes.items()
    ]
    operator = berth.get("operator") or {}
    rows.append(Row("evictions", kueue.evictions, float(berth["evictions"])))
    rows += [
        Row(
            f"evictions, {name}",
            figures.evictions,
            float((classes.get(name) or {}).get("evictions") or 0),
        )
        for name, figures in kueue.classes.items()
    ]
    rows += [
        Row(
            "controller CPU, whole process (s)",
            kueue.controller_cpu_seconds,
            float(operator.get("cpuSecondsWholeProcess") or 0.0),
        ),
        Row(
            "controller peak RSS (MiB)",
            kueue.controller_peak_rss_mib,
            float(operator.get("peakRssMiB") or 0.0),
        ),
    ]
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| figure | Kueue | Berth | Berth ÷ Kueue |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        lines.append(f"| {r.figure} | {r.kueue:,.1f} | {r.berth:,.1f} | {ratio} |")
    return "\n".join(lines)


def as_yaml(run: KueueRun, rows: list[Row]) -> dict[str, Any]:
    """Kueue's run and the comparison, for the command's YAML summary."""
    return {
        "kueue": {
            "wallSeconds": round(run.wall_seconds, 2),
            "evictions": run.evictions,
            "workloadClasses": {
                name: {
                    "count": c.count,
                    "evictions": c.evictions,
                    "averageTimeToAdmissionSeconds": c.average_time_to_admission,
                }
                for name, c in run.classes.items()
            },
            "controller": {
                "cpuSeconds": round(run.controller_cpu_seconds, 1),
                "peakRssMiB": round(run.controller_peak_rss_mib, 1),
                "wallSeconds": round(run.controller_wall_seconds, 1),
            },
            "droppedWorkloadEvents": run.dropped_events,
            "runnerSeconds": round(run.runner_seconds, 1),
        },
        "berthOverKueue": {r.figure: None if r.ratio is None else round(r.ratio, 3) for r in rows},
    }
