"""Reading kubeconfigs: what a good one becomes, and what each bad one is told to fix.

``kubeconfig.load`` is fed files written here; exec plugins are real programs run by
``credentials.Credentials``. Nothing talks to an API server (tests/integration/
test_kube_credentials.py does).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from berth.adapters.kube import credentials, errors, kubeconfig
from berth.entry import cli

TOKEN = "t"  # noqa: S105 - a made-up token the files carry
FROM_SECOND = "from-second"
PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _doc(
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    current: str = "x",
    name: str = "c",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster or {"server": "https://k:6443"}}],
        "users": [{"name": "u", "user": user if user is not None else {"token": TOKEN}}],
        "contexts": [{"name": "x", "context": {"cluster": name, "user": "u"}}],
        "current-context": current,
    }


def _write(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def test_a_token_user_and_a_ca_file_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    _write(tmp_path / "conf" / "ca.crt", PEM.decode())
    path = _write(
        tmp_path / "conf" / "config",
        _doc(cluster={"server": "https://k:6443/", "certificate-authority": "ca.crt"}),
    )
    target = kubeconfig.load(str(path))
    assert target.server == "https://k:6443"
    assert target.ca_path == tmp_path / "conf" / "ca.crt"
    assert target.token == TOKEN
    assert target.source == f"kubeconfig {path}, context x"


def test_data_fields_are_decoded_and_flags_read(tmp_path: Path) -> None:
    b64 = base64.b64encode(PEM).decode()
    cluster = {
        "server": "https://k",
        "certificate-authority-data": b64,
        "insecure-skip-tls-verify": True,
        "tls-server-name": "api.internal",
        "proxy-url": "http://proxy:3128",
    }
    user = {"client-certificate-data": b64, "client-key-data": b64}
    target = kubeconfig.load(str(_write(tmp_path / "k", _doc(cluster=cluster, user=user))))
    assert (target.ca_data, target.certificate_data, target.key_data) == (PEM, PEM, PEM)
    assert target.insecure
    assert target.tls_server_name == "api.internal"
    assert target.proxy_url == "http://proxy:3128"
    assert target.token is None


def test_kubeconfig_files_merge_first_wins(tmp_path: Path) -> None:
    first = _doc(cluster={"server": "https://first"}, name="c")
    del first["users"]
    second = _doc(cluster={"server": "https://second"}, name="c", current="ignored")
    second["users"] = [{"name": "u", "user": {"token": FROM_SECOND}}]
    paths = [_write(tmp_path / "a", first), _write(tmp_path / "b", second)]
    env = {"KUBECONFIG": ":".join(str(p) for p in [tmp_path / "missing", *paths])}
    target = kubeconfig.load(environ=env, home=tmp_path)
    assert target.server == "https://first"
    assert target.token == FROM_SECOND


def test_the_default_file_then_the_pod(tmp_path: Path) -> None:
    account = tmp_path / "sa"
    _write(account / "token", "pod-token")
    _write(account / "ca.crt", PEM.decode())
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    pod = kubeconfig.load(environ=env, home=tmp_path, service_account=account)
    assert pod.server == "https://[fd00::1]:443"
    assert pod.token_file == account / "token"
    assert pod.ca_path == account / "ca.crt"
    _write(tmp_path / ".kube" / "config", _doc())
    assert kubeconfig.load(environ=env, home=tmp_path, service_account=account).token == TOKEN


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("a: [", "not YAML"),
        ("- a list", "must be a mapping"),
        (_doc(current=""), "no current-context; run kubectl config use-context"),
        (_doc(current="y"), "names context 'y', which no file defines (defined: x)"),
        (_doc(cluster={"server": ""}), "the cluster has no server; set clusters[].server"),
        (_doc(cluster={"server": "k:6443"}), "must be an https:// (or http://) URL"),
        (
            _doc(cluster={"server": "https://k", "certificate-authority": "nope.crt"}),
            "cluster certificate-authority names",
        ),
        (
            _doc(cluster={"server": "https://k", "certificate-authority-data": "%%%"}),
            "cluster certificate-authority-data is not base64",
        ),
        (
            _doc(cluster={"server": "https://k", "insecure-skip-tls-verify": "yes"}),
            "insecure-skip-tls-verify must be true or false",
        ),
        (
            _doc(cluster={"server": "https://k", "proxy-url": "socks5://p:1080"}),
            "only http:// and https:// proxies work",
        ),
        (_doc(user={"auth-provider": {"name": "gcp"}}), "use its exec credential plugin"),
        (_doc(user={"username": "a", "password": "b"}), "basic authentication was removed"),
        (_doc(user={"token": "t", "as": "admin"}), "impersonation is not supported"),
        (
            _doc(user={"client-certificate-data": base64.b64encode(PEM).decode()}),
            "set client-certificate(-data) and client-key(-data) together",
        ),
        (
            _doc(user={"exec": {"apiVersion": "client.authentication.k8s.io/v1"}}),
            "user exec needs a command",
        ),
        (
            _doc(
                cluster={
                    "server": "https://k",
                    "certificate-authority": "k",
                    "certificate-authority-data": base64.b64encode(PEM).decode(),
                }
            ),
            "certificate-authority and certificate-authority-data are both set; keep one",
        ),
        (
            _doc(
                user={
                    "exec": {"command": "p", "apiVersion": "client.authentication.k8s.io/v1alpha1"}
                }
            ),
            "exec apiVersion 'client.authentication.k8s.io/v1alpha1' is not one of",
        ),
        (
            _doc(
                user={
                    "exec": {
                        "command": "p",
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "interactiveMode": "Always",
                    }
                }
            ),
            "use a plugin mode that needs none",
        ),
        (
            _doc(
                user={
                    "exec": {
                        "command": "p",
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "env": [{"name": "A"}],
                    }
                }
            ),
            "user exec env[0] needs a name and a value",
        ),
    ],
)
def test_a_bad_kubeconfig_names_the_field_and_the_fix(
    tmp_path: Path, doc: object, expected: str
) -> None:
    path = _write(tmp_path / "k", doc)
    with pytest.raises(errors.PermanentError) as refused:
        kubeconfig.load(str(path))
    assert expected in str(refused.value)
    assert str(path) in str(refused.value)


def test_no_configuration_at_all_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(errors.PermanentError, match="pass --kubeconfig or set"):
        kubeconfig.load(environ={}, home=tmp_path)
    with pytest.raises(errors.PermanentError, match=r"\$KUBECONFIG names no file that exists"):
        kubeconfig.load(environ={"KUBECONFIG": str(tmp_path / "gone")}, home=tmp_path)
    no_token = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(errors.PermanentError, match="automountServiceAccountToken"):
        kubeconfig.load(environ=no_token, home=tmp_path, service_account=tmp_path / "sa")


def _exec_target(tmp_path: Path, program: str, **extra: Any) -> kubeconfig.Target:
    script = _write(tmp_path / "plugin.py", program)
    exec_ = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": sys.executable,
        "args": [str(script)],
        **extra,
    }
    return kubeconfig.load(str(_write(tmp_path / "k", _doc(user={"exec": exec_}))))


def _answer(status: object, api: str = "client.authentication.k8s.io/v1beta1") -> str:
    credential = {"apiVersion": api, "kind": "ExecCredential", "status": status}
    return f"print({json.dumps(json.dumps(credential))})\n"


@pytest.mark.parametrize(
    ("program", "error", "expected"),
    [
        (
            "import sys; sys.stderr.write('token service down'); sys.exit(3)\n",
            errors.TransientError,
            "exited 3: token service down",
        ),
        ("print('hello')\n", errors.PermanentError, "printed no JSON ExecCredential"),
        (
            _answer({"token": "t"}, api="client.authentication.k8s.io/v1"),
            errors.PermanentError,
            "make user exec apiVersion match the plugin",
        ),
        (_answer({}), errors.PermanentError, "neither status.token nor"),
        (
            _answer({"token": "t", "expirationTimestamp": "soon"}),
            errors.PermanentError,
            "status.expirationTimestamp 'soon' is not RFC 3339",
        ),
    ],
)
async def test_a_failing_plugin_is_one_clear_error(
    tmp_path: Path, program: str, error: type[errors.KubeError], expected: str
) -> None:
    creds = credentials.Credentials(_exec_target(tmp_path, program))
    with pytest.raises(error) as refused:
        await creds.authorization()
    assert expected in str(refused.value)
    assert "exec plugin" in str(refused.value)


async def test_a_missing_plugin_prints_its_install_hint(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "k",
        _doc(
            user={
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "./bin/no-such-plugin",
                    "installHint": "Install: gcloud components install gke-gcloud-auth-plugin",
                }
            }
        ),
    )
    target = kubeconfig.load(str(path))
    assert target.exec is not None
    assert target.exec.command == str(tmp_path / "bin" / "no-such-plugin")
    with pytest.raises(errors.PermanentError) as refused:
        await credentials.Credentials(target).authorization()
    assert "gcloud components install gke-gcloud-auth-plugin" in str(refused.value)


async def test_plugin_env_a_credential_kept_for_the_session_and_renewed_for_kopf(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    program = (
        "import json, os, pathlib\n"
        f"with pathlib.Path({str(runs)!r}).open('a') as f:\n"
        "    f.write('run\\n')\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1',"
        " 'kind': 'ExecCredential', 'status': {'token': os.environ['TOKEN']}}))\n"
    )
    target = _exec_target(tmp_path, program, env=[{"name": "TOKEN", "value": "from-env"}])
    creds = credentials.Credentials(target)
    assert [await creds.authorization(), await creds.authorization()] == [
        "Bearer from-env",
        "Bearer from-env",
    ]
    assert runs.read_text().count("run") == 1  # no expiry given: kept for the session
    # kopf logs in at its start, at an expiry and after a 401: each login renews.
    login = await creds.login()
    assert (login.token, login.expiration) == ("from-env", None)
    assert runs.read_text().count("run") == 2


async def test_kopf_is_given_the_proxy_and_the_tls_settings_of_the_session() -> None:
    # The operator's watches (kopf) and its own session must reach the server the same way.
    target = kubeconfig.Target(
        source="test",
        server="https://api.example:6443",
        insecure=True,
        proxy_url="http://proxy.example:3128",
        token="t0k3n",  # noqa: S106 - a made-up token for a server never reached
    )
    login = await credentials.Credentials(target).login()
    assert (login.server, login.insecure, login.proxy_url, login.token) == (
        "https://api.example:6443",
        True,
        "http://proxy.example:3128",
        "t0k3n",
    )


def test_the_operator_refuses_a_tls_server_name_its_watches_cannot_send(tmp_path: Path) -> None:
    cluster = {"server": "https://k:6443", "tls-server-name": "kubernetes"}
    path = _write(tmp_path / "kubeconfig", _doc(cluster=cluster))
    command = ["run", "--no-history", "--metrics-port=-1", "--webhook-port=0"]
    result = CliRunner().invoke(cli.main, [*command, f"--kubeconfig={path}"])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1
    assert "tls-server-name kubernetes: the operator's watches cannot send" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--no-history", "--metrics-port=-1", "--webhook-port=0"],
        ["explain", "job/x"],
        ["queues"],
    ],
)
@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("clusters: [\n", "not YAML (line 2, column 1: expected the node content"),
        (_doc(user={"auth-provider": {"name": "oidc"}}), "user field 'auth-provider'"),
    ],
)
def test_every_command_refuses_a_bad_kubeconfig_in_one_line(
    tmp_path: Path, command: list[str], doc: object, expected: str
) -> None:
    path = _write(tmp_path / "kubeconfig", doc)
    result = CliRunner().invoke(cli.main, [*command, f"--kubeconfig={path}"])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ")
    assert result.stderr.count("\n") == 1
    assert f"kubeconfig {path}" in result.stderr
    assert expected in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
