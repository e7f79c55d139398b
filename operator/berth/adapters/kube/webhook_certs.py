"""The webhook certificate every replica serves, kept in one Secret (the operator's cluster mode).

The Secret holds ``tls.crt``, ``tls.key`` and ``ca.crt`` — the layout cert-manager writes, so
either may keep it — and, when Berth keeps it, ``ca.key`` too (as Kueue's cert-controller does).

- ``read``: every replica reads the Secret and serves what it holds (it polls; a rotation
  reaches each replica within one poll).
- ``keep``: the leader, when Berth manages certificates, creates the Secret if it is missing and
  replaces CA and serving certificate when ``tls.due_for_rotation`` says so. The CA bundle it
  returns holds the new CA and, while it is still valid, the old one, so the API server trusts
  replicas that still serve the old certificate during the rollover.
- ``patch_ca_bundle``: the leader writes that bundle into ``clientConfig.caBundle`` of its own
  named webhook configurations — with a JSON patch that touches nothing else (never the
  ``service`` or ``url`` the chart set).

Called by ``berth.entry.operator_main``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import logging
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from berth.adapters import tls
from berth.adapters.kube import client, errors

log = logging.getLogger(__name__)

CERT, KEY, CA, CA_KEY = "tls.crt", "tls.key", "ca.crt", "ca.key"
JSON_PATCH = "application/json-patch+json"
CONFIGURATION_PLURALS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")


@dataclasses.dataclass(frozen=True, slots=True)
class Bundle:
    """What a replica serves, and what the API server must trust to call it."""

    serving: tls.KeyPair
    ca_bundle: bytes
    """PEM, one CA or several (during a rotation)."""


def service_hosts(service: str, namespace: str, cluster_domain: str = "cluster.local") -> list[str]:
    """The names the API server calls a Service by, for the serving certificate."""
    return [
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]


def _path(namespace: str, name: str | None = None) -> str:
    out = f"/api/v1/namespaces/{namespace}/secrets"
    return out if name is None else f"{out}/{name}"


def _decode(secret: dict[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def _encode(data: dict[str, bytes]) -> dict[str, str]:
    return {k: base64.b64encode(v).decode() for k, v in sorted(data.items())}


def bundle_of(data: dict[str, bytes]) -> Bundle | None:
    """The bundle a Secret's data holds, or None while it is incomplete."""
    if not all(data.get(k) for k in (CERT, KEY, CA)):
        return None
    return Bundle(tls.KeyPair(data[CERT], data[KEY]), data[CA])


async def read(kube: client.KubeRequests, namespace: str, name: str) -> Bundle | None:
    """The bundle in Secret ``namespace/name``, or None while it does not exist or is incomplete."""
    try:
        secret = await kube.request("GET", _path(namespace, name))
    except errors.NotFoundError:
        return None
    return bundle_of(_decode(secret))


def _certificates(pem: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return []


def _still_valid(pem: bytes, now: dt.datetime) -> list[bytes]:
    return [
        c.public_bytes(serialization.Encoding.PEM)
        for c in _certificates(pem)
        if c.not_valid_after_utc > now
    ]


def renewed(
    current: dict[str, bytes], hosts: list[str], now: dt.datetime
) -> tuple[dict[str, bytes], str] | None:
    """New Secret data and why, when ``current`` cannot serve ``hosts`` until well after ``now``."""
    kept = bundle_of(current)
    if kept is not None and CA_KEY in current:
        # The bundle's first CA is the one that signed the serving certificate (see below).
        cas = _certificates(kept.ca_bundle)
        ca_pem = cas[0].public_bytes(serialization.Encoding.PEM) if cas else b""
        why = tls.due_for_rotation(kept.serving, ca_pem, hosts, now)
        if why is None:
            return None
    else:
        why = "missing or incomplete"
    ca = tls.new_certificate_authority("berth-webhook-ca")
    serving = tls.issue_serving_certificate(ca, hosts, "berth-webhook")
    # The new CA first, then the old ones still valid: replicas serving the old certificate
    # until their next read stay trusted.
    previous = _still_valid(current.get(CA, b""), now)
    bundle = b"".join([ca.cert_pem, *[p for p in previous if p != ca.cert_pem]])
    data = {CERT: serving.cert_pem, KEY: serving.key_pem, CA: bundle, CA_KEY: ca.key_pem}
    return data, why


async def keep(
    kube: client.KubeRequests, namespace: str, name: str, hosts: list[str], now: dt.datetime
) -> Bundle:
    """Make Secret ``namespace/name`` hold a certificate for ``hosts``; return what it holds."""
    try:
        secret: dict[str, Any] | None = await kube.request("GET", _path(namespace, name))
    except errors.NotFoundError:
        secret = None
    current = _decode(secret) if secret is not None else {}
    change = renewed(current, hosts, now)
    if change is None:
        kept = bundle_of(current)
        assert kept is not None  # noqa: S101 - renewed() returns None only for a complete Secret
        return kept
    data, why = change
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "berth"},
        },
        "data": _encode(data),
    }
    if secret is None:
        stored = await kube.request("POST", _path(namespace), body=body)
    else:
        body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
        stored = await kube.request("PUT", _path(namespace, name), body=body)
    log.info("webhook certificate in secret %s/%s renewed (%s)", namespace, name, why)
    kept = bundle_of(_decode(stored))
    if kept is None:
        msg = f"secret {namespace}/{name} was stored without its certificate"
        raise errors.PermanentError(msg)
    return kept


def ca_bundle_patch(configuration: dict[str, Any], ca_bundle: bytes) -> list[dict[str, Any]]:
    """JSON patch operations that set every webhook's ``caBundle`` and change nothing else."""
    want = base64.b64encode(ca_bundle).decode()
    ops: list[dict[str, Any]] = []
    for i, hook in enumerate(configuration.get("webhooks") or []):
        if (hook.get("clientConfig") or {}).get("caBundle") == want:
            continue
        # The test pins the index to the webhook it was read for, so a concurrent change to the
        # list fails the patch instead of writing a bundle into another webhook.
        ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": hook.get("name")})
        ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": want})
    return ops


async def patch_ca_bundle(kube: client.KubeRequests, name: str, ca_bundle: bytes) -> int:
    """Write ``ca_bundle`` into the webhook configurations called ``name``; return how many changed.

    A configuration that does not exist is left alone (the chart makes them; the operator never
    creates them in cluster mode).
    """
    changed = 0
    for plural in CONFIGURATION_PLURALS:
        path = f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}"
        try:
            current = await kube.request("GET", path)
        except errors.NotFoundError:
            log.warning("no %s %s: its caBundle cannot be kept", plural, name)
            continue
        ops = ca_bundle_patch(current, ca_bundle)
        if ops:
            await kube.request("PATCH", path, body=ops, content_type=JSON_PATCH)
            changed += 1
    return changed
