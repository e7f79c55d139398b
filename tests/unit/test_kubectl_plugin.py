"""``kubectl berth`` runs Berth's CLI: kubectl finds the ``kubectl-berth`` script on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from berth.adapters.devcluster import binaries, errors

SCRIPTS = Path(sys.executable).parent


def test_the_plugin_script_is_installed_beside_berth() -> None:
    done = subprocess.run(  # noqa: S603 - the project's own entry point
        [str(SCRIPTS / "kubectl-berth"), "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("berth, version ")


def test_kubectl_runs_it_as_a_plugin() -> None:
    try:
        kubectl = binaries.BinaryCache.default().find("kubectl")
    except errors.MissingBinaryError as e:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{e}; CI must build it (scripts/test runs the build)", pytrace=False)
        pytest.skip(str(e))
    env = {**os.environ, "PATH": f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(  # noqa: S603 - the cached kubectl
        [str(kubectl), "berth", "queues", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: kubectl-berth queues" in done.stdout
