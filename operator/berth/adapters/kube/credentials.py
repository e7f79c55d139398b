"""The credentials of an open session: its TLS context and its Authorization header, kept fresh.

One ``Credentials`` per session, built from a ``kubeconfig.Target``. A token written in the
kubeconfig is sent as it is. A token file (the pod's service-account token, which the kubelet
rotates) is read again once a minute, as client-go does. An exec plugin (EKS's, GKE's, AKS's,
kubelogin) is run when there is no credential yet, when its credential is within half a minute
of the expiry it gave, and after the server answered 401 to it; one run at a time. Client
certificates, from files, from data or from the plugin, are loaded into the TLS context. Called
by ``client.Kube`` for every request and, through ``Kube.login``, by the operator's kopf login.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import os
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

from berth.adapters.kube import errors
from berth.adapters.kube.kubeconfig import Target

TOKEN_FILE_SECONDS = 60.0
"""How long a token read from a file is used before the file is read again (client-go's)."""
EXPIRY_MARGIN = dt.timedelta(seconds=30)
"""A plugin's credential this close to its expiry is renewed before it is sent."""
PLUGIN_SECONDS = 120.0
"""How long an exec plugin may take (a cloud CLI fetching a token over the network)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Login:
    """The server and the current credentials, as kopf's ``ConnectionInfo`` takes them."""

    server: str
    ca_path: str | None
    ca_data: bytes | None
    insecure: bool
    token: str | None
    certificate_path: str | None
    certificate_data: bytes | None
    private_key_path: str | None
    private_key_data: bytes | None
    expiration: dt.datetime | None
    proxy_url: str | None


class Credentials:
    """What proves a session's identity now; see the module."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._token = target.token
        self._token_read_at = -TOKEN_FILE_SECONDS
        self._certificate = _pem_pair(target)
        self._expiry: dt.datetime | None = None
        self._plugin_ran = False
        self._lock = asyncio.Lock()
        self._context = self._build_tls()

    @property
    def renewable(self) -> bool:
        """Whether a 401 may be cured by renewing (a token file or a plugin), so worth a retry."""
        return self.target.exec is not None or self.target.token_file is not None

    def tls(self) -> ssl.SSLContext:
        """The TLS context of the current credentials (a plugin may have renewed its own)."""
        return self._context

    async def authorization(self) -> str | None:
        """The Authorization header's value for the next request, renewed first if due."""
        if self.target.exec is not None:
            await self._renew_plugin()
        elif (
            self.target.token_file is not None
            and time.monotonic() - self._token_read_at >= TOKEN_FILE_SECONDS
        ):
            self._token = self._read_token_file(self.target.token_file)
        return f"Bearer {self._token}" if self._token else None

    def unauthorized(self) -> None:
        """The server refused the last credential: renew it before the next request."""
        self._token_read_at = -TOKEN_FILE_SECONDS
        self._plugin_ran = False

    async def login(self) -> Login:
        """Fresh credentials for kopf, with their expiry so that kopf asks again in time.

        kopf asks at its start, at the expiry given, and after the server refused what it had:
        a renewable credential (a token file, a plugin's) is renewed for each ask.
        """
        self.unauthorized()
        token = await self.authorization()
        cert, key = self._certificate or (None, None)
        t = self.target
        return Login(
            server=t.server,
            ca_path=str(t.ca_path) if t.ca_path else None,
            ca_data=t.ca_data,
            insecure=t.insecure,
            token=token.removeprefix("Bearer ") if token else None,
            certificate_path=None if cert else _str(t.certificate_path),
            certificate_data=cert,
            private_key_path=None if key else _str(t.key_path),
            private_key_data=key,
            expiration=self._expiry,
            proxy_url=t.proxy_url,
        )

    def _read_token_file(self, path: Path) -> str:
        try:
            token = path.read_text().strip()
        except OSError as e:
            raise errors.PermanentError(
                f"{self.target.source}: cannot read the token file {path} ({e.strerror})"
            ) from e
        self._token_read_at = time.monotonic()
        return token

    def _build_tls(self) -> ssl.SSLContext:
        t = self.target
        try:
            context = ssl.create_default_context(
                cafile=str(t.ca_path) if t.ca_path else None,
                cadata=t.ca_data.decode() if t.ca_data else None,
            )
        except (ssl.SSLError, ValueError, UnicodeDecodeError) as e:
            raise errors.PermanentError(
                f"{t.source}: the cluster's certificate authority is not a PEM certificate ({e})"
            ) from e
        if t.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self._certificate:
            _load_pair(context, *self._certificate, t.source)
        elif t.certificate_path and t.key_path:
            try:
                context.load_cert_chain(t.certificate_path, t.key_path)
            except ssl.SSLError as e:
                raise errors.PermanentError(
                    f"{t.source}: client-certificate {t.certificate_path} and client-key"
                    f" {t.key_path} are not a matching PEM certificate and key ({e})"
                ) from e
        return context

    def _plugin_fresh(self) -> bool:
        if not self._plugin_ran:
            return False
        if self._expiry is None:
            return True
        return dt.datetime.now(dt.UTC) < self._expiry - EXPIRY_MARGIN

    async def _renew_plugin(self) -> None:
        if self._plugin_fresh():
            return
        async with self._lock:
            if self._plugin_fresh():  # another request renewed it while this one waited
                return
            status = await self._run_plugin()
            self._token = _opt_str(status, "token")
            cert, key = _opt_str(status, "clientCertificateData"), _opt_str(status, "clientKeyData")
            if not self._token and not (cert and key):
                raise errors.PermanentError(
                    f"{self.target.source}: exec plugin {self._command}: its ExecCredential has"
                    " neither status.token nor status.clientCertificateData and clientKeyData"
                )
            if cert and key:
                self._certificate = (cert.encode(), key.encode())
                self._context = self._build_tls()
            self._expiry = _expiry(status, self.target.source, self._command)
            self._plugin_ran = True

    @property
    def _command(self) -> str:
        return self.target.exec.command if self.target.exec else ""

    async def _run_plugin(self) -> dict[str, Any]:
        plugin = self.target.exec
        assert plugin is not None  # noqa: S101 - only called when the target has one
        info = {"apiVersion": plugin.api_version, "kind": "ExecCredential"}
        env = {
            **os.environ,
            **dict(plugin.env),
            "KUBERNETES_EXEC_INFO": json.dumps({**info, "spec": {"interactive": False}}),
        }
        where = f"{self.target.source}: exec plugin {plugin.command}"
        try:
            process = await asyncio.create_subprocess_exec(
                plugin.command,
                *plugin.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except OSError as e:
            hint = plugin.install_hint.strip() or "install it, or fix the command in the kubeconfig"
            raise errors.PermanentError(f"{where}: cannot run it ({e.strerror}). {hint}") from e
        try:
            out, err = await asyncio.wait_for(process.communicate(), PLUGIN_SECONDS)
        except TimeoutError as e:
            process.kill()
            await process.wait()
            raise errors.TransientError(
                f"{where}: gave no credential in {PLUGIN_SECONDS:.0f}s"
            ) from e
        if process.returncode != 0:
            tail = err.decode(errors="replace").strip()[-300:]
            raise errors.TransientError(f"{where}: exited {process.returncode}: {tail}")
        try:
            credential = json.loads(out)
        except ValueError as e:
            raise errors.PermanentError(f"{where}: printed no JSON ExecCredential") from e
        if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
            raise errors.PermanentError(f"{where}: printed JSON that is not an ExecCredential")
        if credential.get("apiVersion") != plugin.api_version:
            raise errors.PermanentError(
                f"{where}: answered in {credential.get('apiVersion')!r}, the kubeconfig asked for"
                f" {plugin.api_version!r}; make user exec apiVersion match the plugin"
            )
        status = credential.get("status")
        if not isinstance(status, dict):
            raise errors.PermanentError(f"{where}: its ExecCredential has no status")
        return status


def _str(path: Path | None) -> str | None:
    return str(path) if path else None


def _opt_str(status: dict[str, Any], field: str) -> str | None:
    value = status.get(field)
    return value if isinstance(value, str) and value else None


def _expiry(status: dict[str, Any], source: str, command: str) -> dt.datetime | None:
    raw = status.get("expirationTimestamp")
    if not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(str(raw))
    except ValueError as e:
        raise errors.PermanentError(
            f"{source}: exec plugin {command}: status.expirationTimestamp {raw!r} is not RFC 3339"
        ) from e
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def _pem_pair(target: Target) -> tuple[bytes, bytes] | None:
    """The client certificate and key given as data (or as one data field and one file)."""
    if not (target.certificate_data or target.key_data):
        return None
    cert = target.certificate_data or _read(target.certificate_path)
    key = target.key_data or _read(target.key_path)
    return cert, key


def _read(path: Path | None) -> bytes:
    return path.read_bytes() if path else b""


def _load_pair(context: ssl.SSLContext, cert: bytes, key: bytes, source: str) -> None:
    """Load a certificate and key held in memory: ``ssl`` reads them only from files."""
    with tempfile.TemporaryDirectory(prefix="berth-tls-") as d:
        cert_file, key_file = Path(d) / "tls.crt", Path(d) / "tls.key"
        for path, data in ((cert_file, cert), (key_file, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as e:
            raise errors.PermanentError(
                f"{source}: the user's client certificate and key are not a matching PEM"
                f" certificate and key ({e})"
            ) from e
