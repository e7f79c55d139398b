"""One real node beside the kwok pools: containerd, runc, the CNI bridge, a kubelet and kube-proxy.

Everything Berth admits on kwok nodes only pretends to run; on this node the pods are real
processes in real containers, kube-scheduler binds them against a real kubelet's capacity, probes
are run by the kubelet, and Services route through kube-proxy's iptables rules. Only the device
is not real: the node advertises ``nvidia.com/gpu`` by a patch of its status (what docs/install.md
tells kind users to do), and its flavor labels through ``--node-labels``.

What it takes on a machine of this kind, and why each setting is here:

- containerd (Debian's 1.6) with ``restrict_oom_score_adj``: root here lacks CAP_SYS_RESOURCE, so
  without it every sandbox fails with ``can't get final child's PID from pipe: EOF``; the cgroupfs
  driver (no systemd); its sandbox image built locally (`images`), since no registry answers.
- the kubelet with ``failCgroupV1: false`` (the hosts run cgroup v1), image garbage collection
  off (the imported images could never be pulled again), x509 client authentication against the
  control plane's CA with anonymous access off, and authorization by the API server.
- the CNI bridge, host-local and portmap plugins (Debian's containernetworking-plugins, in
  ``/usr/lib/cni``) on a bridge of its own, ``berth-cni0``, with a pod range of its own.
- kube-proxy in iptables mode, so the API server reaches the webhook Service and pods reach the
  API server's ClusterIP; its conntrack settings are left as the host has them.

The kubelet's fixed paths (``/var/lib/kubelet/device-plugins``, the ``/kubepods`` cgroups) and
ports make one real node per machine: a lock file says who has it. `teardown` removes everything
a node leaves -- containers, shims, mounts, network namespaces, iptables chains, the bridge,
cgroups, the sysctls it changed -- and also runs before a start, so an ``up`` after a SIGKILLed
one starts clean. Called by `berth.devtools.devcluster.launcher` and ``berth dev down``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from berth.devtools.devcluster import errors, images, processes

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

ROOT = Path("/var/lib/berth-node")
"""containerd's content and snapshots, the kubelet's root directory, CNI's IP allocations."""

STATE = Path("/run/berth-node")
"""Sockets, containerd's runtime state, the CNI configuration and the sysctls saved at start."""

SOCKET = STATE / "containerd.sock"
"""containerd's socket, which the kubelet and every ``ctr`` call here talk to."""

LOCK = Path("/run/berth-node.owner")
"""Names who holds the node (`claim`), so a second node on the machine is refused."""

BRIDGE = "berth-cni0"
"""The Linux bridge the pods' veths join; its address is the pods' gateway."""

POD_CIDR = "10.88.0.0/16"
"""The pods' addresses (host-local IPAM), also kube-proxy's cluster CIDR."""

CNI_NETWORK = "berth-node"
"""The CNI network name; the bridge plugin's masquerade rules carry it in their comment."""

CNI_PLUGINS = Path("/usr/lib/cni")
"""Where Debian's containernetworking-plugins put the plugins."""

KUBELET_PORT = 10250
KUBELET_HEALTHZ_PORT = 10248
PROXY_HEALTHZ_PORT = 10256
PROXY_METRICS_PORT = 10249

KUBELET_PLUGIN_DIR = Path("/var/lib/kubelet")
"""Fixed in the kubelet for device plugins and pod resources, whatever its root directory."""

_SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/route_localnet",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
)
"""Set by the node or by kube-proxy; saved at start and put back by `teardown`."""

_DEBIAN_PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "ctr": "containerd",
    "iptables": "iptables",
    "iptables-save": "iptables",
    "conntrack": "conntrack",
}
"""The host commands the node needs and the Debian package of each."""


@dataclasses.dataclass(frozen=True, slots=True)
class RealNodeConfig:
    """The real node's name, its fake GPUs and the labels that put it in a flavor."""

    name: str = "real-0"
    gpus: int = 8
    labels: tuple[tuple[str, str], ...] = ()


def parse_spec(spec: str) -> RealNodeConfig:
    """Parse ``--real-node``'s ``name=real-0,gpus=8,label=k=v...`` (every key optional)."""
    name, gpus, labels = "real-0", 8, []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"{part!r} is not key=value (keys: name, gpus, label)")
        if key == "name":
            name = value
        elif key == "gpus":
            if not value.isdigit():
                raise ValueError(f"gpus={value!r} is not a whole number")
            gpus = int(value)
        elif key == "label":
            label_key, label_sep, label_value = value.partition("=")
            if not label_sep or not label_key:
                raise ValueError(f"label={value!r} is not label=key=value")
            labels.append((label_key, label_value))
        else:
            raise ValueError(f"unknown key {key!r} in {spec!r} (keys: name, gpus, label)")
    return RealNodeConfig(name=name, gpus=gpus, labels=tuple(labels))


def missing_prerequisites() -> list[str]:
    """Return what this machine lacks for a real node, each with how to get it."""
    missing: list[str] = []
    if os.geteuid() != 0:
        missing.append("root (containerd, the kubelet and iptables need it)")
    packages = sorted({pkg for cmd, pkg in _DEBIAN_PACKAGES.items() if shutil.which(cmd) is None})
    if not all((CNI_PLUGINS / p).exists() for p in ("bridge", "host-local", "loopback")):
        packages.append("containernetworking-plugins")
    if not images.BUSYBOX.exists():
        packages.append("busybox-static")
    if packages:
        missing.append(
            f"Debian packages {', '.join(packages)} (scripts/setup-real-node installs them)"
        )
    return missing


def node_ip() -> str:
    """Return the host's primary IPv4 address: the source of its default route.

    The API server binds to it and pods reach it through the bridge, which loopback cannot do.
    """
    # Any address outside the local networks is routed by the default route (nothing is sent).
    argv = ["ip", "-j", "route", "get", "203.0.113.1"]
    out = subprocess.run(argv, check=False, capture_output=True, text=True)  # noqa: S603 - fixed argv
    with contextlib.suppress(ValueError, IndexError, KeyError):
        src: str = json.loads(out.stdout)[0]["prefsrc"]
        return src
    raise errors.DevClusterError(
        "a real node needs an IPv4 address with a default route; `ip route` shows none"
    )


# -- files ----------------------------------------------------------------------------------------


def containerd_config() -> str:
    """Return containerd's configuration (version 2, CRI plugin) for the node's directories."""
    return f"""version = 2
root = "{ROOT / "containerd"}"
state = "{STATE / "containerd"}"

[grpc]
  address = "{SOCKET}"

[ttrpc]
  address = "{STATE / "containerd.sock.ttrpc"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{images.PAUSE_IMAGE}"
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails to start.
  restrict_oom_score_adj = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_PLUGINS}"
    conf_dir = "{STATE / "cni" / "net.d"}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
"""


def cni_config() -> dict[str, object]:
    """Return the CNI network: a bridge with masquerade, host-local addresses, host ports."""
    return {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": True,
                # A pod reaching itself through its own Service comes back over the same port.
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(ROOT / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(ip: str, ca_file: Path, cert: Path, key: Path) -> dict[str, object]:
    """Return the KubeletConfiguration: cgroupfs on cgroup v1, x509 clients, no image GC."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "tlsCertFile": str(cert),
        "tlsPrivateKeyFile": str(key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{SOCKET}",
        "cgroupDriver": "cgroupfs",
        # The hosts of this kind run cgroup v1; the kubelet refuses it unless told otherwise.
        "failCgroupV1": False,
        "failSwapOn": False,
        "resolvConf": "/etc/resolv.conf",
        "clusterDomain": "cluster.local",
        # The imported images cannot be pulled again: never collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%"},
        "serializeImagePulls": False,
        "registerNode": True,
        "maxPods": 110,
        "staticPodPath": "",
        "shutdownGracePeriod": "0s",
    }


def kube_proxy_config(kubeconfig: Path, name: str) -> dict[str, object]:
    """Return the KubeProxyConfiguration: iptables mode, the host's conntrack left alone."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "hostnameOverride": name,
        "healthzBindAddress": f"127.0.0.1:{PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": f"127.0.0.1:{PROXY_METRICS_PORT}",
        # Zero leaves the host's conntrack table size and timeouts as they are.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


# -- running --------------------------------------------------------------------------------------


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    # Host tools (ip, umount, ctr, iptables) are found on PATH, as the kubelet finds them.
    return subprocess.run(argv, check=check, capture_output=True, text=True)  # noqa: S603 - argv built here


def _read_sysctl(name: str) -> str | None:
    try:
        return (Path("/proc/sys") / name).read_text().strip()
    except OSError:
        return None


def _write_sysctl(name: str, value: str) -> None:
    with contextlib.suppress(OSError):
        (Path("/proc/sys") / name).write_text(value + "\n")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim(owner: str, in_use: Callable[[str], bool]) -> None:
    """Record ``owner`` in `LOCK` as the node's holder, unless a live holder is recorded there.

    ``owner`` is ``pid:<n>`` for a node that lives as long as the process that started it, or
    ``dir:<run dir>`` for a detached one (``berth dev up``); ``in_use`` tells whether a recorded
    run directory's cluster still runs. A holder that is gone -- a SIGKILLed ``up``, a crashed
    test run -- leaves only leftovers, which `teardown` removes before the new node starts.
    """
    with contextlib.suppress(OSError):
        holder = LOCK.read_text().strip()
        kind, _, value = holder.partition(":")
        live = (
            kind == "pid" and value.isdigit() and int(value) != os.getpid() and _alive(int(value))
        ) or (kind == "dir" and f"dir:{value}" != owner and in_use(value))
        if live:
            raise errors.DevClusterError(
                f"a real node is already up on this machine (held by {holder}); only one can run: "
                "stop it first (`berth dev down`, or end the test run that started it)"
            )
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    LOCK.write_text(owner + "\n")


def release(owner: str) -> None:
    """Forget ``owner``'s claim, if it is still the recorded one."""
    with contextlib.suppress(OSError):
        if LOCK.read_text().strip() == owner:
            LOCK.unlink()


def save_sysctls() -> None:
    """Record the sysctls the node changes, unless a previous start already did."""
    saved = STATE / "sysctls.json"
    if saved.exists():
        return
    STATE.mkdir(parents=True, exist_ok=True)
    values = {name: _read_sysctl(name) for name in _SYSCTLS}
    saved.write_text(json.dumps(values))


def prepare_host() -> None:
    """Set what pods and kube-proxy need: forwarding, bridged traffic through iptables."""
    save_sysctls()
    _write_sysctl("net/ipv4/ip_forward", "1")
    _write_sysctl("net/bridge/bridge-nf-call-iptables", "1")
    _write_sysctl("net/bridge/bridge-nf-call-ip6tables", "1")
    # The suite's many control planes each hold inotify instances; the kubelet needs its own.
    if int(_read_sysctl("fs/inotify/max_user_instances") or 0) < 1024:
        _write_sysctl("fs/inotify/max_user_instances", "1024")


def _ctr(*args: str) -> subprocess.CompletedProcess[str] | None:
    """Run ``ctr`` against the node's containerd in its ``k8s.io`` namespace; None before start."""
    if not SOCKET.exists():
        return None
    ctr = shutil.which("ctr") or "ctr"
    return _run([ctr, "--address", str(SOCKET), "-n", "k8s.io", *args], check=False)


def import_archive(archive: Path) -> None:
    """Import a docker-archive (``scripts/image``'s, or one of `images`) into the node's containerd.

    Pods then run it with ``imagePullPolicy: Never`` or ``IfNotPresent``: nothing is pulled.
    """
    result = _ctr("images", "import", str(archive))
    if result is None or result.returncode != 0:
        why = "containerd is not running" if result is None else result.stderr.strip()
        raise errors.DevClusterError(f"ctr could not import {archive}: {why}")


def import_images(directory: Path) -> list[str]:
    """Build the node's own images (`images`) into ``directory`` and import them."""
    imported: list[str] = []
    for archive in images.build_all(directory):
        import_archive(archive)
        imported.append(archive.name)
    return imported


def _node_pids() -> list[int]:
    # Every process of a node names a file under STATE on its command line: containerd, the
    # kubelet and kube-proxy their configuration, each containerd shim (started in a session of
    # its own, so stopping containerd leaves it) the socket's address.
    needle = str(STATE).encode()
    pids: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
    return pids


def _cgroup_dirs() -> list[Path]:
    # The kubelet's pod cgroups under every mounted v1 controller (and the unified hierarchy).
    found: list[Path] = []
    base = Path("/sys/fs/cgroup")
    for controller in sorted(base.iterdir()) if base.exists() else []:
        pods = controller / "kubepods"
        if pods.is_dir():
            found.append(pods)
    return found


def _find(root: Path, pattern: str) -> list[Path]:
    # Containers' cgroups come and go while the tree is walked; a walk that meets one vanishing
    # is simply taken again.
    for _attempt in range(5):
        try:
            return list(root.rglob(pattern))
        except OSError:
            continue
    return []


def _kill_members(procs_files: Iterable[Path]) -> int:
    """SIGKILL every process listed in these ``cgroup.procs`` files; return how many."""
    killed = 0
    for procs in procs_files:
        with contextlib.suppress(OSError):
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
                    killed += 1
    return killed


def _kill_cgroup_tree(root: Path) -> None:
    _kill_members(_find(root, "cgroup.procs"))


def kill_pod(uid: str) -> int:
    """SIGKILL every process of the pod ``uid`` on the real node, as a crash would; return how many.

    The kubelet keeps each pod in a cgroup named ``pod<uid>`` under ``kubepods``; nothing inside
    the pod can SIGKILL its own PID 1, so a test of a crashed replica kills it from here.
    """
    return sum(
        _kill_members(p for d in _find(pods, f"pod{uid}") for p in _find(d, "cgroup.procs"))
        for pods in _cgroup_dirs()
    )


def _remove_cgroup_tree(root: Path) -> None:
    for directory in sorted(
        (p for p in _find(root, "*") if p.is_dir()), key=lambda p: -len(p.parts)
    ):
        with contextlib.suppress(OSError):
            directory.rmdir()
    with contextlib.suppress(OSError):
        root.rmdir()


def _mounts_under(prefixes: Sequence[Path]) -> list[str]:
    points: list[str] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if any(point == str(p) or point.startswith(f"{p}/") for p in prefixes):
                points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))


def _cni_namespaces() -> list[Path]:
    netns = Path("/var/run/netns")
    return sorted(netns.glob("cni-*")) if netns.is_dir() else []


def without_node_rules(dump: str) -> str:
    """Return an ``iptables-save`` dump without kube-proxy's, the kubelet's and our CNI's rules.

    Dropped: every chain named ``KUBE-...`` and every rule naming one; the ``CNI-...`` chains the
    bridge plugin made for this node's network (their POSTROUTING jump carries the network's name
    in its comment, as do the chain's own rules) and the rules naming them. Everyone else's rules
    and chains stay.
    """
    lines = dump.splitlines()
    # Every rule the bridge plugin writes for this network names it in its comment: the
    # POSTROUTING jump and the chain's own rules, so a chain whose jump is already gone is found.
    ours_cni = {
        word
        for line in lines
        if line.startswith("-A ") and f'name: \\"{CNI_NETWORK}\\"' in line
        for word in line.split()
        if word.startswith("CNI-")
    }

    def ours(line: str) -> bool:
        words = {w.lstrip(":") for w in line.split()}
        return any(w.startswith("KUBE-") for w in words) or bool(words & ours_cni)

    return "\n".join(line for line in lines if not ours(line)) + "\n"


def _drop_iptables_rules(save: str, restore: str) -> None:
    dump = _run([save], check=False).stdout
    if not dump:
        return
    kept = without_node_rules(dump)
    if kept.strip() != dump.strip():
        subprocess.run([restore], input=kept, check=False, capture_output=True, text=True)  # noqa: S603 - fixed argv


def _stop_leftover_processes() -> list[str]:
    leftovers = _node_pids()
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for cgroup in _cgroup_dirs():
        _kill_cgroup_tree(cgroup)
    if not leftovers:
        return []
    time.sleep(0.2)
    return [f"{len(leftovers)} processes (containerd, its shims, kubelet, kube-proxy)"]


def _unmount_everything() -> list[str]:
    removed: list[str] = []
    for netns in _cni_namespaces():
        _run(["umount", "-l", str(netns)], check=False)
        with contextlib.suppress(OSError):
            netns.unlink()
        removed.append(f"netns {netns.name}")
    mounts = _mounts_under([ROOT, STATE, KUBELET_PLUGIN_DIR])
    for point in mounts:
        _run(["umount", "-l", point], check=False)
    return [*removed, f"{len(mounts)} mounts"] if mounts else removed


def _remove_network(kube_proxy: Path | None) -> list[str]:
    if kube_proxy is not None and kube_proxy.exists():
        _run([str(kube_proxy), "--cleanup"], check=False)
    for save, restore in (
        ("iptables-save", "iptables-restore"),
        ("ip6tables-save", "ip6tables-restore"),
    ):
        if shutil.which(save) and shutil.which(restore):
            _drop_iptables_rules(save, restore)
    if _run(["ip", "link", "show", BRIDGE], check=False).returncode != 0:
        return []
    _run(["ip", "link", "delete", BRIDGE], check=False)
    return [f"bridge {BRIDGE}"]


def _restore_sysctls() -> list[str]:
    saved = STATE / "sysctls.json"
    try:
        values = json.loads(saved.read_text())
    except (OSError, ValueError):
        return []
    for name, value in values.items():
        if value is not None:
            _write_sysctl(name, value)
    return ["sysctls restored"]


def _remove_directories() -> list[str]:
    removed: list[str] = []
    for directory in (ROOT, STATE):
        if directory.exists():
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(str(directory))
    # The kubelet makes these whatever its root directory: remove them only if nothing else is.
    with contextlib.suppress(OSError):
        if KUBELET_PLUGIN_DIR.is_dir() and {p.name for p in KUBELET_PLUGIN_DIR.iterdir()} <= {
            "device-plugins",
            "pod-resources",
        }:
            shutil.rmtree(KUBELET_PLUGIN_DIR)
            removed.append(str(KUBELET_PLUGIN_DIR))
    return removed


def teardown(*, kube_proxy: Path | None = None) -> list[str]:
    """Remove whatever a real node left on this machine; return what was found and removed.

    In order: its processes (and every container, by its cgroup), the pods' network namespaces
    and every mount under the node's directories, kube-proxy's, the kubelet's and CNI's iptables
    rules, the bridge, the pod cgroups, the sysctls as they were, the directories. Safe to run when
    nothing is there, and after a SIGKILL of the process that started the node.
    """
    removed = _stop_leftover_processes()
    removed += _unmount_everything()
    removed += _remove_network(kube_proxy)
    for cgroup in _cgroup_dirs():
        _remove_cgroup_tree(cgroup)
        removed.append(f"cgroup {cgroup}")
    removed += _restore_sysctls()
    return removed + _remove_directories()


def write_files(
    config: RealNodeConfig,
    *,
    ip: str,
    ca_file: Path,
    cert: Path,
    key: Path,
    proxy_kubeconfig: Path,
) -> dict[str, Path]:
    """Write containerd's, CNI's, the kubelet's and kube-proxy's configuration; return the paths."""
    for directory in (ROOT / "containerd", ROOT / "kubelet", ROOT / "cni", STATE / "cni" / "net.d"):
        directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "containerd": STATE / "containerd.toml",
        "cni": STATE / "cni" / "net.d" / f"10-{CNI_NETWORK}.conflist",
        "kubelet": STATE / "kubelet.yaml",
        "kube-proxy": STATE / "kube-proxy.yaml",
    }
    paths["containerd"].write_text(containerd_config())
    paths["cni"].write_text(json.dumps(cni_config(), indent=2) + "\n")
    paths["kubelet"].write_text(yaml.safe_dump(kubelet_config(ip, ca_file, cert, key)))
    paths["kube-proxy"].write_text(yaml.safe_dump(kube_proxy_config(proxy_kubeconfig, config.name)))
    return paths


def containerd_argv(binary: str, config_file: Path) -> list[str]:
    """Return containerd's command line."""
    return [binary, "--config", str(config_file), "--log-level", "warn"]


def kubelet_argv(
    binary: Path, config: RealNodeConfig, *, ip: str, config_file: Path, kubeconfig: Path
) -> list[str]:
    """Return the kubelet's command line: the node's name, address, labels and root directory."""
    argv = [
        str(binary),
        f"--config={config_file}",
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={config.name}",
        f"--node-ip={ip}",
        f"--root-dir={ROOT / 'kubelet'}",
        "--v=1",
    ]
    if config.labels:
        argv.append("--node-labels=" + ",".join(f"{k}={v}" for k, v in config.labels))
    return argv


def kube_proxy_argv(binary: Path, config_file: Path) -> list[str]:
    """Return kube-proxy's command line."""
    return [str(binary), f"--config={config_file}", "--v=1"]


def running_containers() -> list[str]:
    """Return the ids of the containers (pods' and sandboxes) containerd still runs."""
    out = _ctr("tasks", "ls", "-q")
    return out.stdout.split() if out is not None and out.returncode == 0 else []


def socket_ready() -> bool:
    """Tell whether containerd answers on the node's socket."""
    out = _ctr("version")
    return out is not None and out.returncode == 0


def start_processes(
    spawn: Callable[[str, list[str]], processes.ManagedProcess],
    config: RealNodeConfig,
    *,
    kubelet: Path,
    kube_proxy: Path,
    ip: str,
    paths: dict[str, Path],
    kubelet_kubeconfig: Path,
    images_dir: Path,
    timeout: float,
) -> dict[str, float]:
    """Start containerd (importing the images), the kubelet and kube-proxy; return their seconds.

    ``spawn`` is the launcher's, so the processes stop with the control plane.
    """
    timings: dict[str, float] = {}
    containerd_bin = shutil.which("containerd") or "containerd"
    process = spawn("containerd", containerd_argv(containerd_bin, paths["containerd"]))
    timings["containerd"] = process.wait_ready(socket_ready, timeout)
    started = time.monotonic()
    import_images(images_dir)
    timings["images"] = time.monotonic() - started
    process = spawn(
        "kubelet",
        kubelet_argv(
            kubelet, config, ip=ip, config_file=paths["kubelet"], kubeconfig=kubelet_kubeconfig
        ),
    )
    timings["kubelet"] = process.wait_ready(
        lambda: _http_ok(f"http://127.0.0.1:{KUBELET_HEALTHZ_PORT}/healthz"), timeout
    )
    process = spawn("kube-proxy", kube_proxy_argv(kube_proxy, paths["kube-proxy"]))
    timings["kube-proxy"] = process.wait_ready(
        lambda: _http_ok(f"http://127.0.0.1:{PROXY_HEALTHZ_PORT}/healthz"), timeout
    )
    return timings


def _http_ok(url: str) -> bool:
    import urllib.error  # noqa: PLC0415 - only the probes need it
    import urllib.request  # noqa: PLC0415 - as above

    try:
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 - a loopback URL built here
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def gpu_status_patch(gpus: int) -> dict[str, object]:
    """Return the Node status patch that advertises ``gpus`` fake ``nvidia.com/gpu``."""
    amount = str(gpus)
    return {
        "status": {
            "capacity": {"nvidia.com/gpu": amount},
            "allocatable": {"nvidia.com/gpu": amount},
        }
    }
