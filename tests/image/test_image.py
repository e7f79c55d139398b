"""Berth's OCI image, built by ``scripts/image``, unpacked with umoci and run with runc.

No container engine runs here: the image is unpacked into an OCI runtime bundle and run by runc
as its configuration says (user 65532, its entrypoint and environment), with a read-only root,
no capabilities, ``/tmp`` on a tmpfs and ``/data`` a writable directory bound from this machine,
as a Kubernetes pod with ``readOnlyRootFilesystem`` and an ``emptyDir`` would run it. The
container shares this machine's network, so the operator inside reaches the local control plane
on loopback and the API server reaches its webhooks there.

The Dockerfile builds the same image for those who have Docker; it cannot be built here, so the
test compares what it declares with the configuration of the image ``scripts/image`` built.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shlex
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    ROOT,
    cluster_queue,
    condition,
    flavor,
    get,
    gpu_job,
    local_queue,
    workload_of,
)

pytestmark = pytest.mark.image
USER = 65532


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="session")
def image() -> Path:
    """The OCI layout of the image of HEAD (built, or taken from the cache)."""
    if os.geteuid() != 0:
        reason = "scripts/image needs root (mmdebstrap's root mode, runc)"
        if _in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    done = subprocess.run(
        [str(ROOT / "scripts" / "image")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    archive = Path(done.stdout.strip().splitlines()[-1])
    assert archive.is_file()
    return archive.parent / "oci"


def _image_config(oci: Path) -> dict[str, Any]:
    def blob(digest: str) -> dict[str, Any]:
        algorithm, value = digest.split(":")
        return json.loads((oci / "blobs" / algorithm / value).read_text())  # type: ignore[no-any-return]

    index = json.loads((oci / "index.json").read_text())
    (manifest_ref,) = [
        m
        for m in index["manifests"]
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "berth"
    ]
    manifest = blob(manifest_ref["digest"])
    return blob(manifest["config"]["digest"])


class Container:
    """One runc container from an unpacked bundle; stopped and deleted at the end."""

    def __init__(self, oci: Path, directory: Path) -> None:
        self.bundle = directory / "bundle"
        subprocess.run(
            ["umoci", "unpack", "--image", f"{oci}:berth", str(self.bundle)],
            check=True,
            capture_output=True,
        )
        self.id = f"berth-test-{secrets.token_hex(4)}"
        self.process: subprocess.Popen[bytes] | None = None

    def configure(self, args: list[str], mounts: list[tuple[Path, str, bool]]) -> None:
        """Run ``args``; read-only root, no capabilities, this machine's network; bind ``mounts``.

        Each mount is (source on this machine, target in the container, writable).
        """
        path = self.bundle / "config.json"
        config = json.loads(path.read_text())
        process = config["process"]
        process["terminal"] = False
        process["args"] = args
        process["capabilities"] = {k: [] for k in process["capabilities"]}
        config["root"]["readonly"] = True
        config["linux"]["namespaces"] = [
            n for n in config["linux"]["namespaces"] if n["type"] != "network"
        ]
        config["mounts"].append(
            {
                "destination": "/tmp",  # noqa: S108 - the container's own tmpfs
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "nodev", "mode=1777", "size=64m"],
            }
        )
        for source, target, writable in mounts:
            config["mounts"].append(
                {
                    "destination": target,
                    "type": "bind",
                    "source": str(source),
                    "options": ["rbind", "rw" if writable else "ro"],
                }
            )
        path.write_text(json.dumps(config))

    def run(
        self, args: list[str], mounts: list[tuple[Path, str, bool]] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``args`` in the container to the end; return what it printed."""
        self.configure(args, mounts or [])
        return subprocess.run(
            ["runc", "run", "--bundle", str(self.bundle), self.id],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def start(self, log: Path) -> None:
        """Start the configured process in the background, its output into ``log``."""
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                ["runc", "run", "--bundle", str(self.bundle), self.id],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def stop(self) -> int | None:
        """SIGTERM the container's process, wait for it, delete the container; its exit code."""
        code = None
        if self.process is not None:
            with contextlib.suppress(subprocess.CalledProcessError):
                subprocess.run(["runc", "kill", self.id, "TERM"], check=True, capture_output=True)
            try:
                code = self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
        subprocess.run(["runc", "delete", "--force", self.id], check=False, capture_output=True)
        return code


@pytest.fixture
def container(image: Path, tmp_path: Path) -> Iterator[Container]:
    """A fresh bundle of the image; the container is deleted afterwards."""
    c = Container(image, tmp_path)
    yield c
    c.stop()


def test_runs_as_its_own_user_on_a_read_only_root(container: Container) -> None:
    done = container.run(["/opt/berth/bin/berth", "--version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("berth, version ")
    done = container.run(["/bin/sh", "-c", "id -u; touch /opt/berth/x"])
    assert done.stdout.split() == [str(USER)]
    assert done.returncode != 0
    assert "Read-only file system" in done.stderr


def test_needs_nothing_but_a_data_volume(container: Container, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, USER, USER)
    probe = (
        "import getpass, os, pathlib, greenlet;"
        "print(os.getuid(), getpass.getuser(), pathlib.Path.home());"
        "pathlib.Path('/data/probe').write_text('ok')"
    )
    done = container.run(["/opt/berth/bin/python", "-c", probe], [(data, "/data", True)])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(USER), "berth", "/home/berth"]
    assert (data / "probe").read_text() == "ok"


def _dockerfile_final_stage() -> dict[str, Any]:
    """What the Dockerfile's last stage declares, as the image configuration would hold it."""
    lines = (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
    stages: list[list[str]] = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(text)
    # Each instruction as the image configuration's field holds it.
    fields: dict[str, tuple[str, Callable[[str], Any]]] = {
        "USER": ("User", str),
        "WORKDIR": ("WorkingDir", str),
        "EXPOSE": ("ExposedPorts", lambda rest: {p: {} for p in shlex.split(rest)}),
        "VOLUME": ("Volumes", lambda rest: {v: {} for v in shlex.split(rest)}),
        "ENTRYPOINT": ("Entrypoint", json.loads),
        "CMD": ("Cmd", json.loads),
    }
    declared: dict[str, Any] = {"Env": []}
    for text in stages[-1]:
        word, _, rest = text.partition(" ")
        if word.upper() == "ENV":
            declared["Env"].append(rest)
        elif word.upper() in fields:
            key, parse = fields[word.upper()]
            declared[key] = parse(rest)
    return declared


def test_dockerfile_declares_what_the_image_holds(image: Path) -> None:
    config = _image_config(image)["config"]
    declared = _dockerfile_final_stage()
    for key in ("User", "WorkingDir", "Entrypoint", "Cmd", "ExposedPorts", "Volumes"):
        assert declared.get(key) == config.get(key), key
    assert declared["Env"] == config["Env"]


def _portable_kubeconfig(plane: launcher.ControlPlane, directory: Path) -> str:
    """The admin kubeconfig with its CA inlined, readable by the image's user; its path inside."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    ca = plane.ca_file.read_bytes()

    for cluster in config["clusters"]:
        cluster["cluster"].pop("certificate-authority", None)
        cluster["cluster"]["certificate-authority-data"] = base64.b64encode(ca).decode()
    directory.mkdir(mode=0o700)
    os.chown(directory, USER, USER)
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    os.chown(path, USER, USER)
    path.chmod(0o600)
    return "/kube/kubeconfig"


def test_operator_from_the_image_admits_and_starts_a_job(
    container: Container,
    control_plane_factory: Callable[..., launcher.ControlPlane],
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
    tmp_path: Path,
) -> None:
    plane = control_plane_factory("image-cluster", scheduling=True, node_pools=(kwok.A100_POOL,))
    admin = plane.kubectl()
    admin.run("apply", "-f", str(ROOT / "crds"))
    admin.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    os.chown(data, USER, USER)
    inside = _portable_kubeconfig(plane, tmp_path / "kube")
    container.configure(
        [
            "/opt/berth/bin/berth",
            "run",
            f"--kubeconfig={inside}",
            "--metrics-port=0",
            "--lease-duration=4",
        ],
        [(tmp_path / "kube", "/kube", False), (data, "/data", True)],
    )
    log = tmp_path / "operator.log"
    container.start(log)
    try:
        wait_until(lambda: "primed:" in log.read_text(errors="replace"), timeout=90)
        ns = new_namespace(plane, "image-team")
        admin.apply(
            [
                flavor("image-a100", dict(kwok.A100_LABELS)),
                cluster_queue("image-cq", ns, {"image-a100": 8}),
                local_queue("lq", ns, "image-cq"),
            ]
        )
        admin.create([gpu_job("train", ns, "lq", 2, runs_for="2s")])
        wait_until(
            lambda: condition(workload_of(plane, ns, "train"), "Admitted").get("status") == "True",
            timeout=60,
        )
        wait_until(lambda: not get(plane, "job", "train", "-n", ns)["spec"]["suspend"], 30)
        assert (data / "history.db").exists(), "the history store lives on the data volume"
    finally:
        code = container.stop()
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            admin.run("delete", kind, "berth", "--ignore-not-found")
    assert code == 0, log.read_text(errors="replace")[-3000:]
    assert "Traceback" not in log.read_text(errors="replace")
