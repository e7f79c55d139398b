"""``berth up`` as a new user runs it: every sample Job is admitted, runs and finishes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from berth.adapters.devcluster import binaries, kubectl, launcher, processes
from operator_env import ROOT

pytestmark = pytest.mark.e2e

BERTH = str(Path(sys.executable).with_name("berth"))
_TIMEOUT = 240
"""Seconds ``berth up --timeout`` allows the demo; at 20x it takes about a minute."""


def _sample_jobs() -> list[str]:
    docs = yaml.safe_load_all((ROOT / "config" / "samples" / "jobs.yaml").read_text())
    return sorted(f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in docs if d)


def test_up_runs_every_sample_job_to_completion_and_prints_admissions(tmp_path: Path) -> None:
    cache = binaries.BinaryCache.default()
    if missing := cache.missing(["etcd", *binaries.KUBERNETES_COMMANDS, "kwok"]):
        message = f"not built: {', '.join(missing)}; run scripts/build-control-plane"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    run_dir = tmp_path / "up"
    try:
        done = subprocess.run(  # noqa: S603 - the project's own entry point
            [BERTH, "up", "--dir", str(run_dir), "--timeout", str(_TIMEOUT), "--keep"],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT + 180,
            check=False,
            cwd=tmp_path,  # not the repository: the samples are found from the package
        )
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        jobs = _sample_jobs()
        for verb in ("submitted", "admitted", "finished"):
            seen = sorted({line.split()[2] for line in lines if line.split()[1:2] == [verb]})
            assert seen == jobs, f"{verb}: {done.stdout}"
        assert any(" preempted " in line for line in lines), done.stdout
        assert "ClusterQueue usage back to zero" in done.stdout
        client = kubectl.Kubectl(cache.find("kubectl"), run_dir / "kubeconfig")
        listed = client.json("get", "jobs", "-A")["items"]
        complete = sorted(
            f"{j['metadata']['namespace']}/{j['metadata']['name']}"
            for j in listed
            if any(
                c["type"] == "Complete" and c["status"] == "True"
                for c in j.get("status", {}).get("conditions", [])
            )
        )
        assert complete == jobs
    finally:
        state = launcher.load_state(run_dir)
        subprocess.run(  # noqa: S603 - the project's own entry point
            [BERTH, "dev", "down", "--dir", str(run_dir)], timeout=60, check=False
        )
    assert state is not None
    assert not any(processes.is_running(r) for r in launcher.recorded_processes(state))
