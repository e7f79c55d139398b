"""Running the cached kubectl against one cluster; used by the launcher, ``berth dev`` and tests."""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Any

import yaml

from berth.devtools.devcluster import errors

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path


class Kubectl:
    """The kubectl binary bound to one kubeconfig."""

    def __init__(self, binary: Path, kubeconfig: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig

    def run(self, *args: str, stdin: str | None = None, timeout: float = 120.0) -> str:
        """Run ``kubectl ARGS`` and return its stdout; raise `CommandError` if it fails."""
        argv = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args]
        done = subprocess.run(  # noqa: S603 - argv is a list built here, never a shell
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise errors.CommandError(argv, done.returncode, done.stderr)
        return done.stdout

    def json(self, *args: str) -> Any:  # noqa: ANN401 - the shape is whatever kubectl returns
        """Run ``kubectl ARGS -o json`` and return the decoded output."""
        return json.loads(self.run(*args, "-o", "json"))

    def apply(self, objects: Iterable[Mapping[str, Any]]) -> str:
        """Apply ``objects`` server-side (one YAML stream) and return kubectl's summary."""
        return self.run("apply", "--server-side", "-f", "-", stdin=_stream(objects))

    def create(self, objects: Iterable[Mapping[str, Any]]) -> str:
        """Create ``objects`` and return kubectl's summary.

        Unlike a server-side apply, a plain create keeps a Node's status, which is how a fake
        node gets its capacity.
        """
        return self.run("create", "-f", "-", stdin=_stream(objects))

    def patch_status(self, kind: str, name: str, patch: Mapping[str, Any]) -> str:
        """Merge-patch the status subresource of the cluster-scoped object ``kind/name``."""
        return self.run(
            "patch", kind, name, "--subresource=status", "--type=merge", "-p", json.dumps(patch)
        )


def _stream(objects: Iterable[Mapping[str, Any]]) -> str:
    return yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False)
