"""The operator as the harness runs it: ``berth run`` in its own process, measured from ``/proc``.

The operator runs as in production — its own process, its own event loop, leading through its
Lease — so the harness measures it from outside: CPU time (user + system, ``/proc/<pid>/stat``)
and peak resident memory (``VmHWM`` in ``/proc/<pid>/status``). Optionally py-spy samples it for
a profile. Used by ``berth bench harness``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, utime 14 and stime 15 (1-based, man 5 proc).
    return (int(fields[11]) + int(fields[12])) / _TICKS


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set size, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Operator:
    """``berth run`` against one kubeconfig, its output in ``log``."""

    def __init__(self, kubeconfig: str, log: Path, *, lease_duration: int = 4) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.lease_duration = lease_duration
        self.process: subprocess.Popen[bytes] | None = None
        self.profiler: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """Its process id."""
        assert self.process is not None  # noqa: S101 - only after start
        return self.process.pid

    def start(self, timeout: float = 90.0) -> None:
        """Start it and wait until it leads with a primed cache."""
        berth = Path(sys.executable).parent / "berth"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 - argv built here
                [
                    str(berth),
                    "run",
                    f"--kubeconfig={self.kubeconfig}",
                    f"--lease-duration={self.lease_duration}",
                    # As in production: metrics served, history recorded (beside the log).
                    "--metrics-port=0",
                    f"--data-dir={self.log.parent / 'berth-data'}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )
        deadline = time.monotonic() + timeout
        while "primed:" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the operator did not start; see {self.log}")
            time.sleep(0.2)

    def profile(self, out: Path, rate: int = 100) -> None:
        """Sample it with py-spy until it stops (speedscope JSON in ``out``)."""
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(py_spy).exists():
            raise RuntimeError("py-spy is not installed (pip install py-spy)")
        self.profiler = subprocess.Popen(  # noqa: S603 - argv built here
            [
                py_spy,
                "record",
                "--pid",
                str(self.pid),
                "--rate",
                str(rate),
                "--format",
                "raw",
                "--output",
                str(out),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def cpu_seconds(self) -> float:
        """CPU seconds it has used so far."""
        return cpu_seconds(self.pid)

    def peak_rss_mib(self) -> float:
        """Its peak resident memory so far, in MiB."""
        return peak_rss_mib(self.pid)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 15 s), and its profiler after it."""
        if self.profiler is not None:
            self.profiler.send_signal(signal.SIGINT)
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.profiler is not None:
            try:
                self.profiler.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.profiler.kill()
                self.profiler.wait(timeout=10)
