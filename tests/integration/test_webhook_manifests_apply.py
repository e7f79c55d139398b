"""The generated ``webhooks/`` on a real API server: taken as written, and their caBundle kept.

What an installation without Helm does: apply ``webhooks/``; the operator's leader writes its CA
into both configurations' ``caBundle`` (``webhook_certs.patch_ca_bundle``, which
``certificates.keep_certificates`` calls); the files are applied again (an upgrade), by client-
or server-side apply, and the bundle stays. The configurations are renamed for the test, so the
local-mode operator of other tests (which registers ``berth``) is left alone, and removed at the
end: they point at a Service nothing serves here, and fail closed.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml

from berth.adapters import tls
from berth.adapters.kube import client, webhook_certs
from berth.devtools.devcluster import launcher
from operator_env import ROOT

pytestmark = pytest.mark.integration
NAME = "berth-manifests-test"
PLURALS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfiguration",
    "ValidatingWebhookConfiguration": "validatingwebhookconfiguration",
}


def _generated() -> list[dict[str, Any]]:
    docs = [
        yaml.safe_load(p.read_text())
        for p in sorted((ROOT / "webhooks").glob("*webhookconfiguration.yaml"))
    ]
    for doc in docs:
        doc["metadata"]["name"] = NAME
    return docs


def _live(plane: launcher.ControlPlane, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(plane.kubectl().run("get", PLURALS[kind], NAME, "-o", "json"))
    return out


def _as_written(stored: Any, written: Any) -> Any:
    """``stored`` with only the fields ``written`` has, at every level."""
    if isinstance(written, dict) and isinstance(stored, dict):
        return {k: _as_written(stored[k], v) for k, v in written.items() if k in stored}
    if isinstance(written, list) and isinstance(stored, list) and len(written) == len(stored):
        return [_as_written(s, w) for s, w in zip(stored, written, strict=True)]
    return stored


async def _write_ca_bundle(plane: launcher.ControlPlane, bundle: bytes) -> int:
    kube = await client.Kube.open(str(plane.kubeconfig))
    try:
        return await webhook_certs.patch_ca_bundle(kube, NAME, bundle)
    finally:
        await kube.close()


@pytest.mark.parametrize(
    "apply", [("apply",), ("apply", "--server-side")], ids=["client", "server"]
)
async def test_the_generated_webhooks_apply_and_keep_the_ca_bundle_the_leader_writes(
    control_plane: launcher.ControlPlane, apply: tuple[str, ...]
) -> None:
    kubectl = control_plane.kubectl()
    docs = _generated()
    text = yaml.safe_dump_all(docs)
    try:
        kubectl.run(*apply, "-f", "-", stdin=text)
        ca = tls.new_certificate_authority("berth-manifests-test-ca").cert_pem
        assert await _write_ca_bundle(control_plane, ca) == len(docs)
        kubectl.run(*apply, "-f", "-", stdin=text)  # an upgrade applies the same files again
        for doc in docs:
            live = _live(control_plane, doc["kind"])
            assert [h["name"] for h in live["webhooks"]] == [h["name"] for h in doc["webhooks"]]
            for written, stored in zip(doc["webhooks"], live["webhooks"], strict=True):
                bundle = stored["clientConfig"]["caBundle"]
                assert base64.b64decode(bundle) == ca, "the bundle stays"
                # Taken as written; the API server only adds its defaults (matchPolicy, scope).
                assert _as_written(stored, written) == written
    finally:
        for plural in PLURALS.values():
            kubectl.run("delete", plural, NAME, "--ignore-not-found")
