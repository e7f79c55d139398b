"""``berth dev up`` / ``env`` / ``down``: one command gives a developer a cluster with GPU nodes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from berth.devtools.devcluster import binaries, launcher, processes

pytestmark = pytest.mark.e2e

BERTH = str(Path(sys.executable).with_name("berth"))


def berth(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 - the project's own entry point
        [BERTH, *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_dev_up_env_down_gives_a_cluster_whose_nodes_kubectl_lists(tmp_path: Path) -> None:
    cache = binaries.BinaryCache.default()
    if missing := cache.missing(["etcd", *binaries.KUBERNETES_COMMANDS, "kwok", "kuberay"]):
        message = f"not built: {', '.join(missing)}; run scripts/build-control-plane"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    run_dir = tmp_path / "dev"
    berth(
        "dev",
        "up",
        "--dir",
        str(run_dir),
        "--pool",
        "name=a100,nodes=2,gpus=8",
        "--pool",
        "name=h100,nodes=1,gpus=4,taint=berth.dev/flavor=h100:NoSchedule",
        "--framework",
        "kuberay",
    )
    try:
        env = berth("dev", "env", "--dir", str(run_dir)).splitlines()
        assert env[0] == f"export KUBECONFIG={run_dir.resolve() / 'kubeconfig'}"
        nodes = subprocess.run(  # noqa: S603 - the cached kubectl
            [
                str(cache.find("kubectl")),
                "get",
                "nodes",
                "--no-headers",
                "-o",
                "custom-columns=NAME:.metadata.name,GPU:.status.allocatable.nvidia\\.com/gpu",
            ],
            env={**os.environ, "KUBECONFIG": env[0].split("=", 1)[1]},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert nodes == ["a100-0", "8", "a100-1", "8", "h100-0", "4"]
        # The framework's real controller runs beside them, its CRDs served, until `down`.
        state = launcher.load_state(run_dir)
        assert state is not None
        assert "kuberay" in [r.name for r in launcher.recorded_processes(state)]
        crd = subprocess.run(  # noqa: S603 - the cached kubectl
            [str(cache.find("kubectl")), "get", "crd", "rayclusters.ray.io", "-o", "name"],
            env={**os.environ, "KUBECONFIG": env[0].split("=", 1)[1]},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
        assert crd == "customresourcedefinition.apiextensions.k8s.io/rayclusters.ray.io"
    finally:
        state = launcher.load_state(run_dir)
        down = berth("dev", "down", "--dir", str(run_dir))
    assert "stopped" in down
    assert state is not None
    assert not any(processes.is_running(r) for r in launcher.recorded_processes(state))
