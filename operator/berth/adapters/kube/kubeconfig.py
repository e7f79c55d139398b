"""Where the API server is and how to prove who we are, read from a kubeconfig or a pod.

``load`` reads the kubeconfig named, else the files ``$KUBECONFIG`` lists (merged as kubectl
merges them: the first file to name a cluster, user or context, or to set the current context,
wins), else ``~/.kube/config``, else the pod's service account. It returns a ``Target``: typed
values only, files resolved against the kubeconfig that named them, nothing opened yet (that is
``credentials.Credentials``). Every refusal is a ``PermanentError`` naming the file, the entry,
the field and what to write instead. Called by ``client.Kube.open`` and the benchmark harness.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from berth.adapters.kube import errors

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where the kubelet mounts a pod's service-account token and the cluster's CA."""

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
"""The ExecCredential versions an exec plugin may speak (v1alpha1 was removed in 1.24)."""


class InteractiveMode(enum.Enum):
    """An exec plugin's need for a terminal (``interactiveMode``; default IfAvailable)."""

    NEVER = "Never"
    IF_AVAILABLE = "IfAvailable"
    ALWAYS = "Always"


@dataclasses.dataclass(frozen=True, slots=True)
class Exec:
    """A credential plugin: a command that prints an ExecCredential (tokens of EKS, GKE, AKS...)."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str
    install_hint: str
    interactive: InteractiveMode


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """One API server and one identity on it. Data fields hold PEM bytes, already decoded."""

    source: str
    """Where this came from, for messages: ``kubeconfig F, context C`` or the service account."""
    server: str
    ca_path: Path | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    token: str | None = None
    token_file: Path | None = None
    certificate_path: Path | None = None
    certificate_data: bytes | None = None
    key_path: Path | None = None
    key_data: bytes | None = None
    exec: Exec | None = None


def load(
    path: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    service_account: Path = SERVICE_ACCOUNT,
) -> Target:
    """The target of ``path``, or of the default kubeconfig, or of the pod (see the module)."""
    env = os.environ if environ is None else environ
    if path is not None:
        return _from_files([Path(path)])
    listed = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    existing = [p for p in listed if p.is_file()]
    if listed and not existing:
        named = os.pathsep.join(str(p) for p in listed)
        raise errors.PermanentError(f"$KUBECONFIG names no file that exists ({named})")
    if existing:
        return _from_files(existing)
    default = (home if home is not None else Path.home()) / ".kube" / "config"
    if default.is_file():
        return _from_files([default])
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(env, service_account)
    raise errors.PermanentError(
        f"no kubeconfig ($KUBECONFIG unset, no {default}) and not in a pod"
        " (KUBERNETES_SERVICE_HOST unset): pass --kubeconfig or set $KUBECONFIG"
    )


def in_cluster(env: Mapping[str, str], service_account: Path = SERVICE_ACCOUNT) -> Target:
    """The pod's own API server and service account, as client-go's in-cluster config reads them."""
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise errors.PermanentError(
            "in a pod, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set"
        )
    token = service_account / "token"
    if not token.is_file():
        raise errors.PermanentError(
            f"in a pod but no service-account token at {token}:"
            " set automountServiceAccountToken: true on the pod or its ServiceAccount"
        )
    ca = service_account / "ca.crt"
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    return Target(
        source=f"the pod's service account ({service_account})",
        server=f"https://{host}:{port}",
        ca_path=ca if ca.is_file() else None,
        token_file=token,
    )


class _Merged:
    """The kubeconfig files of one load, merged by name; each entry keeps the file it came from."""

    def __init__(self, paths: list[Path]) -> None:
        self.current: tuple[str, Path] | None = None
        self.entries: dict[str, dict[str, tuple[dict[str, Any], Path]]] = {
            "clusters": {},
            "users": {},
            "contexts": {},
        }
        for p in paths:
            self._add(p)

    def _add(self, path: Path) -> None:
        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as e:
            raise errors.PermanentError(f"kubeconfig {path}: cannot read it ({e.strerror})") from e
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            problem = getattr(e, "problem", None) or "cannot parse it"
            raise errors.PermanentError(f"kubeconfig {path}: not YAML ({where}{problem})") from e
        if doc is None:
            return
        if not isinstance(doc, dict):
            raise errors.PermanentError(f"kubeconfig {path}: must be a mapping (kind: Config)")
        current = doc.get("current-context")
        if current and self.current is None:
            self.current = (str(current), path)
        for section, table in self.entries.items():
            listed = doc.get(section) or []
            if not isinstance(listed, list):
                raise errors.PermanentError(f"kubeconfig {path}: {section} must be a list")
            singular = section[:-1]
            for i, entry in enumerate(listed):
                name = entry.get("name") if isinstance(entry, dict) else None
                body = entry.get(singular) if isinstance(entry, dict) else None
                if not name or not isinstance(body, dict):
                    raise errors.PermanentError(
                        f"kubeconfig {path}: {section}[{i}] needs a name and a {singular} mapping"
                    )
                table.setdefault(str(name), (body, path))

    def get(self, section: str, name: str, by: str) -> tuple[dict[str, Any], Path]:
        found = self.entries[section].get(name)
        if found is None:
            known = ", ".join(sorted(self.entries[section])) or "none"
            raise errors.PermanentError(
                f"kubeconfig: {by} names {section[:-1]} {name!r}, which no file defines"
                f" (defined: {known})"
            )
        return found


def _from_files(paths: list[Path]) -> Target:
    merged = _Merged(paths)
    if merged.current is None:
        files = ", ".join(str(p) for p in paths)
        raise errors.PermanentError(
            f"kubeconfig {files}: no current-context; run kubectl config use-context NAME"
        )
    context_name, where = merged.current
    context, _ = merged.get("contexts", context_name, f"current-context in {where}")
    by = f"context {context_name!r}"
    cluster, cluster_file = merged.get("clusters", str(context.get("cluster") or ""), by)
    user_name = str(context.get("user") or "")
    user, user_file = merged.get("users", user_name, by) if user_name else ({}, cluster_file)
    return _target(
        f"kubeconfig {where}, context {context_name}", cluster, cluster_file, user, user_file
    )


def _target(
    source: str,
    cluster: dict[str, Any],
    cluster_file: Path,
    user: dict[str, Any],
    user_file: Path,
) -> Target:
    c = _Fields(source, "cluster", cluster, cluster_file)
    u = _Fields(source, "user", user, user_file)
    server = c.text("server")
    if not server:
        raise errors.PermanentError(f"{source}: the cluster has no server; set clusters[].server")
    if not server.startswith(("https://", "http://")):
        raise errors.PermanentError(
            f"{source}: cluster server {server!r} must be an https:// (or http://) URL"
        )
    for field, fix in (
        (
            "auth-provider",
            (
                "use its exec credential plugin instead (e.g. gke-gcloud-auth-plugin,"
                " kubelogin); auth-provider was removed from kubectl in 1.26"
            ),
        ),
        ("username", "basic authentication was removed from Kubernetes in 1.19; use a token"),
        ("as", "impersonation is not supported; use a user with its own credentials"),
        ("as-groups", "impersonation is not supported; use a user with its own credentials"),
    ):
        if user.get(field):
            raise errors.PermanentError(f"{source}: user field {field!r} is not supported: {fix}")
    proxy = c.text("proxy-url")
    if proxy and not proxy.startswith(("http://", "https://")):
        raise errors.PermanentError(
            f"{source}: cluster proxy-url {proxy!r}: only http:// and https:// proxies work"
        )
    target = Target(
        source=source,
        server=server.rstrip("/"),
        ca_path=c.path("certificate-authority"),
        ca_data=c.data("certificate-authority-data"),
        insecure=c.flag("insecure-skip-tls-verify"),
        tls_server_name=c.text("tls-server-name"),
        proxy_url=proxy,
        token=u.text("token"),
        token_file=u.path("tokenFile"),
        certificate_path=u.path("client-certificate"),
        certificate_data=u.data("client-certificate-data"),
        key_path=u.path("client-key"),
        key_data=u.data("client-key-data"),
        exec=_exec(source, user.get("exec"), user_file),
    )
    for what, path, data in (
        ("cluster certificate-authority", target.ca_path, target.ca_data),
        ("user client-certificate", target.certificate_path, target.certificate_data),
        ("user client-key", target.key_path, target.key_data),
    ):
        if path and data:
            raise errors.PermanentError(
                f"{source}: {what} and {what.split()[1]}-data are both set; keep one"
            )
    has_cert = target.certificate_path or target.certificate_data
    has_key = target.key_path or target.key_data
    if bool(has_cert) != bool(has_key):
        raise errors.PermanentError(
            f"{source}: the user has a client certificate or a client key but not both;"
            " set client-certificate(-data) and client-key(-data) together"
        )
    return target


@dataclasses.dataclass(frozen=True, slots=True)
class _Fields:
    """One cluster or user mapping, read field by field with messages that name the field."""

    source: str
    what: str
    body: dict[str, Any]
    file: Path

    def text(self, field: str) -> str | None:
        value = self.body.get(field)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise errors.PermanentError(f"{self.source}: {self.what} {field} must be a string")
        return value

    def flag(self, field: str) -> bool:
        value = self.body.get(field, False)
        if not isinstance(value, bool):
            raise errors.PermanentError(f"{self.source}: {self.what} {field} must be true or false")
        return value

    def path(self, field: str) -> Path | None:
        value = self.text(field)
        if value is None:
            return None
        p = Path(value).expanduser()
        resolved = p if p.is_absolute() else self.file.parent / p
        if not resolved.is_file():
            raise errors.PermanentError(
                f"{self.source}: {self.what} {field} names {resolved}, which is not a file"
            )
        return resolved

    def data(self, field: str) -> bytes | None:
        value = self.text(field)
        if value is None:
            return None
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as e:
            raise errors.PermanentError(
                f"{self.source}: {self.what} {field} is not base64 (it holds the PEM, encoded)"
            ) from e


def _exec(source: str, raw: object, file: Path) -> Exec | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw.get("command"):
        raise errors.PermanentError(f"{source}: user exec needs a command")
    api_version = str(raw.get("apiVersion") or "")
    if api_version not in EXEC_API_VERSIONS:
        raise errors.PermanentError(
            f"{source}: user exec apiVersion {api_version!r} is not one of"
            f" {', '.join(EXEC_API_VERSIONS)}; update the plugin's kubeconfig entry"
        )
    env: list[tuple[str, str]] = []
    for i, item in enumerate(raw.get("env") or []):
        if not isinstance(item, dict) or "name" not in item or "value" not in item:
            raise errors.PermanentError(f"{source}: user exec env[{i}] needs a name and a value")
        env.append((str(item["name"]), str(item["value"])))
    try:
        interactive = InteractiveMode(raw.get("interactiveMode") or "IfAvailable")
    except ValueError as e:
        raise errors.PermanentError(
            f"{source}: user exec interactiveMode must be Never, IfAvailable or Always"
        ) from e
    if interactive is InteractiveMode.ALWAYS:
        raise errors.PermanentError(
            f"{source}: user exec interactiveMode is Always, and Berth runs without a terminal;"
            " use a plugin mode that needs none (Never or IfAvailable)"
        )
    command = str(raw["command"])
    if os.sep in command and not Path(command).is_absolute():
        # kubectl's rule: a relative command with a directory in it is the kubeconfig's.
        command = str(file.parent / command)
    return Exec(
        command=command,
        args=tuple(str(a) for a in raw.get("args") or []),
        env=tuple(env),
        api_version=api_version,
        install_hint=str(raw.get("installHint") or ""),
        interactive=interactive,
    )
