"""Job frameworks' real controllers on a local control plane: their CRDs, webhooks and process.

``start(plane, name)`` installs a framework the way its own release manifests would, minus what
needs a kubelet: the CRDs copied beside its binary from its Go module (``scripts/
build-control-plane``), its webhook configurations from the module's manifest with each
``service`` reference turned into a loopback URL and a CA of this run, and the controller as a
child process of the control plane (stopped with it). Internal certificate management is off:
the controller serves the certificate written here, as it would one from cert-manager.

The webhooks of pods are narrowed to the framework's own pods (as its kustomize patches do), so
pods of other jobs never wait on it. Used by the e2e tests of Berth's integrations and
``berth dev``.
"""

from __future__ import annotations

import base64
import dataclasses
import socket
import ssl
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from berth.adapters import tls
from berth.devtools.devcluster import errors, processes

if TYPE_CHECKING:
    from berth.devtools.devcluster import kubectl, launcher


@dataclasses.dataclass(frozen=True, slots=True)
class Framework:
    """How one framework's controller is configured and recognised."""

    name: str
    """Its component name in the binary cache (``jobset``)."""
    pod_label: str
    """The label its controller puts on every pod it makes: its pod webhooks select on it."""
    config_api_version: str
    """The apiVersion of its controller's Configuration file (controller-runtime's shape)."""

    def config(self, webhook_port: int, cert_dir: Path, health_port: int) -> dict[str, Any]:
        """The controller's own Configuration file."""
        return {
            "apiVersion": self.config_api_version,
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        }


JOBSET = Framework(
    name="jobset",
    pod_label="jobset.sigs.k8s.io/jobset-name",
    config_api_version="config.jobset.x-k8s.io/v1alpha1",
)
FRAMEWORKS = {f.name: f for f in (JOBSET,)}


def webhook_configurations(
    manifest: str, base_url: str, ca_bundle: str, framework: Framework
) -> list[dict[str, Any]]:
    """The module's webhook configurations, pointed at ``base_url`` and named for the framework."""
    out = []
    for doc in yaml.safe_load_all(manifest):
        if not doc:
            continue
        doc["metadata"] = {"name": f"{framework.name}-{doc['metadata']['name']}"}
        for hook in doc.get("webhooks") or []:
            service = hook["clientConfig"].get("service") or {}
            hook["clientConfig"] = {
                "url": f"{base_url}{service.get('path', '')}",
                "caBundle": ca_bundle,
            }
            if any("pods" in (r.get("resources") or []) for r in hook.get("rules") or []):
                hook["objectSelector"] = {
                    "matchExpressions": [{"key": framework.pod_label, "operator": "Exists"}]
                }
        out.append(doc)
    return out


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - a loopback URL built here
            return bool(response.status == 200)
    except OSError:
        return False


def _serving(port: int, ca: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    try:
        with context.wrap_socket(
            socket.create_connection(("127.0.0.1", port), timeout=2),
            server_hostname="127.0.0.1",
        ):
            return True
    except OSError:
        return False


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _wait_established(client: kubectl.Kubectl, manifest: str, timeout: float = 60.0) -> None:
    """Wait until every CRD of ``manifest`` is served.

    ``kubectl wait`` fails on a CRD so new that it has no conditions yet.
    """
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(manifest) if d]
    deadline = time.monotonic() + timeout
    while not all(_established(client.json("get", "crd", n)) for n in names):
        if time.monotonic() > deadline:
            raise errors.StartupError("CRDs", f"{names} not Established after {timeout:.0f}s", None)
        time.sleep(0.2)


def start(plane: launcher.ControlPlane, name: str) -> processes.ManagedProcess:
    """Install framework ``name`` on ``plane`` and run its controller; wait until it serves.

    Raises ``MissingBinaryError`` when the build script has not built it.
    """
    framework = FRAMEWORKS[name]
    binary = plane.cache.find(name)
    crds = plane.cache.framework_manifest(name, "crds.yaml")
    hooks = plane.cache.framework_manifest(name, "webhooks.yaml")
    client = plane.kubectl()
    client.run("apply", "--server-side", "-f", str(crds))
    _wait_established(client, crds.read_text())

    home = plane.run_dir / name
    cert_dir = home / "certs"
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca = tls.new_certificate_authority(f"{name}-webhook-ca")
    serving = tls.issue_serving_certificate(ca, ["127.0.0.1"], f"{name}-webhook")
    (cert_dir / "tls.crt").write_bytes(serving.cert_pem)
    (cert_dir / "tls.key").write_bytes(serving.key_pem)
    (cert_dir / "tls.key").chmod(0o600)
    (home / "ca.crt").write_bytes(ca.cert_pem)

    webhook_port, health_port = processes.free_port(), processes.free_port()
    config = home / "config.yaml"
    config.write_text(
        yaml.safe_dump(framework.config(webhook_port, cert_dir, health_port), sort_keys=False)
    )
    process = processes.ManagedProcess(
        name,
        [str(binary), f"--config={config}", f"--kubeconfig={plane.kubeconfig}"],
        plane.logs / f"{name}.log",
    )
    process.start()
    plane.adopt(process)
    process.wait_ready(
        lambda: (
            _healthy(f"http://127.0.0.1:{health_port}/readyz")
            and _serving(webhook_port, home / "ca.crt")
        ),
        60.0,
    )
    client.apply(
        webhook_configurations(
            hooks.read_text(),
            f"https://127.0.0.1:{webhook_port}",
            base64.b64encode(ca.cert_pem).decode(),
            framework,
        )
    )
    return process
