"""Every way a kubeconfig or a pod proves who we are and reaches the server, against a real one.

Each case writes a kubeconfig (or a pod's service-account mount), opens ``client.Kube`` from it
and asks the API server who it is (a SelfSubjectReview, which any authenticated user may
create). The identities are real: ServiceAccount tokens from ``kubectl create token``, client
certificates signed by the control plane's client CA, and exec plugins (v1 and v1beta1) that are
real programs printing ExecCredentials with a token or a client certificate. So are the ways to
the server: the CA as a file or as data, no CA with ``insecure-skip-tls-verify``, an address the
serving certificate does not name with ``tls-server-name`` (a TCP relay on another loopback
address), and ``proxy-url`` (an HTTP CONNECT proxy). The relay and the proxy are written here:
plain TCP tunnels run by the test's event loop, the network between Berth and a real server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.adapters import tls
from berth.adapters.kube import client, credentials, errors, kubeconfig
from berth.devtools.devcluster import launcher

pytestmark = pytest.mark.integration

REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
EXEC_V1 = "client.authentication.k8s.io/v1"
EXEC_V1BETA1 = "client.authentication.k8s.io/v1beta1"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
"""The userInfo extra naming the token a ServiceAccount request was made with (``JTI=...``)."""
OTHER_LOOPBACK = "127.0.0.2"
"""A loopback address the serving certificate does not name (Linux routes all of 127/8 to lo)."""


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
    plane.kubectl().run("create", "serviceaccount", account, "-n", "default")
    return _another_token(plane, account)


def _another_token(plane: launcher.ControlPlane, account: str) -> str:
    """A new token of an existing ServiceAccount, as the kubelet asks for one for a pod."""
    kubectl = plane.kubectl()
    return kubectl.run("create", "token", account, "-n", "default", "--duration=1h").strip()


def _jti(token: str) -> str:
    """The ID a ServiceAccount token carries (its JWT's ``jti`` claim)."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["jti"])


def _client_ca(plane: launcher.ControlPlane) -> tls.KeyPair:
    """The CA whose certificates the API server accepts as client identities."""
    pki = plane.run_dir / "pki"
    return tls.KeyPair(
        cert_pem=(pki / "ca.crt").read_bytes(), key_pem=(pki / "ca.key").read_bytes()
    )


async def _user(kube: client.Kube) -> dict[str, Any]:
    """Who the API server says the session is: a SelfSubjectReview's ``status.userInfo``."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    review = await kube.request("POST", REVIEW, body=body)
    user: dict[str, Any] = review["status"]["userInfo"]
    return user


async def _whoami(kubeconfig: str) -> str:
    kube = await client.Kube.open(kubeconfig)
    try:
        return str((await _user(kube))["username"])
    finally:
        await kube.close()


def _plugin(
    tmp_path: Path, answers: list[dict[str, Any]], api_version: str = EXEC_V1
) -> tuple[dict[str, Any], Path]:
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
            "apiVersion": api_version,
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }
    return user, runs


def _credential(
    token: str, expires: dt.datetime | None = None, api_version: str = EXEC_V1
) -> dict[str, Any]:
    return _exec_credential({"token": token}, expires, api_version)


def _exec_credential(
    status: dict[str, Any], expires: dt.datetime | None = None, api_version: str = EXEC_V1
) -> dict[str, Any]:
    if expires is not None:
        status = {**status, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return {"apiVersion": api_version, "kind": "ExecCredential", "status": status}


def _in_a_pod(plane: launcher.ControlPlane, tmp_path: Path, token: str) -> kubeconfig.Target:
    """What ``kubeconfig.load`` finds in a pod: no kubeconfig, the kubelet's mount, the env."""
    mount = tmp_path / "serviceaccount"  # stands for /var/run/secrets/kubernetes.io/...
    mount.mkdir()
    (mount / "token").write_text(token)
    (mount / "ca.crt").write_bytes(plane.ca_file.read_bytes())
    server = urllib.parse.urlsplit(plane.server)
    environ = {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }
    # tmp_path as the home: no $KUBECONFIG and no ~/.kube/config, so the pod's account is used.
    return kubeconfig.load(None, environ=environ, home=tmp_path, service_account=mount)


Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]


@contextlib.asynccontextmanager
async def _listening(host: str, serve: Serve) -> AsyncIterator[int]:
    """Serve TCP connections on ``host`` at a free port (yielded); end them all afterwards."""
    handlers: set[asyncio.Task[None]] = set()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(serve(reader, writer))
        handlers.add(task)
        task.add_done_callback(handlers.discard)

    server = await asyncio.start_server(accept, host, 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        with contextlib.suppress(ConnectionError):
            while chunk := await source.read(2**16):
                sink.write(chunk)
                await sink.drain()
    finally:
        sink.close()


async def _splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, to: str) -> None:
    """Carry the bytes of one connection to ``to`` (``host:port``) and back, TLS and all."""
    host, _, port = to.rpartition(":")
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        writer.close()
        raise
    try:
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
    finally:
        upstream_writer.close()
        writer.close()


@contextlib.asynccontextmanager
async def _relay(host: str, to: str) -> AsyncIterator[str]:
    """A TCP relay on ``host`` to ``to``, as a load balancer in front of the API server; its URL."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _splice(reader, writer, to)

    async with _listening(host, serve) as port:
        yield f"https://{host}:{port}"


@contextlib.asynccontextmanager
async def _connect_proxy(asked: list[str]) -> AsyncIterator[str]:
    """An HTTP CONNECT proxy that appends each request line it is sent to ``asked``; its URL."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        method, authority, _version = head.split("\r\n", 1)[0].split(" ")
        asked.append(f"{method} {authority}")
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await _splice(reader, writer, authority)

    async with _listening("127.0.0.1", serve) as port:
        yield f"http://127.0.0.1:{port}"


async def test_a_token_and_a_ca_given_as_data(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-data")
    ca = base64.b64encode(control_plane.ca_file.read_bytes()).decode()
    path = _kubeconfig(
        control_plane, tmp_path / "k", {"token": token}, **{"certificate-authority-data": ca}
    )
    assert await _whoami(path) == "system:serviceaccount:default:cred-data"


async def test_a_client_certificate_as_files_and_as_data(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    pair = tls.issue_serving_certificate(
        _client_ca(control_plane), ["localhost"], "berth-cert-user"
    )
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
        assert await _whoami(path) == "berth-cert-user", name


async def test_a_token_file_is_read_again_after_a_401(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("not-a-token\n")
    path = _kubeconfig(control_plane, tmp_path / "k", {"tokenFile": "token"})
    kube = await client.Kube.open(path)
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        with pytest.raises(errors.PermanentError) as refused:
            await kube.request("POST", REVIEW, body=body)
        # The kubelet rotates the file; the next request's 401 makes the session read it.
        token_file.write_text(_token(control_plane, "cred-file") + "\n")
        review = await kube.request("POST", REVIEW, body=body)
    finally:
        await kube.close()
    who = str(review["status"]["userInfo"]["username"])
    assert str(refused.value).startswith(f"POST {REVIEW}: 401")
    assert who == "system:serviceaccount:default:cred-file"


async def test_an_exec_plugin_is_run_once_then_again_when_its_credential_expires(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-exec")
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=33)  # inside the renewal margin in 3 s
    user, runs = _plugin(tmp_path, [_credential(token, soon)])
    path = _kubeconfig(control_plane, tmp_path / "k", user)
    kube = await client.Kube.open(path)
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        who = [await kube.request("POST", REVIEW, body=body) for _ in range(3)]
        assert len(runs.read_text().splitlines()) == 1  # three requests, one run
        await asyncio.sleep(4)
        who.append(await kube.request("POST", REVIEW, body=body))
    finally:
        await kube.close()
    assert [str(w["status"]["userInfo"]["username"]) for w in who] == [
        "system:serviceaccount:default:cred-exec"
    ] * 4
    lines = runs.read_text().splitlines()
    assert len(lines) == 2
    info = json.loads(lines[0])
    assert info == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


async def test_an_exec_credential_the_server_refuses_is_renewed_once(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-renew")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    user, runs = _plugin(tmp_path, [_credential("revoked", later), _credential(token, later)])
    path = _kubeconfig(control_plane, tmp_path / "k", user)
    assert await _whoami(path) == "system:serviceaccount:default:cred-renew"
    assert len(runs.read_text().splitlines()) == 2


async def test_an_exec_plugin_speaking_v1beta1(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-beta")
    answer = _credential(token, api_version=EXEC_V1BETA1)
    user, runs = _plugin(tmp_path, [answer], api_version=EXEC_V1BETA1)
    path = _kubeconfig(control_plane, tmp_path / "k", user)
    assert await _whoami(path) == "system:serviceaccount:default:cred-beta"
    asked = [json.loads(line) for line in runs.read_text().splitlines()]
    assert [a["apiVersion"] for a in asked] == [EXEC_V1BETA1]


async def test_an_exec_plugin_may_answer_with_a_client_certificate_instead_of_a_token(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    pair = tls.issue_serving_certificate(
        _client_ca(control_plane), ["localhost"], "berth-exec-cert"
    )
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    # ExecCredential carries the PEM itself, not base64 of it as a kubeconfig's -data fields do.
    status = {
        "clientCertificateData": pair.cert_pem.decode(),
        "clientKeyData": pair.key_pem.decode(),
    }
    user, runs = _plugin(tmp_path, [_exec_credential(status, later)])
    path = _kubeconfig(control_plane, tmp_path / "k", user)
    assert await _whoami(path) == "berth-exec-cert"
    assert len(runs.read_text().splitlines()) == 1


async def test_the_pods_service_account_when_there_is_no_kubeconfig(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    target = _in_a_pod(control_plane, tmp_path, _token(control_plane, "cred-pod") + "\n")
    assert target.source == f"the pod's service account ({tmp_path / 'serviceaccount'})"
    kube = await client.Kube.connect(target)
    try:
        who = str((await _user(kube))["username"])
    finally:
        await kube.close()
    assert who == "system:serviceaccount:default:cred-pod"


async def test_the_pods_token_is_read_again_once_the_kubelet_has_rotated_it(
    control_plane: launcher.ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file is read again every TOKEN_FILE_SECONDS (a minute, as client-go); 3 s here, which
    # the first two requests take far less than.
    monkeypatch.setattr(credentials, "TOKEN_FILE_SECONDS", 3.0)
    first = _token(control_plane, "cred-rotated")
    second = _another_token(control_plane, "cred-rotated")
    target = _in_a_pod(control_plane, tmp_path, first)
    assert target.token_file is not None
    token_file = target.token_file
    kube = await client.Kube.connect(target)
    try:
        used = [await _user(kube)]
        # The kubelet writes the new token while the old one is still valid: no 401 to
        # prompt a read, so the session reads the file again when its minute is up.
        token_file.write_text(second)
        used.append(await _user(kube))
        await asyncio.sleep(3.5)
        used.append(await _user(kube))
    finally:
        await kube.close()
    old, new = f"JTI={_jti(first)}", f"JTI={_jti(second)}"
    assert [u["extra"][CREDENTIAL_ID] for u in used] == [[old], [old], [new]]


async def test_insecure_skip_tls_verify_trusts_a_server_no_ca_vouches_for(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-insecure")
    no_ca = _kubeconfig(
        control_plane, tmp_path / "k-no-ca", {"token": token}, **{"insecure-skip-tls-verify": False}
    )
    # Not worth retrying: the error is permanent and says what to set.
    with pytest.raises(errors.PermanentError, match="certificate verify failed") as caught:
        await _whoami(no_ca)
    assert "certificate-authority" in str(caught.value)
    insecure = _kubeconfig(
        control_plane, tmp_path / "k", {"token": token}, **{"insecure-skip-tls-verify": True}
    )
    assert await _whoami(insecure) == "system:serviceaccount:default:cred-insecure"


async def test_tls_server_name_is_checked_when_the_certificate_does_not_name_the_address(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-sni")
    ca = str(control_plane.ca_file)
    # The serving certificate names 127.0.0.1, localhost and the in-cluster names only.
    async with _relay(OTHER_LOOPBACK, control_plane.server.removeprefix("https://")) as url:
        unnamed = _kubeconfig(
            control_plane,
            tmp_path / "k-unnamed",
            {"token": token},
            server=url,
            **{"certificate-authority": ca},
        )
        with pytest.raises(errors.PermanentError) as caught:
            await _whoami(unnamed)
        named = _kubeconfig(
            control_plane,
            tmp_path / "k",
            {"token": token},
            server=url,
            **{"certificate-authority": ca, "tls-server-name": "kubernetes"},
        )
        who = await _whoami(named)
    refused = str(caught.value)
    # One line saying which request failed and why, not aiohttp's or ssl's exception.
    assert refused.startswith(f"POST {REVIEW}: ")
    assert f"certificate is not valid for '{OTHER_LOOPBACK}'" in refused
    assert "tls-server-name" in refused
    assert who == "system:serviceaccount:default:cred-sni"


async def test_proxy_url_sends_the_requests_through_an_http_connect_proxy(
    control_plane: launcher.ControlPlane, tmp_path: Path
) -> None:
    token = _token(control_plane, "cred-proxy")
    asked: list[str] = []
    async with _connect_proxy(asked) as proxy:
        path = _kubeconfig(
            control_plane,
            tmp_path / "k",
            {"token": token},
            **{"certificate-authority": str(control_plane.ca_file), "proxy-url": proxy},
        )
        kube = await client.Kube.open(path)
        try:
            who = [str((await _user(kube))["username"]) for _ in range(2)]
        finally:
            await kube.close()
    assert who == ["system:serviceaccount:default:cred-proxy"] * 2
    server = control_plane.server.removeprefix("https://")
    assert set(asked) == {f"CONNECT {server}"}
