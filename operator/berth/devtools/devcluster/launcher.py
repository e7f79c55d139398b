"""`ControlPlane`: etcd and kube-apiserver on loopback, optionally scheduling components and kwok.

It starts the real binaries the way controller-runtime's envtest and kwokctl's binary runtime do:
free ports on 127.0.0.1, a fresh CA and serving certificate, a service-account key, static tokens
for an admin and for each component, RBAC on. Everything a run needs or produces — PKI,
kubeconfigs, etcd's data and every component's log — lives in its run directory, which `stop`
leaves in place for a failed test to be read. Callers: the pytest fixtures in ``tests/conftest.py``
and ``berth dev``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import yaml

from berth.devtools.devcluster import binaries, errors, kubectl, kwok, pki, processes, realnode

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

STATE_FILE = "state.json"
"""In a detached run's directory: the processes and endpoints, for ``berth dev down``/``env``."""

SERVICE_CIDR = "10.0.0.0/24"
"""The service range; its first address is the API server's ClusterIP, named in its certificate."""


@dataclasses.dataclass(frozen=True, slots=True)
class ControlPlaneConfig:
    """What to start and where."""

    run_dir: Path
    """Holds PKI, kubeconfigs, etcd's data and logs; created if missing."""
    scheduling: bool = False
    """Also start kube-controller-manager and kube-scheduler, so Jobs make pods that get bound."""
    node_pools: tuple[kwok.NodePool, ...] = ()
    """Fake nodes; kwok starts when there is at least one pool."""
    detach: bool = False
    """Let the processes outlive this Python process (``berth dev up``)."""
    start_timeout: float = 90.0
    """Seconds each component may take to become ready."""
    profiling: bool = False
    """Serve kube-apiserver's ``/debug/pprof`` (``berth bench harness --apiserver-profile``)."""
    real_node: realnode.RealNodeConfig | None = None
    """Also start one real node (containerd, kubelet, kube-proxy) beside the kwok pools; needs
    root and the Debian packages ``scripts/setup-real-node`` installs. The API server then binds
    to the host's primary address instead of loopback, so the node's pods can reach it."""
    watch_cache: bool = True
    """kube-apiserver's watch cache; without it watches read etcd, so after a compaction an old
    resourceVersion gets 410 Gone at once (the tests of the operator's informer need that)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Identity:
    user: str
    groups: tuple[str, ...]
    token: str


def _identities(real_node: realnode.RealNodeConfig | None) -> dict[str, _Identity]:
    # Each component authenticates as the user the RBAC bootstrap policy grants its role to, so
    # RBAC is exercised as in a real cluster; only the admin and kwok are cluster-admins.
    def new(user: str, *groups: str) -> _Identity:
        return _Identity(user, groups, secrets.token_hex(24))

    found = {
        "admin": new("berth-admin", "system:masters"),
        "kube-controller-manager": new("system:kube-controller-manager"),
        "kube-scheduler": new("system:kube-scheduler"),
        "kwok": new("kwok", "system:masters"),
    }
    if real_node is not None:
        # The Node authorizer and NodeRestriction know a kubelet by this name and group.
        found["kubelet"] = new(f"system:node:{real_node.name}", "system:nodes")
        found["kube-proxy"] = new("system:kube-proxy")
    return found


class ControlPlane:
    """A real control plane on loopback; use as a context manager or call `start` and `stop`."""

    def __init__(
        self, config: ControlPlaneConfig, cache: binaries.BinaryCache | None = None
    ) -> None:
        self.config = config
        self.cache = cache if cache is not None else binaries.BinaryCache.default()
        self.run_dir = config.run_dir.resolve()
        self.kubeconfig = self.run_dir / "kubeconfig"
        """The admin kubeconfig, for clients."""
        self.timings: dict[str, float] = {}
        """Seconds each phase of `start` took, by phase name."""
        self._processes: list[processes.ManagedProcess] = []
        self._server = ""
        self._etcd_url = ""
        self._pki: pki.PkiFiles | None = None
        self._identities = _identities(config.real_node)
        self._host = realnode.node_ip() if config.real_node is not None else "127.0.0.1"
        self._owner = f"dir:{self.run_dir}" if config.detach else f"pid:{os.getpid()}"
        self._holds_real_node = False

    def components(self) -> list[str]:
        """Return the binaries this configuration needs, in start order."""
        names = ["etcd", "kube-apiserver"]
        if self.config.scheduling:
            names += ["kube-controller-manager", "kube-scheduler"]
        if self.config.node_pools:
            names += ["kwok", "kubectl"]
        if self.config.real_node is not None:
            names += ["kubelet", "kube-proxy", "kubectl"]
        return list(dict.fromkeys(names))

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision; return that revision.

        What etcd does on its own every few minutes in a real cluster: afterwards a watch from
        an older resourceVersion is answered with 410 Gone.
        """

        def post(path: str, body: dict[str, object]) -> dict[str, Any]:
            request = urllib.request.Request(  # noqa: S310 - etcd's own loopback URL
                self._etcd_url + path,
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - same
                result: dict[str, Any] = json.loads(answer.read())
                return result

        revision = int(post("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        post("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    @property
    def server(self) -> str:
        """The API server's URL."""
        if not self._server:
            raise RuntimeError("the control plane is not started")
        return self._server

    @property
    def token(self) -> str:
        """The admin's bearer token."""
        return self._identities["admin"].token

    @property
    def ca_file(self) -> Path:
        """The CA that signed every serving certificate of this run."""
        return self.run_dir / "pki" / "ca.crt"

    @property
    def logs(self) -> Path:
        """The directory holding each component's log."""
        return self.run_dir / "logs"

    def kubectl(self) -> kubectl.Kubectl:
        """Return the cached kubectl bound to the admin kubeconfig."""
        return kubectl.Kubectl(self.cache.find("kubectl"), self.kubeconfig)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start every component and wait until each is ready; on failure stop what started."""
        found = {name: self.cache.find(name) for name in self.components()}
        if self.config.node_pools:
            self.cache.kwok_pod_stages()
        started = time.monotonic()
        try:
            self._write_files()
            self._start_etcd(found["etcd"])
            self._start_apiserver(found["kube-apiserver"])
            if self.config.scheduling:
                self._start_controller_manager(found["kube-controller-manager"])
                self._start_scheduler(found["kube-scheduler"])
            if self.config.node_pools:
                self._start_kwok(found["kwok"])
            if self.config.real_node is not None:
                self._start_real_node(self.config.real_node, found["kubelet"], found["kube-proxy"])
            if self.config.scheduling:
                self._wait_for_default_service_account()
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = time.monotonic() - started
        if self.config.detach:
            self._write_state()

    def stop(self) -> None:
        """Stop every component, newest first; the run directory and its logs stay.

        A real node's pods are deleted first, while its kubelet can still tear their networks
        down, and whatever the node leaves on the machine is removed after its processes stop.
        """
        real = self.config.real_node
        if real is not None and any(p.name == "kubelet" for p in self._processes):
            with contextlib.suppress(errors.DevClusterError, OSError):
                drain_real_node(self.kubectl(), real.name)
        while self._processes:
            self._processes.pop().stop()
        if self._holds_real_node:
            # Only a plane that claimed the node clears it: another's node is not ours to remove.
            realnode.teardown(kube_proxy=self.cache.path("kube-proxy"))
            realnode.release(self._owner)
            self._holds_real_node = False
        with contextlib.suppress(FileNotFoundError):
            (self.run_dir / STATE_FILE).unlink()

    def restart(self, component: str, *, kill: bool = False) -> float:
        """Restart one running component in place: same argv, ports and data; wait until ready.

        ``kill`` stops it with SIGKILL, as a crash would, instead of SIGTERM. Returns the seconds
        it took to be ready again. The chaos tests use it on kube-apiserver and etcd.
        """
        (process,) = [p for p in self._processes if p.name == component]
        if kill:
            process.kill()
        else:
            process.stop()
        process.start()
        probes: dict[str, Callable[[], bool]] = {
            "etcd": lambda: _etcd_healthy(self._etcd_url),
            "kube-apiserver": lambda: _https_ok(f"{self._server}/readyz", self.ca_file, self.token),
        }
        probe = probes.get(component, lambda: process.returncode() is None)
        took = process.wait_ready(probe, self.config.start_timeout)
        if self.config.detach:
            self._write_state()
        return took

    def adopt(self, process: processes.ManagedProcess) -> None:
        """Stop ``process`` with the control plane, first; a detached run records it for ``down``.

        ``berth up --keep`` hands over the operator this way, so ``berth dev down`` stops it
        before the API server and it can remove its webhook configurations.
        """
        self._processes.append(process)
        if self.config.detach:
            self._write_state()

    def pids(self) -> dict[str, int]:
        """Return each running component's process id."""
        return {p.name: p.pid for p in self._processes}

    # -- files -------------------------------------------------------------------------------

    def _write_files(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        extra = (self._host,) if self.config.real_node is not None else ()
        self._pki = pki.write_pki(self.run_dir / "pki", extra_hosts=extra)
        lines = [
            f'{i.token},{i.user},{i.user},"{",".join(i.groups)}"' for i in self._identities.values()
        ]
        tokens = self.run_dir / "pki" / "tokens.csv"
        tokens.write_text("\n".join(lines) + "\n")
        tokens.chmod(0o600)

    def _write_kubeconfig(self, path: Path, identity: _Identity) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "berth-dev",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": identity.user, "user": {"token": identity.token}}],
            "contexts": [
                {"name": "berth-dev", "context": {"cluster": "berth-dev", "user": identity.user}}
            ],
            "current-context": "berth-dev",
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

    def _component_kubeconfig(self, name: str) -> Path:
        path = self.run_dir / "kubeconfigs" / f"{name}.kubeconfig"
        self._write_kubeconfig(path, self._identities[name])
        return path

    def _write_state(self, *, starting: bool = False) -> None:
        state = {
            "server": self._server,
            "kubeconfig": str(self.kubeconfig),
            # While starting: who starts it. A run whose starter died before the end (a SIGKILLed
            # `berth dev up`) is stopped by the next `up` instead of blocking it.
            "starting": os.getpid() if starting else None,
            "real_node": None if self.config.real_node is None else self.config.real_node.name,
            "processes": [dataclasses.asdict(p.record()) for p in self._processes],
        }
        (self.run_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    # -- components --------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> processes.ManagedProcess:
        process = processes.ManagedProcess(
            name, argv, self.logs / f"{name}.log", detach=self.config.detach
        )
        process.start()
        self._processes.append(process)
        if self.config.detach:
            self._write_state(starting=True)  # so nothing detached is lost if this process dies
        return process

    def _files(self) -> pki.PkiFiles:
        if self._pki is None:
            raise RuntimeError("the PKI is not written yet")
        return self._pki

    def _start_etcd(self, binary: Path) -> None:
        client, peer = processes.free_port(), processes.free_port()
        self._etcd_url = f"http://127.0.0.1:{client}"
        process = self._spawn(
            "etcd",
            [
                str(binary),
                "--name=berth-dev",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls={self._etcd_url}",
                f"--advertise-client-urls={self._etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=berth-dev=http://127.0.0.1:{peer}",
                # A throwaway cluster: durability is not worth an fsync per write.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self.timings["etcd"] = process.wait_ready(
            lambda: _etcd_healthy(self._etcd_url), self.config.start_timeout
        )

    def _start_apiserver(self, binary: Path) -> None:
        files = self._files()
        port = processes.free_port()
        self._server = f"https://{self._host}:{port}"
        argv = [
            str(binary),
            f"--bind-address={self._host}",
            f"--advertise-address={self._host}",
            f"--secure-port={port}",
            f"--etcd-servers={self._etcd_url}",
            f"--tls-cert-file={files.serving_cert}",
            f"--tls-private-key-file={files.serving_key}",
            f"--client-ca-file={files.ca_cert}",
            f"--token-auth-file={self.run_dir / 'pki' / 'tokens.csv'}",
            *(["--authorization-mode=RBAC"] if self.config.real_node is None else []),
            f"--service-account-issuer={self._server}",
            f"--service-account-key-file={files.service_account_pub}",
            f"--service-account-signing-key-file={files.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            "--profiling=true" if self.config.profiling else "--profiling=false",
            "--watch-cache=true" if self.config.watch_cache else "--watch-cache=false",
            f"--cert-dir={self.run_dir / 'apiserver'}",
        ]
        if self.config.real_node is None:
            # Endpoints may not hold a loopback address, so the apiserver must not publish its own.
            argv.append("--endpoint-reconciler-type=none")
        else:
            # A real kubelet: the Node authorizer and NodeRestriction limit what it may touch,
            # the API server proves itself to it with a client certificate and checks its serving
            # one, and dials its InternalIP (the node's Hostname does not resolve here).
            kubelet_client = self.run_dir / "pki" / "kubelet-client"
            argv += [
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                f"--kubelet-client-certificate={kubelet_client}.crt",
                f"--kubelet-client-key={kubelet_client}.key",
                f"--kubelet-certificate-authority={files.ca_cert}",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
            ]
        if not self.config.scheduling:
            # Without kube-controller-manager nobody creates the default ServiceAccount, and this
            # plugin would refuse every pod for lacking it.
            argv.append("--disable-admission-plugins=ServiceAccount")
        process = self._spawn("kube-apiserver", argv)
        self.timings["kube-apiserver"] = process.wait_ready(
            lambda: _https_ok(f"{self._server}/readyz", self.ca_file, self.token),
            self.config.start_timeout,
        )
        self._write_kubeconfig(self.kubeconfig, self._identities["admin"])

    def _secure_serving(self, port: int) -> list[str]:
        files = self._files()
        return [
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={files.serving_cert}",
            f"--tls-private-key-file={files.serving_key}",
        ]

    def _start_controller_manager(self, binary: Path) -> None:
        files = self._files()
        port = processes.free_port()
        process = self._spawn(
            "kube-controller-manager",
            [
                str(binary),
                f"--kubeconfig={self._component_kubeconfig('kube-controller-manager')}",
                *self._secure_serving(port),
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={files.service_account_key}",
                f"--root-ca-file={files.ca_cert}",
                f"--cluster-signing-cert-file={files.ca_cert}",
                f"--cluster-signing-key-file={files.ca_key}",
            ],
        )
        self.timings["kube-controller-manager"] = process.wait_ready(
            lambda: _https_ok(f"https://127.0.0.1:{port}/healthz", self.ca_file, None),
            self.config.start_timeout,
        )

    def _start_scheduler(self, binary: Path) -> None:
        port = processes.free_port()
        process = self._spawn(
            "kube-scheduler",
            [
                str(binary),
                f"--kubeconfig={self._component_kubeconfig('kube-scheduler')}",
                *self._secure_serving(port),
                "--leader-elect=false",
            ],
        )
        self.timings["kube-scheduler"] = process.wait_ready(
            lambda: _https_ok(f"https://127.0.0.1:{port}/healthz", self.ca_file, None),
            self.config.start_timeout,
        )

    def _start_kwok(self, binary: Path) -> None:
        process = self._spawn(
            "kwok",
            kwok.argv(binary, self._component_kubeconfig("kwok"), self.cache.kwok_pod_stages()),
        )
        started = time.monotonic()
        nodes = kwok.node_manifests(self.config.node_pools)
        (self.run_dir / "nodes.yaml").write_text(yaml.safe_dump_all(nodes, sort_keys=False))
        if nodes:
            self.kubectl().create(nodes)
        names = {n["metadata"]["name"] for n in nodes}
        url = f"{self.server}/api/v1/nodes?labelSelector=type%3Dkwok"
        process.wait_ready(
            lambda: _ready_nodes(_get_json(url, self.ca_file, self.token)) >= names,
            self.config.start_timeout,
            what="making its nodes Ready",
        )
        self.timings["kwok"] = time.monotonic() - started

    def _start_real_node(
        self, config: realnode.RealNodeConfig, kubelet: Path, kube_proxy: Path
    ) -> None:
        missing = realnode.missing_prerequisites()
        if missing:
            raise errors.DevClusterError("a real node needs " + "; ".join(missing))
        started = time.monotonic()
        realnode.claim(self._owner, _cluster_running)
        self._holds_real_node = True
        realnode.teardown(kube_proxy=kube_proxy)
        realnode.prepare_host()
        files = self._files()
        serving = pki.issue_serving_certificate(
            pki.load_certificate_authority(files),
            (self._host, config.name),
            f"system:node:{config.name}",
        )
        node_pki = self.run_dir / "pki"
        (node_pki / "kubelet.crt").write_bytes(serving.cert_pem)
        (node_pki / "kubelet.key").write_bytes(serving.key_pem)
        (node_pki / "kubelet.key").chmod(0o600)
        paths = realnode.write_files(
            config,
            ip=self._host,
            ca_file=files.ca_cert,
            cert=node_pki / "kubelet.crt",
            key=node_pki / "kubelet.key",
            proxy_kubeconfig=self._component_kubeconfig("kube-proxy"),
        )
        # The API server's client certificate is authorized on the kubelet through RBAC.
        self.kubectl().apply([_kubelet_api_binding()])
        self.timings.update(
            realnode.start_processes(
                self._spawn,
                config,
                kubelet=kubelet,
                kube_proxy=kube_proxy,
                ip=self._host,
                paths=paths,
                kubelet_kubeconfig=self._component_kubeconfig("kubelet"),
                images_dir=self.run_dir / "images",
                timeout=self.config.start_timeout,
            )
        )
        url = f"{self.server}/api/v1/nodes?fieldSelector=metadata.name%3D{config.name}"
        (kubelet_process,) = [p for p in self._processes if p.name == "kubelet"]
        kubelet_process.wait_ready(
            lambda: config.name in _ready_nodes(_get_json(url, self.ca_file, self.token)),
            self.config.start_timeout,
            what="registering a Ready node",
        )
        if config.gpus:
            self.kubectl().patch_status("node", config.name, realnode.gpu_status_patch(config.gpus))
        self.timings["real-node"] = time.monotonic() - started

    def _wait_for_default_service_account(self) -> None:
        # Pods are refused until kube-controller-manager has made the namespace's ServiceAccount.
        started = time.monotonic()
        deadline = started + self.config.start_timeout
        while not _https_ok(
            f"{self.server}/api/v1/namespaces/default/serviceaccounts/default",
            self.ca_file,
            self.token,
        ):
            if time.monotonic() > deadline:
                raise errors.StartupError(
                    "kube-controller-manager",
                    "the default ServiceAccount did not appear",
                    self.logs / "kube-controller-manager.log",
                )
            time.sleep(0.1)
        self.timings["default-service-account"] = time.monotonic() - started


def _kubelet_api_binding() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "berth-dev:kube-apiserver-kubelet-client"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:kubelet-api-admin",
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": pki.KUBELET_CLIENT}
        ],
    }


def drain_real_node(kubectl_: kubectl.Kubectl, node: str, timeout: float = 30.0) -> None:
    """Delete every pod bound to the real node and wait until its containers are gone.

    The kubelet then stops each pod and asks CNI to remove its network, which a SIGKILL of the
    node would skip; `realnode.teardown` removes whatever is left after ``timeout``.
    """
    kubectl_.run(
        "delete",
        "pods",
        "--all-namespaces",
        f"--field-selector=spec.nodeName={node}",
        "--grace-period=1",
        "--wait=false",
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and realnode.running_containers():
        time.sleep(0.5)


def running_components(run_dir: Path) -> list[str]:
    """Return the names of the recorded processes of ``run_dir`` that still run."""
    state = load_state(run_dir)
    if state is None:
        return []
    return [r.name for r in recorded_processes(state) if processes.is_running(r)]


def _cluster_running(run_dir: str) -> bool:
    return bool(running_components(Path(run_dir)))


def _etcd_healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:  # noqa: S310 - a loopback URL we built
            body: dict[str, Any] = json.load(response)
    except (OSError, ValueError):
        return False
    return body.get("health") == "true"


def _get_json(url: str, ca_file: Path, token: str | None) -> Any:  # noqa: ANN401 - any JSON
    """GET ``url`` over TLS checked against ``ca_file``; return its JSON body, None on failure."""
    context = ssl.create_default_context(cafile=str(ca_file))
    request = urllib.request.Request(url)  # noqa: S310 - a loopback URL we built
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:  # noqa: S310 - as above
            body = response.read()
    except (urllib.error.URLError, OSError):
        return None
    try:
        return json.loads(body)
    except ValueError:
        # /healthz and /readyz answer a plain "ok".
        return body.decode(errors="replace")


def _https_ok(url: str, ca_file: Path, token: str | None) -> bool:
    return _get_json(url, ca_file, token) is not None


def _ready_nodes(listing: Any) -> set[str]:  # noqa: ANN401 - a NodeList as decoded JSON, or None
    if not isinstance(listing, dict):
        return set()
    ready: set[str] = set()
    for node in listing.get("items", []):
        conditions = node.get("status", {}).get("conditions", [])
        if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            ready.add(node["metadata"]["name"])
    return ready


def load_state(run_dir: Path) -> dict[str, Any] | None:
    """Return a detached run's recorded state, or None if there is none."""
    try:
        state: dict[str, Any] = json.loads((run_dir / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    return state


def abandoned(state: dict[str, Any]) -> bool:
    """Tell whether a detached run's starter died before the run was up (its state says so)."""
    starter = state.get("starting")
    if not isinstance(starter, int):
        return False
    try:
        os.kill(starter, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def clear_abandoned(run_dir: Path) -> list[str] | None:
    """Stop what a detached run whose starter died left in ``run_dir``; None if there was none.

    Returns the names of the processes that were still running (``berth dev up`` and ``berth up
    --keep`` say so, then start afresh).
    """
    state = load_state(run_dir)
    if state is None or not abandoned(state):
        return None
    return stop_detached(run_dir)


def recorded_processes(state: dict[str, Any]) -> list[processes.ProcessRecord]:
    """Return the processes a state records, in start order."""
    return [processes.ProcessRecord(**p) for p in state.get("processes", [])]


def stop_detached(run_dir: Path, timeout: float = 10.0) -> list[str]:
    """Stop the processes of a detached run, newest first; return the names that were running."""
    state = load_state(run_dir)
    if state is None:
        return []
    records = recorded_processes(state)
    real = state.get("real_node")
    if real and any(r.name == "kubelet" and processes.is_running(r) for r in records):
        with contextlib.suppress(errors.DevClusterError, OSError):
            cache = binaries.BinaryCache.default()
            drain_real_node(kubectl.Kubectl(cache.find("kubectl"), Path(state["kubeconfig"])), real)
    stopped = [
        record.name for record in reversed(records) if processes.stop_recorded(record, timeout)
    ]
    if real:
        cache = binaries.BinaryCache.default()
        realnode.teardown(kube_proxy=cache.path("kube-proxy"))
        realnode.release(f"dir:{run_dir.resolve()}")
    (run_dir / STATE_FILE).unlink()
    return stopped
