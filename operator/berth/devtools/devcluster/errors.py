"""Errors of the development control plane; raised by every module of this package.

::

    DevClusterError                 base: the development control plane cannot do what was asked
    ├── MissingBinaryError          a pinned binary is not in the cache (build it first)
    ├── StartupError                a component exited or did not become ready in time
    └── CommandError                a client command (kubectl) against the cluster failed

Callers that only report use ``DevClusterError``; the test fixtures tell ``MissingBinaryError``
apart because a missing binary skips a test outside CI and fails it under CI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class DevClusterError(Exception):
    """The development control plane cannot do what was asked."""


class MissingBinaryError(DevClusterError):
    """A pinned binary is not in the cache."""

    def __init__(self, component: str, path: Path) -> None:
        super().__init__(
            f"{component} is not built: {path} is missing; run scripts/build-control-plane"
        )
        self.component = component
        self.path = path


class StartupError(DevClusterError):
    """A component exited or did not become ready in time; its log says why."""

    def __init__(self, component: str, reason: str, log: Path | None) -> None:
        where = f"; log: {log}" if log is not None else ""
        super().__init__(f"{component}: {reason}{where}")
        self.component = component
        self.log = log


class CommandError(DevClusterError):
    """A client command against the cluster failed."""

    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        # Output is capped so one noisy failure cannot flood a test report.
        super().__init__(f"{' '.join(argv)} exited {returncode}: {stderr.strip()[-2000:]}")
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
