"""The webhook certificate kept in a Secret, and the caBundle patch.

When the certificate is renewed, what the CA bundle holds during a rotation, and that the patch
touches nothing but caBundle.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
from collections.abc import Callable

import pytest
from cryptography import x509

from berth.adapters import tls
from berth.adapters.kube import webhook_certs

HOSTS = webhook_certs.service_hosts("berth-webhook", "berth-system")
NOW = dt.datetime.now(dt.UTC)
YEAR = dt.timedelta(days=365)


def kept(hosts: list[str] = HOSTS) -> dict[str, bytes]:
    """Secret data as the keeper writes it, for ``hosts``."""
    data, _why = webhook_certs.renewed({}, hosts, NOW) or ({}, "")
    return data


def without(key: str) -> Callable[[], dict[str, bytes]]:
    return lambda: {k: v for k, v in kept().items() if k != key}


def foreign_ca() -> dict[str, bytes]:
    data = kept()
    data[webhook_certs.CA] = tls.new_certificate_authority("someone-else").cert_pem
    return data


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    name: str
    current: Callable[[], dict[str, bytes]]
    now: dt.datetime
    why: str | None
    """A fragment of the reason for renewing, or None when the Secret is kept as it is."""


ROWS = (
    Row("no secret yet", dict, NOW, "missing"),
    Row("a fresh one is kept", kept, NOW, None),
    Row("kept until 30 days before expiry", kept, NOW + YEAR - dt.timedelta(days=31), None),
    Row("renewed 30 days before expiry", kept, NOW + YEAR - dt.timedelta(days=29), "expires"),
    Row("renewed for other hosts", lambda: kept(["elsewhere.svc"]), NOW, "does not name"),
    Row("no serving key", without(webhook_certs.KEY), NOW, "missing"),
    Row("no CA key (made by someone else)", without(webhook_certs.CA_KEY), NOW, "missing"),
    Row("serving certificate of another CA", foreign_ca, NOW, "not signed by the CA"),
)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_when_the_certificate_is_renewed(row: Row) -> None:
    change = webhook_certs.renewed(row.current(), HOSTS, row.now)
    if row.why is None:
        assert change is None
        return
    assert change is not None
    data, why = change
    assert row.why in why
    bundle = webhook_certs.bundle_of(data)
    assert bundle is not None
    assert tls.due_for_rotation(bundle.serving, bundle.ca_bundle, HOSTS, NOW) is None


def test_a_rotation_keeps_trusting_the_old_ca_while_it_is_valid() -> None:
    old = kept()
    change = webhook_certs.renewed(old, HOSTS, NOW + YEAR - dt.timedelta(days=10))
    assert change is not None
    data, _why = change
    cas = x509.load_pem_x509_certificates(data[webhook_certs.CA])
    assert len(cas) == 2
    assert cas[1] == x509.load_pem_x509_certificate(old[webhook_certs.CA])
    # The new serving certificate is signed by the first CA of the bundle.
    serving = x509.load_pem_x509_certificate(data[webhook_certs.CERT])
    assert serving.issuer == cas[0].subject


def test_an_expired_ca_leaves_the_bundle() -> None:
    old = kept()
    change = webhook_certs.renewed(old, HOSTS, NOW + 2 * YEAR)
    assert change is not None
    assert len(x509.load_pem_x509_certificates(change[0][webhook_certs.CA])) == 1


def _configuration(bundles: list[str | None]) -> dict[str, object]:
    hooks = []
    for i, bundle in enumerate(bundles):
        config: dict[str, object] = {
            "service": {"name": "berth-webhook", "namespace": "berth-system", "path": f"/p{i}"}
        }
        if bundle is not None:
            config["caBundle"] = bundle
        hooks.append({"name": f"h{i}.berth.dev", "clientConfig": config})
    return {"webhooks": hooks}


def test_the_ca_bundle_patch_sets_only_ca_bundles() -> None:
    pem = b"-----BEGIN CERTIFICATE-----\n...\n"
    want = base64.b64encode(pem).decode()
    ops = webhook_certs.ca_bundle_patch(_configuration([None, "old", want]), pem)
    assert ops == [
        {"op": "test", "path": "/webhooks/0/name", "value": "h0.berth.dev"},
        {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": want},
        {"op": "test", "path": "/webhooks/1/name", "value": "h1.berth.dev"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": want},
    ]
    assert webhook_certs.ca_bundle_patch(_configuration([want, want]), pem) == []


def test_the_serving_context_reloads_only_a_new_pair() -> None:
    data = kept()
    bundle = webhook_certs.bundle_of(data)
    assert bundle is not None
    context = tls.ServingContext()
    assert context.load(bundle.serving) is True
    assert context.load(bundle.serving) is False
    other = webhook_certs.bundle_of(kept())
    assert other is not None
    assert context.load(other.serving) is True
