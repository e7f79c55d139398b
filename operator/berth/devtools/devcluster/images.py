"""The real node's two small images, built here with no registry and no container engine.

No registry is reachable from this machine, so the images a real node runs are built locally as
docker-archives (the format ``docker save`` writes and ``ctr images import`` reads) and imported
into its containerd by `berth.devtools.devcluster.realnode`:

- ``berth.dev/busybox:1`` -- Debian's statically linked busybox as ``/bin/busybox`` with a link for
  each of its applets (``sh``, ``sleep``, ``wget``, ``nc``, ...), ``PATH=/bin``: the workload image
  of the real-node tests and of ``scripts/up``'s demo Jobs.
- ``berth.dev/pause:1`` -- the same single layer, run as ``sleep infinity``: the pod sandbox
  (containerd's ``sandbox_image``), which only has to hold the pod's namespaces open.

Both are byte-identical from one build to the next for one busybox binary: every tar member has
mtime 0, owner root and a fixed order, so the layer's digest names the busybox it carries. Berth's
own image comes from ``scripts/image``. Called by the real node when it starts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
"""Debian's ``busybox-static``, installed by ``scripts/setup-real-node``."""

WORKLOAD_IMAGE = "berth.dev/busybox:1"
"""The image the real-node tests' pods run."""

PAUSE_IMAGE = "berth.dev/pause:1"
"""The pod sandbox image containerd is configured with."""


@dataclasses.dataclass(frozen=True, slots=True)
class ImageSpec:
    """One image over the busybox layer: its reference and what it runs."""

    reference: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]


IMAGES = (
    ImageSpec(WORKLOAD_IMAGE, entrypoint=(), cmd=("/bin/sh",)),
    ImageSpec(PAUSE_IMAGE, entrypoint=("/bin/sleep", "infinity"), cmd=()),
)


def _member(name: str, kind: bytes, *, size: int = 0, mode: int = 0o755) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _applets(busybox: Path) -> list[str]:
    listing = subprocess.run(  # noqa: S603 - the fixed busybox path, no shell
        [str(busybox), "--list"], check=True, capture_output=True, text=True
    ).stdout
    return sorted({name for name in listing.split() if name and name != "busybox"})


def busybox_layer(busybox: Path = BUSYBOX) -> bytes:
    """Return the uncompressed layer tarball: ``/bin/busybox``, its applet links, ``/tmp``."""
    data = busybox.read_bytes()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_member("bin", tarfile.DIRTYPE))
        tar.addfile(_member("bin/busybox", tarfile.REGTYPE, size=len(data)), io.BytesIO(data))
        for applet in _applets(busybox):
            link = _member(f"bin/{applet}", tarfile.SYMTYPE, mode=0o777)
            link.linkname = "busybox"
            tar.addfile(link)
        # Writable scratch space and the mount points the runtime fills in.
        tar.addfile(_member("tmp", tarfile.DIRTYPE, mode=0o1777))
        for directory in ("etc", "proc", "sys", "dev"):
            tar.addfile(_member(directory, tarfile.DIRTYPE))
    return out.getvalue()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_archive(spec: ImageSpec, layer: bytes, path: Path) -> Path:
    """Write ``spec`` over ``layer`` as a docker-archive at ``path``; return ``path``."""
    diff_id = _sha256(layer)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Env": ["PATH=/bin"],
            "Entrypoint": list(spec.entrypoint) or None,
            "Cmd": list(spec.cmd) or None,
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "berth devcluster images"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_name = f"{_sha256(config_bytes)}.json"
    manifest = [
        {"Config": config_name, "RepoTags": [spec.reference], "Layers": [f"{diff_id}/layer.tar"]}
    ]
    files = {
        config_name: config_bytes,
        f"{diff_id}/layer.tar": layer,
        "manifest.json": json.dumps(manifest, separators=(",", ":")).encode(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_member(diff_id, tarfile.DIRTYPE))
        for name, data in files.items():
            tar.addfile(
                _member(name, tarfile.REGTYPE, size=len(data), mode=0o644), io.BytesIO(data)
            )
    return path


def build_all(directory: Path, busybox: Path = BUSYBOX) -> list[Path]:
    """Write every image of `IMAGES` into ``directory``; return the archives' paths."""
    layer = busybox_layer(busybox)
    return [
        write_archive(
            spec, layer, directory / f"{spec.reference.split('/')[-1].replace(':', '-')}.tar"
        )
        for spec in IMAGES
    ]
