"""Every way a kubeconfig proves who we are, against a real kube-apiserver.

Each case writes a kubeconfig, opens ``client.Kube`` from it and asks the API server who it
is (a SelfSubjectReview, which any authenticated user may create). The identities are real:
ServiceAccount tokens from ``kubectl create token``, a client certificate signed by the
control plane's client CA, and exec plugins that are real programs printing ExecCredentials.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.adapters import tls
from berth.adapters.kube import client, errors
from berth.devtools.devcluster import launcher

pytestmark = pytest.mark.integration

REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def _kubeconfig(
    plane: launcher.ControlPlane, path: Path, user: dict[str, Any], **cluster: Any
) -> str:
    cluster = cluster or {"certificate-authority": str(plane.ca_file)}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": plane.server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _token(plane: launcher.ControlPlane, account: str) -> str:
    kubectl = plane.kubectl()
    kubectl.run("create", "serviceaccount", account, "-n", "default")
    return kubectl.run("create", "token", account, "-n", "default", "--duration=1h").strip()


async def _whoami(kubeconfig: str) -> str:
    kube = await client.Kube.open(kubeconfig)
    try:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        review = await kube.request("POST", REVIEW, body=body)
        return str(review["status"]["userInfo"]["username"])
    finally:
        await kube.close()


def _plugin(tmp_path: Path, answers: list[dict[str, Any]]) -> tuple[dict[str, Any], Path]:
    """A real exec plugin: its n-th run prints ``answers[n]`` (the last one after that)."""
    runs = tmp_path / "runs"
    script = tmp_path / "plugin.py"
    script.write_text(
        "import json, os, pathlib, sys\n"
        f"runs = pathlib.Path({str(runs)!r})\n"
        "n = len(runs.read_text().splitlines()) if runs.exists() else 0\n"
        "with runs.open('a') as f:\n"
        "    f.write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        f"answers = json.loads({json.dumps(json.dumps(answers))})\n"
        "print(json.dumps(answers[min(n, len(answers) - 1)]))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }
    return user, runs


def _credential(token: str, expires: dt.datetime | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"token": token}
    if expires is not None:
        status["expirationTimestamp"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": status,
    }


def test_a_token_and_a_ca_given_as_data(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-data")
    ca = base64.b64encode(control_plane.ca_file.read_bytes()).decode()
    path = _kubeconfig(
        control_plane, tmp_path / "k", {"token": token}, **{"certificate-authority-data": ca}
    )
    assert asyncio.run(_whoami(path)) == "system:serviceaccount:default:cred-data"


def test_a_client_certificate_as_files_and_as_data(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    pki = control_plane.run_dir / "pki"
    ca = tls.KeyPair(cert_pem=(pki / "ca.crt").read_bytes(), key_pem=(pki / "ca.key").read_bytes())
    pair = tls.issue_serving_certificate(ca, ["localhost"], "berth-cert-user")
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    # Relative paths are the kubeconfig's, as kubectl reads them.
    files = {"client-certificate": "tls.crt", "client-key": "tls.key"}
    data = {
        "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
        "client-key-data": base64.b64encode(pair.key_pem).decode(),
    }
    for name, user in (("files", files), ("data", data)):
        path = _kubeconfig(control_plane, tmp_path / f"k-{name}", user)
        assert asyncio.run(_whoami(path)) == "berth-cert-user", name


def test_a_token_file_is_read_again_after_a_401(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("not-a-token\n")
    path = _kubeconfig(control_plane, tmp_path / "k", {"tokenFile": "token"})

    async def run() -> tuple[str, str]:
        kube = await client.Kube.open(path)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            with pytest.raises(errors.PermanentError) as refused:
                await kube.request("POST", REVIEW, body=body)
            # The kubelet rotates the file; the next request's 401 makes the session read it.
            token_file.write_text(_token(control_plane, "cred-file") + "\n")
            review = await kube.request("POST", REVIEW, body=body)
            return str(refused.value), str(review["status"]["userInfo"]["username"])
        finally:
            await kube.close()

    refused, who = asyncio.run(run())
    assert refused.startswith(f"POST {REVIEW}: 401")
    assert who == "system:serviceaccount:default:cred-file"


def test_an_exec_plugin_is_run_once_then_again_when_its_credential_expires(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-exec")
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=33)  # inside the renewal margin in 3 s
    user, runs = _plugin(tmp_path, [_credential(token, soon)])
    path = _kubeconfig(control_plane, tmp_path / "k", user)

    async def run() -> list[str]:
        kube = await client.Kube.open(path)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            who = [await kube.request("POST", REVIEW, body=body) for _ in range(3)]
            assert len(runs.read_text().splitlines()) == 1  # three requests, one run
            await asyncio.sleep(4)
            who.append(await kube.request("POST", REVIEW, body=body))
            return [str(w["status"]["userInfo"]["username"]) for w in who]
        finally:
            await kube.close()

    assert asyncio.run(run()) == ["system:serviceaccount:default:cred-exec"] * 4
    lines = runs.read_text().splitlines()
    assert len(lines) == 2
    info = json.loads(lines[0])
    assert info == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


def test_an_exec_credential_the_server_refuses_is_renewed_once(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-renew")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    user, runs = _plugin(tmp_path, [_credential("revoked", later), _credential(token, later)])
    path = _kubeconfig(control_plane, tmp_path / "k", user)
    assert asyncio.run(_whoami(path)) == "system:serviceaccount:default:cred-renew"
    assert len(runs.read_text().splitlines()) == 2
