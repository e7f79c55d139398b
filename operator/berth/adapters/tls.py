"""X.509 for Berth's webhook server: a CA, serving certificates, and when to rotate them.

``cryptography`` only, no network: ``new_certificate_authority`` and ``issue_serving_certificate``
make PEM key pairs (P-256); ``not_after`` and ``due_for_rotation`` read a certificate's validity;
``ServingContext`` is a server-side TLS context whose chain can be replaced while the server runs
(new handshakes use the new chain). Called by the operator's webhook server and by the leader's
certificate keeper (``adapters.kube.webhook_certs``); the local control plane's PKI
(``devtools.devcluster.pki``) builds on the same two issuers.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
import ssl
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

if TYPE_CHECKING:
    from collections.abc import Iterable

_VALIDITY = dt.timedelta(days=365)
# Certificates start a little in the past so a clock that differs by seconds still accepts them.
_BACKDATE = dt.timedelta(hours=1)


@dataclasses.dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its private key, as PEM bytes."""

    cert_pem: bytes
    key_pem: bytes


def new_key() -> ec.EllipticCurvePrivateKey:
    """A new P-256 private key."""
    # P-256 keys are generated in microseconds, which keeps a fresh PKI per test session cheap.
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The key as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> dt.datetime:
    return dt.datetime.now(tz=dt.UTC)


def new_certificate_authority(common_name: str = "berth-ca") -> KeyPair:
    """Create a self-signed CA."""
    key = new_key()
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
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))


def issue_serving_certificate(
    ca: KeyPair, hosts: Iterable[str], common_name: str = "berth"
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
    key = new_key()
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
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))


ROTATE_BEFORE = dt.timedelta(days=30)
"""A certificate is replaced this long before it expires (Kueue's cert-controller: 90 days of
a 10-year CA; Berth's certificates last a year)."""


def not_after(cert_pem: bytes) -> dt.datetime:
    """When the (first) certificate in ``cert_pem`` expires."""
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def due_for_rotation(
    pair: KeyPair, ca_pem: bytes, hosts: Iterable[str], now: dt.datetime
) -> str | None:
    """Why ``pair`` (of ``ca_pem``) must be replaced to serve ``hosts`` at ``now``, or None."""
    try:
        cert = x509.load_pem_x509_certificate(pair.cert_pem)
        ca = x509.load_pem_x509_certificate(ca_pem)
        serialization.load_pem_private_key(pair.key_pem, password=None)
    except ValueError as e:
        return f"unreadable: {e}"
    if cert.issuer != ca.subject:
        return "not signed by the CA beside it"
    for expires in (cert.not_valid_after_utc, ca.not_valid_after_utc):
        if expires - now < ROTATE_BEFORE:
            return f"expires at {expires.isoformat()}"
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "names no host"
    present = {str(n) for n in names.get_values_for_type(x509.DNSName)} | {
        str(a) for a in names.get_values_for_type(x509.IPAddress)
    }
    missing = sorted(set(hosts) - present)
    return f"does not name {', '.join(missing)}" if missing else None


class ServingContext:
    """A server-side TLS context; ``load`` replaces its chain for every later handshake."""

    def __init__(self) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.loaded: KeyPair | None = None
        """The pair served now, or None before the first ``load``."""

    def load(self, pair: KeyPair) -> bool:
        """Serve ``pair`` from now on; False when it is the one already served."""
        if pair == self.loaded:
            return False
        # ssl can only read a chain from files: write them where only this process reads,
        # and remove them at once.
        with tempfile.TemporaryDirectory(prefix="berth-tls-") as directory:
            cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
            key.touch(mode=0o600)
            key.write_bytes(pair.key_pem)
            cert.write_bytes(pair.cert_pem)
            self.context.load_cert_chain(cert, key)
        self.loaded = pair
        return True
