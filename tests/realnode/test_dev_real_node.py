"""``berth dev up --real-node`` and ``berth dev down``: a real node that leaves nothing behind.

Run as a developer would: the command in a subprocess, a pod created with kubectl, then ``down``;
afterwards no process, mount, network namespace, bridge, iptables rule, cgroup or directory of
the node is left, and the sysctls are as before. Then the whole cluster is SIGKILLed, as a crash
or ``kill -9`` would leave it, and a second ``up`` in the same directory starts clean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from berth.devtools.devcluster import binaries, images, kubectl, launcher, realnode

pytestmark = pytest.mark.realnode
BERTH = str(Path(sys.executable).parent / "berth")


def _berth(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 - argv built here
        [BERTH, "dev", *args], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _host(*argv: str) -> subprocess.CompletedProcess[str]:
    # ip and iptables-save from PATH, as the node itself runs them.
    return subprocess.run(argv, capture_output=True, text=True, check=False)  # noqa: S603 - argv built here


def _leftovers() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if str(realnode.STATE).encode() in cmdline:
                found.append(f"process {proc.name}: {cmdline[:80]!r}")
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [f"mount {line.split()[4]}" for line in mounts.splitlines() if "berth-node" in line]
    if _host("ip", "link", "show", realnode.BRIDGE).returncode == 0:
        found.append(f"bridge {realnode.BRIDGE}")
    rules = _host("iptables-save").stdout
    found += [f"rule {r}" for r in rules.splitlines() if "KUBE-" in r or realnode.CNI_NETWORK in r]
    found += [str(d) for d in (realnode.ROOT, realnode.STATE) if d.exists()]
    found += [str(d) for d in Path("/sys/fs/cgroup").glob("*/kubepods")]
    netns = Path("/var/run/netns")
    found += [str(n) for n in netns.glob("cni-*")] if netns.is_dir() else []
    return found


def _sysctl(name: str) -> str:
    return (Path("/proc/sys") / name).read_text().strip()


def _run_a_pod(run_dir: Path, wait_until: Callable[..., None]) -> None:
    client = kubectl.Kubectl(binaries.BinaryCache.default().find("kubectl"), run_dir / "kubeconfig")
    client.run("wait", "--for=create", "serviceaccount/default", "--timeout=60s")
    client.run(
        "run",
        "hello",
        f"--image={images.WORKLOAD_IMAGE}",
        "--image-pull-policy=Never",
        "--restart=Never",
        "--",
        "sh",
        "-c",
        "echo hello; sleep 3600",
    )
    wait_until(
        lambda: client.json("get", "pod", "hello")["status"].get("phase") == "Running", timeout=60
    )
    assert client.run("logs", "hello").strip() == "hello"


def test_down_leaves_nothing_and_up_after_a_sigkill_of_everything_starts_clean(
    tmp_path: Path, wait_until: Callable[..., None]
) -> None:
    if missing := realnode.missing_prerequisites():
        pytest.skip("a real node needs " + "; ".join(missing))
    run_dir = tmp_path / "dev"
    forward = _sysctl("net/ipv4/ip_forward")
    _berth("up", "--nodes", "0", "--real-node", "--dir", str(run_dir))
    try:
        _run_a_pod(run_dir, wait_until)
    finally:
        _berth("down", "--dir", str(run_dir))
    assert _leftovers() == []
    assert _sysctl("net/ipv4/ip_forward") == forward

    _berth("up", "--nodes", "0", "--real-node", "--dir", str(run_dir))
    _run_a_pod(run_dir, wait_until)
    state = json.loads((run_dir / launcher.STATE_FILE).read_text())
    for record in state["processes"]:
        os.kill(record["pid"], signal.SIGKILL)
    # What a crash leaves: the pod's container and its shim still run, with their mounts.
    assert _leftovers() != []
    try:
        out = _berth("up", "--nodes", "0", "--real-node", "--dir", str(run_dir))
        assert "real node real-0" in out
        _run_a_pod(run_dir, wait_until)
    finally:
        _berth("down", "--dir", str(run_dir))
    assert _leftovers() == []
    assert _sysctl("net/ipv4/ip_forward") == forward


def test_an_up_killed_while_starting_is_cleared_by_the_next_up(
    tmp_path: Path, wait_until: Callable[..., None]
) -> None:
    if missing := realnode.missing_prerequisites():
        pytest.skip("a real node needs " + "; ".join(missing))
    run_dir = tmp_path / "dev"
    first = subprocess.Popen(  # noqa: S603 - argv built here
        [BERTH, "dev", "up", "--nodes", "0", "--real-node", "--dir", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state_file = run_dir / launcher.STATE_FILE

    def kubelet_started() -> bool:
        try:
            state = json.loads(state_file.read_text())
        except (OSError, ValueError):
            return False
        return any(p["name"] == "kubelet" for p in state["processes"])

    wait_until(kubelet_started, timeout=120, interval=0.05)
    first.kill()
    first.wait()
    try:
        out = _berth("up", "--nodes", "0", "--real-node", "--dir", str(run_dir))
        assert "stopped what an interrupted `up` left (" in out
        assert "kube-apiserver" in out.split("left (", 1)[1].split(")", 1)[0]
        _run_a_pod(run_dir, wait_until)
    finally:
        _berth("down", "--dir", str(run_dir))
    assert _leftovers() == []
