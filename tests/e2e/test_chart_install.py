"""The Helm chart installed on a real control plane, and the operator run with its rights.

What runs: the chart is rendered and dry-run server-side against the API server, then
``helm install --wait`` installs it (the operator's pods land on kwok nodes, which report them
Running and Ready without running a container: no kubelet runs here). Then two operator
processes run on this machine in cluster mode, each with a token of the chart's ServiceAccount
and the chart's Configuration, exactly as the chart's pods would: the leader creates the
webhook certificate's Secret and writes its CA into the chart's webhook configurations (and
nothing else of them); both replicas serve that one certificate; a queued Job is admitted and
started — so the chart's RBAC is enough for everything the operator does.

What cannot run here: Service routing (no kube-proxy), so the API server cannot call the webhook
Service; the chart is installed with ``webhooks.failurePolicy=Ignore`` and the test's Job is
created suspended, as the mutating webhook would have made it.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.devtools.devcluster import binaries, kwok, launcher
from operator_env import (
    ROOT,
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    get,
    gpu_job,
    local_queue,
    running_pods,
    workload_of,
)

pytestmark = pytest.mark.e2e
NAMESPACE = "berth-system"
SECRET = "berth-webhook-tls"  # noqa: S105 - the name of a Secret, not a password


class ChartOperator(OperatorProcess):
    """``berth run`` in cluster mode, as the chart's pods run it, with the chart's token."""

    def __init__(
        self, plane: launcher.ControlPlane, log: Path, kubeconfig: Path, config: Path
    ) -> None:
        super().__init__(plane, log, config=config)
        self.kubeconfig = kubeconfig

    def _spawn(self, out: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(  # noqa: S603 - argv built here
            [
                str(Path(sys.executable).parent / "berth"),
                "run",
                f"--kubeconfig={self.kubeconfig}",
                f"--config={self.config}",
                f"--lease-duration={self.lease_duration}",
                "--metrics-port=0",
                "--no-history",
                f"--webhook-secret={SECRET}",
                "--webhook-service=berth-webhook",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )

    def webhook_port(self) -> int:
        """The port its webhook server listens on (from its log)."""
        found = re.findall(r"webhooks served at https://127\.0\.0\.1:(\d+)", self.log.read_text())
        assert found, self.log.read_text()
        return int(found[-1])

    def ready(self) -> bool:
        """Whether ``/readyz`` answers 200."""
        url = self.metrics_url().replace("/metrics", "/readyz")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 - a loopback URL from its log
                return bool(answer.status == 200)
        except OSError:
            return False


def _helm(plane: launcher.ControlPlane, *args: str) -> str:
    helm = binaries.BinaryCache.default().find("helm")
    done = subprocess.run(  # noqa: S603 - argv built here
        [str(helm), f"--kubeconfig={plane.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _token_kubeconfig(plane: launcher.ControlPlane, path: Path) -> Path:
    token = plane.kubectl().run("create", "token", "berth", "-n", NAMESPACE, "--duration=1h")
    config = yaml.safe_load(plane.kubeconfig.read_text())
    config["users"] = [{"name": "berth", "user": {"token": token.strip()}}]
    for context in config["contexts"]:
        context["context"]["user"] = "berth"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def test_chart_installs_and_its_rights_run_the_operator(
    control_plane_factory: Callable[..., launcher.ControlPlane],
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
    tmp_path: Path,
) -> None:
    plane = control_plane_factory("chart-cluster", scheduling=True, node_pools=(kwok.A100_POOL,))
    admin = plane.kubectl()
    chart = str(ROOT / "helm" / "berth")
    settings = ["--set", "webhooks.failurePolicy=Ignore"]
    # Server-side dry run of everything the chart renders (its CRDs first: nothing else needs them).
    admin.run("apply", "--server-side", "-f", str(ROOT / "helm" / "berth" / "crds"))
    admin.run("create", "namespace", NAMESPACE)
    rendered = _helm(plane, "template", "berth", chart, "-n", NAMESPACE, *settings)
    admin.run("apply", "--dry-run=server", "-f", "-", stdin=rendered)
    _helm(plane, "install", "berth", chart, "-n", NAMESPACE, "--wait", "--timeout=180s", *settings)
    deployment = get(plane, "deployment", "berth", "-n", NAMESPACE)
    assert deployment["status"]["readyReplicas"] == 2

    config = tmp_path / "config.yaml"
    config.write_text(
        get(plane, "configmap", "berth-config", "-n", NAMESPACE)["data"]["config.yaml"]
    )
    kubeconfig = _token_kubeconfig(plane, tmp_path / "sa.kubeconfig")
    replicas = [
        ChartOperator(plane, tmp_path / f"operator-{i}.log", kubeconfig, config) for i in range(2)
    ]
    try:
        replicas[0].start()
        _start_standby(replicas[1], wait_until)
        wait_until(lambda: all(r.ready() for r in replicas), timeout=60)

        secret = get(plane, "secret", SECRET, "-n", NAMESPACE)
        served = {
            ssl.get_server_certificate(("127.0.0.1", r.webhook_port())).strip() for r in replicas
        }
        assert served == {_decoded(secret, "tls.crt").decode().strip()}, "one certificate for all"
        ca = _decoded(secret, "ca.crt")
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            installed = yaml.safe_load(rendered_of(rendered, kind))
            wait_until(lambda kind=kind: _bundles(plane, kind) == {ca}, timeout=30)
            live = get(plane, kind, "berth")
            for before, after in zip(installed["webhooks"], live["webhooks"], strict=True):
                after_config = dict(after["clientConfig"])
                after_config.pop("caBundle")
                assert after_config == before["clientConfig"], "only the caBundle may change"

        ns = new_namespace(plane, "chart-team")
        admin.apply(
            [
                flavor("chart-a100", dict(kwok.A100_LABELS)),
                cluster_queue("chart-cq", ns, {"chart-a100": 8}),
                local_queue("lq", ns, "chart-cq"),
            ]
        )
        job = gpu_job("train", ns, "lq", 2, runs_for="30s")
        job["spec"]["suspend"] = True  # what the mutating webhook does where Services route
        admin.create([job])
        wait_until(
            lambda: condition(workload_of(plane, ns, "train"), "Admitted").get("status") == "True",
            timeout=60,
        )
        wait_until(lambda: running_pods(plane, ns, "train") == 2, timeout=60)
        logs = "".join(r.log.read_text(errors="replace") for r in replicas)
        assert not _REFUSED_BY_RBAC.search(logs), "the chart's rights must cover the operator"
    finally:
        for replica in replicas:
            if replica.process is not None:
                _terminate(replica.process)


# How a refusal by RBAC shows in the operator's log: the API status reason, or its code as a
# status field. A bare "403" is no sign of one: ports and log timestamps' milliseconds carry it.
_REFUSED_BY_RBAC = re.compile(r"Forbidden|['\"]code['\"]:\s*403\b")


def _start_standby(replica: ChartOperator, wait_until: Callable[..., None]) -> None:
    # A standby never primes; it is up once its webhook server listens.
    with replica.log.open("ab") as out:
        replica.process = replica._spawn(out)
    wait_until(lambda: "webhooks served at" in replica.log.read_text(errors="replace"), 60)


def rendered_of(rendered: str, kind: str) -> str:
    """The one object of ``kind`` in a rendered chart, as YAML."""
    for doc in rendered.split("\n---"):
        data = yaml.safe_load(doc)
        if data and data.get("kind", "").lower() == kind:
            return doc
    raise AssertionError(kind)


def _bundles(plane: launcher.ControlPlane, kind: str) -> set[bytes]:
    return {
        base64.b64decode(h["clientConfig"].get("caBundle", ""))
        for h in get(plane, kind, "berth")["webhooks"]
    }


def _terminate(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
