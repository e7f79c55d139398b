"""The control plane's own PKI: a CA, serving certificates and the service-account signing key.

Everything is generated fresh for each run directory, so no secret outlives the cluster it serves.
The launcher writes it before starting kube-apiserver; tests that serve webhooks over TLS can issue
their own serving certificate from the same CA with `issue_serving_certificate`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

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

_VALIDITY = dt.timedelta(days=365)
# Certificates start a little in the past so a clock that differs by seconds still accepts them.
_BACKDATE = dt.timedelta(hours=1)


@dataclasses.dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its private key, as PEM bytes."""

    cert_pem: bytes
    key_pem: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class PkiFiles:
    """Where `write_pki` put each file."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path


def _new_key() -> ec.EllipticCurvePrivateKey:
    # P-256 keys are generated in microseconds, which keeps a fresh PKI per test session cheap.
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> dt.datetime:
    return dt.datetime.now(tz=dt.UTC)


def new_certificate_authority(common_name: str = "berth-dev-ca") -> KeyPair:
    """Create a self-signed CA."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_serving_certificate(
    ca: KeyPair, hosts: Iterable[str] = LOOPBACK_HOSTS, common_name: str = "berth-dev"
) -> KeyPair:
    """Issue a TLS server (and client) certificate for ``hosts``, IP addresses or DNS names."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise TypeError("the CA key must be an EC key made by new_certificate_authority")
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    key = _new_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _write_secret(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def write_pki(directory: Path) -> PkiFiles:
    """Write a new CA, a loopback serving certificate and a service-account key to ``directory``."""
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
    serving = issue_serving_certificate(ca)
    files.ca_cert.write_bytes(ca.cert_pem)
    _write_secret(files.ca_key, ca.key_pem)
    files.serving_cert.write_bytes(serving.cert_pem)
    _write_secret(files.serving_key, serving.key_pem)
    sa_key = _new_key()
    _write_secret(files.service_account_key, _key_pem(sa_key))
    files.service_account_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return files
