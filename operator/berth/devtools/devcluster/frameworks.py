"""Job frameworks' real controllers on a local control plane: their CRDs, webhooks and process.

``start(plane, name)`` installs a framework the way its own release manifests would, minus what
needs a kubelet: the CRDs copied beside its binary from its Go module (``scripts/
build-control-plane``), its webhook configurations from the module's manifest with each
``service`` reference turned into a loopback URL and a CA of this run, and the controller as a
child process of the control plane (stopped with it). The controller serves a certificate
written here, as it would one from cert-manager:

- **JobSet** turns its internal certificate management off in its Configuration file and reads
  the certificate from a folder of this run.
- **The Kubeflow training-operator** always runs cert-controller's rotator, which keeps the
  certificate in a Secret for the DNS name of its Service and reads the files from a fixed
  folder (``/tmp/k8s-webhook-server/serving-certs``) a kubelet would mount. The Secret is made
  here with a certificate valid for that name and for 127.0.0.1 (RSA, as the rotator parses it),
  so the rotator keeps it, and the same files are put in that folder.
- **The Kubeflow Trainer** turns its certificate management off in its Configuration file and
  serves controller-runtime's default folder, which lies under ``TMPDIR``: that is set to a
  folder of this run. It runs its TrainJobs as JobSets, so the JobSet controller is started
  first (``Framework.needs``).
- **KubeRay** runs without its webhook (off unless ``ENABLE_WEBHOOKS`` is set, as in KubeRay's
  default install), so nothing needs a certificate.

The webhooks of pods are narrowed to the framework's own pods (as JobSet's kustomize patches
do), so pods of other jobs never wait on it. Used by the e2e tests of Berth's integrations and
by ``berth dev up --framework``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import ipaddress
import os
import socket
import ssl
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from berth.adapters import tls
from berth.devtools.devcluster import errors, processes

if TYPE_CHECKING:
    from berth.devtools.devcluster import kubectl, launcher


@dataclasses.dataclass(frozen=True, slots=True)
class Launch:
    """How to run a controller once its certificate is in place."""

    args: list[str]
    env: dict[str, str] | None
    ca_pem: bytes
    """The CA its webhook configurations trust."""


@dataclasses.dataclass(frozen=True, slots=True)
class Framework:
    """How one framework's controller is configured and recognised."""

    name: str
    """Its component name in the binary cache (``jobset``)."""
    pod_label: str
    """The label its controller puts on every pod it makes: its pod webhooks select on it."""
    webhook_names: dict[str, str]
    """The name its release gives each webhook configuration of the module's manifest."""
    prepare: Callable[[launcher.ControlPlane, Path, int, int], Launch]
    """Puts its certificate in place (given the plane, a folder of its own, its webhook and
    health ports) and says how to run it."""
    serves_webhooks: bool = True
    """Whether it runs a webhook server (its manifest's configurations are then installed)."""
    needs: tuple[str, ...] = ()
    """Frameworks it runs its jobs on, started before it (the Trainer's TrainJobs are JobSets)."""


TRAINING_OPERATOR_NAMESPACE = "kubeflow"
_TRAINING_OPERATOR_CERTS = Path("/tmp/k8s-webhook-server/serving-certs")  # noqa: S108 - fixed by the training-operator (pkg/cert)


def _prepare_jobset(
    plane: launcher.ControlPlane,  # noqa: ARG001 - JobSet needs nothing of the plane
    home: Path,
    webhook_port: int,
    health_port: int,
) -> Launch:
    cert_dir = home / "certs"
    ca_pem = _own_certificate(cert_dir, "jobset")
    config = _config_file(
        home,
        {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        },
    )
    return Launch([f"--config={config}"], None, ca_pem)


def _own_certificate(cert_dir: Path, name: str) -> bytes:
    """A CA of this run and its serving certificate for 127.0.0.1 in ``cert_dir``; the CA."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca = tls.new_certificate_authority(f"{name}-webhook-ca")
    serving = tls.issue_serving_certificate(ca, ["127.0.0.1"], f"{name}-webhook")
    _write_pair(cert_dir, serving.cert_pem, serving.key_pem)
    return ca.cert_pem


def _config_file(home: Path, config: dict[str, Any]) -> Path:
    """A controller's Configuration file in its folder."""
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _rsa_pair(
    subject: str, hosts: list[str], issuer: tuple[x509.Certificate, rsa.RSAPrivateKey] | None
) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = dt.datetime.now(tz=dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name if issuer is None else issuer[0].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=365))
    )
    if issuer is None:
        # cert-controller checks its CA as a certificate for the CA's own name (validCACert).
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        ).add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
        return builder.sign(key, hashes.SHA256()), key
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    builder = builder.add_extension(
        x509.SubjectAlternativeName(sans), critical=False
    ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    return builder.sign(issuer[1], hashes.SHA256()), key


def _pem(cert: x509.Certificate, key: rsa.RSAPrivateKey) -> tuple[bytes, bytes]:
    return cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,  # PKCS#1, which cert-controller parses
        serialization.NoEncryption(),
    )


def _write_pair(folder: Path, cert_pem: bytes, key_pem: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tls.crt").write_bytes(cert_pem)
    (folder / "tls.key").write_bytes(key_pem)
    (folder / "tls.key").chmod(0o600)


def _prepare_training_operator(
    plane: launcher.ControlPlane,
    home: Path,  # noqa: ARG001 - its certificate folder is fixed by the training-operator
    webhook_port: int,
    health_port: int,
) -> Launch:
    namespace = TRAINING_OPERATOR_NAMESPACE
    service = f"training-operator.{namespace}.svc"
    ca_cert, ca_key = _rsa_pair("training-operator-ca", [], None)
    cert, key = _rsa_pair(service, [service, "127.0.0.1"], (ca_cert, ca_key))
    ca_pem, ca_key_pem = _pem(ca_cert, ca_key)
    cert_pem, key_pem = _pem(cert, key)
    _write_pair(_TRAINING_OPERATOR_CERTS, cert_pem, key_pem)

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    plane.kubectl().apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "training-operator-webhook-cert", "namespace": namespace},
                "data": {
                    "ca.crt": b64(ca_pem),
                    "ca.key": b64(ca_key_pem),
                    "tls.crt": b64(cert_pem),
                    "tls.key": b64(key_pem),
                },
            },
        ]
    )
    args = [
        f"--webhook-server-port={webhook_port}",
        "--metrics-bind-address=0",
        f"--health-probe-bind-address=127.0.0.1:{health_port}",
        "--leader-elect=false",
    ]
    return Launch(args, {**os.environ, "MY_POD_NAMESPACE": namespace}, ca_pem)


def _prepare_trainer(
    plane: launcher.ControlPlane,  # noqa: ARG001 - the Trainer needs nothing of the plane
    home: Path,
    webhook_port: int,
    health_port: int,
) -> Launch:
    # With its certificate management off, the Trainer serves controller-runtime's default
    # folder under the temporary directory: TMPDIR points it at this run's own.
    ca_pem = _own_certificate(home / "k8s-webhook-server" / "serving-certs", "trainer")
    config = _config_file(
        home,
        {
            "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "certManagement": {"enable": False},
            "webhook": {"port": webhook_port, "host": "127.0.0.1"},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        },
    )
    return Launch([f"--config={config}"], {**os.environ, "TMPDIR": str(home)}, ca_pem)


def _prepare_kuberay(
    plane: launcher.ControlPlane,  # noqa: ARG001 - KubeRay needs nothing of the plane
    home: Path,  # noqa: ARG001 - nor a folder: it serves no webhook
    webhook_port: int,  # noqa: ARG001 - see above
    health_port: int,
) -> Launch:
    args = [
        "--metrics-addr=0",
        f"--health-probe-bind-address=127.0.0.1:{health_port}",
        "--enable-leader-election=false",
    ]
    return Launch(args, None, b"")


JOBSET = Framework(
    name="jobset",
    pod_label="jobset.sigs.k8s.io/jobset-name",
    webhook_names={
        "mutating-webhook-configuration": "jobset-mutating-webhook-configuration",
        "validating-webhook-configuration": "jobset-validating-webhook-configuration",
    },
    prepare=_prepare_jobset,
)
TRAINING_OPERATOR = Framework(
    name="training-operator",
    pod_label="training.kubeflow.org/job-name",
    # The name the training-operator's cert rotator injects its CA into (main.go).
    webhook_names={"validating-webhook-configuration": "validator.training-operator.kubeflow.org"},
    prepare=_prepare_training_operator,
)
KUBERAY = Framework(
    name="kuberay",
    pod_label="ray.io/cluster",
    webhook_names={},
    prepare=_prepare_kuberay,
    serves_webhooks=False,
)
TRAINER = Framework(
    name="trainer",
    pod_label="jobset.sigs.k8s.io/jobset-name",  # its pods are its JobSet's
    webhook_names={
        "mutating-webhook-configuration": "defaulter.trainer.kubeflow.org",
        "validating-webhook-configuration": "validator.trainer.kubeflow.org",
    },
    prepare=_prepare_trainer,
    needs=("jobset",),
)
FRAMEWORKS = {f.name: f for f in (JOBSET, TRAINING_OPERATOR, KUBERAY, TRAINER)}


def webhook_configurations(
    manifest: str, base_url: str, ca_bundle: str, framework: Framework
) -> list[dict[str, Any]]:
    """The module's webhook configurations, pointed at ``base_url`` and named for the framework."""
    out = []
    for doc in yaml.safe_load_all(manifest):
        if not doc:
            continue
        name = doc["metadata"]["name"]
        doc["metadata"] = {"name": framework.webhook_names.get(name, f"{framework.name}-{name}")}
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


def _serving(port: int, ca: bytes) -> bool:
    context = ssl.create_default_context(cadata=ca.decode())
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
            msg = f"{names} not Established after {timeout:.0f}s"
            raise errors.StartupError("CRDs", msg, None)
        time.sleep(0.2)


def start(
    plane: launcher.ControlPlane, name: str, started: set[str] | None = None
) -> processes.ManagedProcess | None:
    """Install framework ``name`` on ``plane`` and run its controller; wait until it serves.

    ``started``: the frameworks already running on ``plane`` (the ones each needs are started
    first, once); ``name`` is added to it. Returns None when it was running already. A detached
    plane (``berth dev up``) keeps the controller running after this process ends. Raises
    ``MissingBinaryError`` when the build script has not built it.
    """
    started = set() if started is None else started
    if name in started:
        return None
    framework = FRAMEWORKS[name]
    for needed in framework.needs:
        start(plane, needed, started)
    started.add(name)
    binary = plane.cache.find(name)
    crds = plane.cache.framework_manifest(name, "crds.yaml")
    client = plane.kubectl()
    client.run("apply", "--server-side", "-f", str(crds))
    _wait_established(client, crds.read_text())

    home = plane.run_dir / name
    home.mkdir(parents=True, exist_ok=True)
    webhook_port, health_port = processes.free_port(), processes.free_port()
    launch = framework.prepare(plane, home, webhook_port, health_port)
    if framework.serves_webhooks:
        # Registered before the controller starts: a cert rotator is ready only once its CA is
        # in them, and nothing calls them before the controller serves (the tests wait for that).
        hooks = plane.cache.framework_manifest(name, "webhooks.yaml")
        client.apply(
            webhook_configurations(
                hooks.read_text(),
                f"https://127.0.0.1:{webhook_port}",
                base64.b64encode(launch.ca_pem).decode(),
                framework,
            )
        )
    process = processes.ManagedProcess(
        name,
        [str(binary), *launch.args, f"--kubeconfig={plane.kubeconfig}"],
        plane.logs / f"{name}.log",
        env=launch.env,
        detach=plane.config.detach,
    )
    process.start()
    plane.adopt(process)
    process.wait_ready(
        lambda: (
            _healthy(f"http://127.0.0.1:{health_port}/readyz")
            and (not framework.serves_webhooks or _serving(webhook_port, launch.ca_pem))
        ),
        90.0,
    )
    return process
