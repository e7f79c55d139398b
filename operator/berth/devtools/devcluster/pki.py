"""The control plane's own PKI: a CA, serving certificates and the service-account signing key.

Everything is generated fresh for each run directory, so no secret outlives the cluster it serves.
The launcher writes it before starting kube-apiserver; tests that serve webhooks over TLS can issue
their own serving certificate from the same CA with `issue_serving_certificate`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization

from berth.adapters import tls

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

LOOPBACK_HOSTS = (
    "127.0.0.1",
    "localhost",
    # The in-cluster names of the API server; the first address of the service range is its
    # ClusterIP, which kube-apiserver checks its own certificate for.
    "10.0.0.1",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
"""The names a loopback API server is reached by."""


KUBELET_CLIENT = "kube-apiserver-kubelet-client"
"""The common name of the client certificate the API server presents to kubelets."""


@dataclasses.dataclass(frozen=True, slots=True)
class PkiFiles:
    """Where `write_pki` put each file."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path


KeyPair = tls.KeyPair


def new_certificate_authority(common_name: str = "berth-dev-ca") -> KeyPair:
    """Create a self-signed CA for the local control plane."""
    return tls.new_certificate_authority(common_name)


def issue_serving_certificate(
    ca: KeyPair, hosts: Iterable[str] = LOOPBACK_HOSTS, common_name: str = "berth-dev"
) -> KeyPair:
    """Issue a TLS server (and client) certificate for ``hosts``, by default the loopback ones."""
    return tls.issue_serving_certificate(ca, hosts, common_name)


def _write_secret(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def load_certificate_authority(files: PkiFiles) -> KeyPair:
    """Return the CA `write_pki` wrote, to issue more certificates from it."""
    return KeyPair(files.ca_cert.read_bytes(), files.ca_key.read_bytes())


def write_pki(directory: Path, extra_hosts: Iterable[str] = ()) -> PkiFiles:
    """Write a new CA, a serving certificate and a service-account key to ``directory``.

    The serving certificate names the loopback hosts and ``extra_hosts`` (a real node's API
    server listens on the host's address). Beside them a client certificate for the API server
    to present to kubelets, ``kubelet-client.crt``/``.key``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files = PkiFiles(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "serving.crt",
        serving_key=directory / "serving.key",
        service_account_key=directory / "sa.key",
        service_account_pub=directory / "sa.pub",
    )
    ca = new_certificate_authority()
    serving = issue_serving_certificate(ca, (*LOOPBACK_HOSTS, *extra_hosts))
    kubelet_client = issue_serving_certificate(ca, (KUBELET_CLIENT,), KUBELET_CLIENT)
    (directory / "kubelet-client.crt").write_bytes(kubelet_client.cert_pem)
    _write_secret(directory / "kubelet-client.key", kubelet_client.key_pem)
    files.ca_cert.write_bytes(ca.cert_pem)
    _write_secret(files.ca_key, ca.key_pem)
    files.serving_cert.write_bytes(serving.cert_pem)
    _write_secret(files.serving_key, serving.key_pem)
    sa_key = tls.new_key()
    _write_secret(files.service_account_key, tls.key_pem(sa_key))
    files.service_account_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return files
