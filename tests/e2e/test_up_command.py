"""``berth up`` as a new user runs it: every sample Job is admitted, runs and finishes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from berth.adapters.history import store
from berth.devtools.devcluster import binaries, kubectl, launcher, processes
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
    env = {**os.environ, "BERTH_DATA_DIR": str(tmp_path / "data")}
    try:
        done = subprocess.run(  # noqa: S603 - the project's own entry point
            [BERTH, "up", "--dir", str(run_dir), "--timeout", str(_TIMEOUT), "--keep"],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT + 180,
            check=False,
            cwd=tmp_path,  # not the repository: the samples are found from the package
            env=env,
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
        # --keep keeps the operator answering its webhooks: a labelled Job is still accepted
        # (and suspended), not refused with "connection refused".
        state = launcher.load_state(run_dir)
        assert state is not None
        assert "berth-operator" in {
            r.name for r in launcher.recorded_processes(state) if processes.is_running(r)
        }
        created = client.run(
            "create", "-o", "jsonpath={.spec.suspend}", "-f", "-", stdin=_kept_job()
        )
        assert created == "true"
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
    # `berth dev down` stopped the operator with SIGTERM: its history run is closed.
    _report_matches(done.stdout, env)


def _kept_job() -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "after-up",
                "namespace": "team-a",
                "labels": {"berth.dev/queue-name": "training"},
            },
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "registry.invalid/x:never"}],
                    }
                }
            },
        }
    )


def _report_matches(printed: str, env: dict[str, str]) -> None:
    """``berth report`` over the history the operator recorded counts what ``up`` printed.

    ``up`` polls the Workloads, so it may miss a change undone within one poll: the history
    holds at least what it printed.
    """
    found = re.search(r"(\d+) admissions, (\d+) preemptions", printed)
    assert found is not None, printed
    admissions, preemptions = int(found[1]), int(found[2])
    assert "run `berth report`" in printed
    report = subprocess.run(  # noqa: S603 - the project's own entry point
        [BERTH, "report", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    queues = [q for q in json.loads(report.stdout) if q["kind"] == "ClusterQueue"]
    assert sum(q["admitted"] for q in queues) >= max(admissions, len(_sample_jobs()))
    assert sum(q["preempted"] for q in queues) >= preemptions
    assert sum(q["finished"] for q in queues) == len(_sample_jobs())
    # SIGTERM stopped the operator gracefully: its history run is closed, with a duration.
    url = store.default_url(Path(env["BERTH_DATA_DIR"]))
    # A synchronous test: it drives `berth up` and `berth report` as processes for minutes.
    data = asyncio.run(_latest_run(url))
    assert data is not None
    assert data.run.duration is not None
    assert data.run.kind == "operator"


async def _latest_run(url: str) -> store.RunData | None:
    engine = await store.open_store(url)
    try:
        return await store.read_run(engine)
    finally:
        await engine.dispose()
