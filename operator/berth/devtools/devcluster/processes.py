"""Supervised child processes: start one with its log file, wait until it is ready, stop it.

The launcher runs every control-plane component through `ManagedProcess`. Each child gets its own
process group, so stopping it stops anything it spawned. Unless it is detached (``berth dev up``,
whose cluster outlives the command), a child is also killed by the kernel when the Python process
that started it dies, so a crashed or killed test run leaves no orphaned etcd behind.
`stop_recorded` stops a detached process from another Python process (``berth dev down``).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from berth.devtools.devcluster import errors

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

_PR_SET_PDEATHSIG = 1
_TAIL_LINES = 25


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free now (the way envtest picks its ports)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel for SIGKILL when the parent exits.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def log_tail(log: Path, lines: int = _TAIL_LINES) -> str:
    """Return the last ``lines`` lines of ``log``, or an empty string if there is none."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclasses.dataclass(frozen=True, slots=True)
class ProcessRecord:
    """What another process needs to find and stop a detached child."""

    name: str
    pid: int
    executable: str
    log: str


class ManagedProcess:
    """One control-plane component as a child process with its output in a log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        detach: bool = False,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self._env = dict(env) if env is not None else None
        self._detach = detach
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The child's process id; the process must have been started."""
        if self._popen is None:
            raise RuntimeError(f"{self.name} was not started")
        return self._popen.pid

    def start(self) -> None:
        """Start the child, appending its stdout and stderr to the log file."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"+ {' '.join(self.argv)}\n".encode())
            out.flush()
            self._popen = subprocess.Popen(  # noqa: S603 - argv is built by the launcher, never a shell
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
                preexec_fn=None if self._detach else _die_with_parent,  # noqa: PLW1509 - only prctl, no locks
            )

    def returncode(self) -> int | None:
        """Return the exit code if the child has exited, else None."""
        return None if self._popen is None else self._popen.poll()

    def wait_ready(
        self, probe: Callable[[], bool], timeout: float, *, what: str = "ready"
    ) -> float:
        """Poll ``probe`` until it holds; raise `StartupError` if the child exits or time runs out.

        Returns:
            The seconds it took.
        """
        start = time.monotonic()
        while True:
            code = self.returncode()
            if code is not None:
                raise errors.StartupError(
                    self.name, f"exited with code {code}:\n{log_tail(self.log)}", self.log
                )
            if probe():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise errors.StartupError(
                    self.name, f"not {what} after {timeout:.0f}s:\n{log_tail(self.log)}", self.log
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the child's process group: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if self._popen is None or self._popen.poll() is not None:
            return
        _signal_group(self._popen.pid, signal.SIGTERM)
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(self._popen.pid, signal.SIGKILL)
            self._popen.wait()

    def kill(self) -> None:
        """SIGKILL the child's process group at once and reap it."""
        if self._popen is None or self._popen.poll() is not None:
            return
        _signal_group(self._popen.pid, signal.SIGKILL)
        self._popen.wait()

    def record(self) -> ProcessRecord:
        """Describe the running child for `stop_recorded`."""
        return ProcessRecord(self.name, self.pid, self.argv[0], str(self.log))


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The child leads its own session, so its process group id is its pid.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def is_running(record: ProcessRecord) -> bool:
    """Tell whether the recorded process still runs (and is the same program, not a reused pid)."""
    proc = Path("/proc") / str(record.pid)
    try:
        argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return argv0 == record.executable and state != "Z"


def stop_recorded(record: ProcessRecord, timeout: float = 10.0) -> bool:
    """Stop a detached process started by another Python process.

    Returns:
        Whether it was running.

    Raises:
        DevClusterError: it was still running ``timeout`` seconds after SIGKILL.
    """
    if not is_running(record):
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        _signal_group(record.pid, sig)
        deadline = time.monotonic() + timeout
        while is_running(record) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not is_running(record):
            return True
    raise errors.DevClusterError(f"{record.name} (pid {record.pid}) survived SIGKILL")
