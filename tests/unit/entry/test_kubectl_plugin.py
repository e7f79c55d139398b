"""The installed ``kubectl-berth`` script is the ``berth`` command line under kubectl's plugin name.

kubectl runs an executable named ``kubectl-berth`` found on ``PATH`` for ``kubectl berth ...``;
``scripts/setup`` installs it next to ``berth`` from ``[project.scripts]``.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import sys

import pytest

import berth
from operator_env import ROOT

BIN = pathlib.Path(sys.executable).parent
SAMPLES = ROOT / "config" / "samples"


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    want_in_stdout: tuple[str, ...]


CASES = [
    Case("version", ("--version",), (f"berth, version {berth.__version__}",)),
    Case(
        "help names the plugin and lists every command",
        ("--help",),
        ("Usage: kubectl berth [OPTIONS] COMMAND", "queues", "explain", "report", "simulate"),
    ),
    Case("a subcommand's help", ("queues", "--help"), ("Usage: kubectl berth queues",)),
    Case(
        "a subcommand runs",
        (
            "queues",
            "--scenario",
            str(SAMPLES / "queues.yaml"),
            "--scenario",
            str(SAMPLES / "jobs.yaml"),
            "--at",
            "60s",
        ),
        ("at 1m", "team-a  cohort=research"),
    ),
]


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - runs the project's own installed script
        [str(BIN / script), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )


def test_the_plugin_script_is_installed_beside_berth() -> None:
    assert (BIN / "berth").is_file()
    assert os.access(BIN / "kubectl-berth", os.X_OK), "run scripts/setup to install it"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kubectl_berth_runs_the_berth_command_line(case: Case) -> None:
    result = _run("kubectl-berth", *case.args)
    assert result.returncode == 0, result.stderr
    for want in case.want_in_stdout:
        assert want in result.stdout


def test_the_plugin_and_berth_print_the_same_output() -> None:
    args = ("queues", "--scenario", str(SAMPLES / "queues.yaml"), "--at", "0s")
    assert _run("kubectl-berth", *args).stdout == _run("berth", *args).stdout
