"""``/metrics`` over HTTPS, read only by bearers RBAC lets get it, against a real kube-apiserver.

The metrics server runs as the chart runs it (``--metrics-secure``): its token reviews and access
reviews go to the real API server, whose RBAC decides. A ServiceAccount bound to a role like the
chart's ``berth-metrics-reader`` reads the metrics; another one, a made-up token and no token
are refused with 403, 401 and 401; the probes answer anyone.
"""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp
import pytest

from berth.adapters import metrics, tls
from berth.adapters.kube import access, client
from berth.devtools.devcluster import launcher

pytestmark = pytest.mark.integration

READER = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "metrics-reader-test"},
    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
}


def _token(plane: launcher.ControlPlane, account: str) -> str:
    kubectl = plane.kubectl()
    kubectl.run("create", "serviceaccount", account, "-n", "default")
    return kubectl.run("create", "token", account, "-n", "default", "--duration=1h").strip()


async def _scrapes(plane: launcher.ControlPlane, headers: dict[str, str | None]) -> dict[str, Any]:
    kube = await client.Kube.open(str(plane.kubeconfig))
    reviews = access.MetricsAccess(kube)

    async def authorize(header: str | None) -> tuple[int, str] | None:
        refused = await reviews.check(header)
        return None if refused is None else (refused.status, refused.message)

    serving = tls.ServingContext()
    serving.load(tls.issue_serving_certificate(tls.new_certificate_authority(), ["127.0.0.1"]))
    server = await metrics.serve(
        metrics.Metrics(), port=0, ssl_context=serving.context, authorize=authorize
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # as the chart's ServiceMonitor: the token decides
    out: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession() as session:
            for name, header in headers.items():
                sent = {} if header is None else {"Authorization": header}
                url = f"https://127.0.0.1:{server.port}/metrics"
                async with session.get(url, headers=sent, ssl=insecure) as response:
                    out[name] = (response.status, await response.text())
            url = f"https://127.0.0.1:{server.port}/healthz"
            async with session.get(url, ssl=insecure) as response:
                out["healthz"] = (response.status, await response.text())
    finally:
        await server.close()
        await kube.close()
    return out


async def test_only_a_metrics_reader_reads_the_metrics(
    control_plane: launcher.ControlPlane,
) -> None:
    admin = control_plane.kubectl()
    admin.apply([READER])
    reader, other = _token(control_plane, "scraper"), _token(control_plane, "someone")
    admin.run(
        "create",
        "clusterrolebinding",
        "metrics-reader-test",
        "--clusterrole=metrics-reader-test",
        "--serviceaccount=default:scraper",
    )
    got = await _scrapes(
        control_plane,
        {
            "reader": f"Bearer {reader}",
            "other": f"Bearer {other}",
            "made-up": "Bearer not-a-token",
            "none": None,
        },
    )
    status, text = got["reader"]
    assert status == 200
    assert "berth_build_info" in text
    assert got["other"][0] == 403
    assert "berth-metrics-reader" in got["other"][1]
    assert got["made-up"][0] == 401
    assert got["none"][0] == 401
    assert got["healthz"] == (200, "ok\n")
