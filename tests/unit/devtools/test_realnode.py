"""The real node's pure parts: its spec, its configuration, its images, its iptables clean-up."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from berth.devtools.devcluster import images, realnode


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", realnode.RealNodeConfig()),
        ("name=gpu-box", realnode.RealNodeConfig(name="gpu-box")),
        (
            "gpus=4,label=a=b,label=c=",
            realnode.RealNodeConfig(gpus=4, labels=(("a", "b"), ("c", ""))),
        ),
    ],
)
def test_a_spec_names_the_node_its_gpus_and_labels(
    spec: str, expected: realnode.RealNodeConfig
) -> None:
    assert realnode.parse_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("gpus", "is not key=value"),
        ("gpus=eight", "not a whole number"),
        ("label=novalue", "label=key=value"),
        ("zone=a", "unknown key 'zone'"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_part(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        realnode.parse_spec(spec)


def test_the_kubelet_runs_cgroup_v1_with_x509_clients_and_keeps_its_images() -> None:
    config = realnode.kubelet_config("192.0.2.2", Path("/ca"), Path("/c"), Path("/k"))
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["authentication"] == {
        "anonymous": {"enabled": False},
        "webhook": {"enabled": True},
        "x509": {"clientCAFile": "/ca"},
    }
    assert config["imageGCHighThresholdPercent"] == 100


def test_containerd_restricts_oom_score_and_uses_the_local_sandbox_image() -> None:
    text = realnode.containerd_config()
    assert "restrict_oom_score_adj = true" in text
    assert f'sandbox_image = "{images.PAUSE_IMAGE}"' in text
    assert "SystemdCgroup = false" in text


def test_the_cni_network_is_a_masqueraded_bridge_of_its_own() -> None:
    plugins = realnode.cni_config()["plugins"]
    assert isinstance(plugins, list)
    bridge = plugins[0]
    assert bridge["bridge"] == realnode.BRIDGE
    assert bridge["ipMasq"] is True
    assert bridge["ipam"]["ranges"] == [[{"subnet": realnode.POD_CIDR}]]


DUMP = """*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:DOCKER - [0:0]
:KUBE-SERVICES - [0:0]
:CNI-1a2b - [0:0]
:CNI-ffff - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -s 10.88.0.2 -m comment --comment "name: \\"berth-node\\" id: \\"a\\"" -j CNI-1a2b
-A POSTROUTING -s 172.17.0.2/32 -m comment --comment "name: \\"other\\" id: \\"def\\"" -j CNI-ffff
-A POSTROUTING -o docker0 -j MASQUERADE
-A CNI-1a2b -d 10.88.0.0/16 -j ACCEPT
-A CNI-ffff -d 172.17.0.0/16 -j ACCEPT
COMMIT
"""


ORPHANED_CHAIN = """*nat
:POSTROUTING ACCEPT [0:0]
:CNI-45ad - [0:0]
-A CNI-45ad -d 10.88.0.0/16 -m comment --comment "name: \\"berth-node\\" id: \\"e\\"" -j ACCEPT
-A CNI-45ad ! -d 224.0.0.0/4 -m comment --comment "name: \\"berth-node\\" id: \\"e\\"" -j MASQUERADE
COMMIT
"""


def test_a_cni_chain_of_this_network_is_dropped_even_when_its_jump_is_gone() -> None:
    # Seen after a teardown that raced CNI's own DEL: the jump removed, the chain left.
    kept = realnode.without_node_rules(ORPHANED_CHAIN)
    assert "CNI-45ad" not in kept
    assert kept == "*nat\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n"


def test_the_clean_up_drops_kube_chains_and_this_networks_cni_chains_only() -> None:
    kept = realnode.without_node_rules(DUMP)
    assert "KUBE-" not in kept
    assert "CNI-1a2b" not in kept
    assert ":CNI-ffff - [0:0]" in kept
    assert "-A CNI-ffff -d 172.17.0.0/16 -j ACCEPT" in kept
    assert "-A POSTROUTING -o docker0 -j MASQUERADE" in kept
    assert kept.startswith("*nat\n")
    assert kept.rstrip().endswith("COMMIT")


@pytest.fixture
def fake_busybox(tmp_path: Path) -> Path:
    # A stand-in that answers --list as busybox does; the layer copies whatever file it is given.
    script = tmp_path / "busybox"
    script.write_text("#!/bin/sh\nprintf 'sh\\nsleep\\nbusybox\\n'\n")
    script.chmod(0o755)
    return script


def _read(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    assert member is not None, name
    return member.read()


def test_the_images_share_one_layer_are_reproducible_and_say_what_they_run(
    tmp_path: Path, fake_busybox: Path
) -> None:
    first = images.build_all(tmp_path / "a", fake_busybox)
    second = images.build_all(tmp_path / "b", fake_busybox)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    found = {}
    for archive in first:
        with tarfile.open(archive) as tar:
            (manifest,) = json.loads(_read(tar, "manifest.json"))
            config = json.loads(_read(tar, manifest["Config"]))
            layer = _read(tar, manifest["Layers"][0])
        found[manifest["RepoTags"][0]] = (config["config"], layer)
    pause, workload = found[images.PAUSE_IMAGE], found[images.WORKLOAD_IMAGE]
    assert pause[0]["Entrypoint"] == ["/bin/sleep", "infinity"]
    assert workload[0]["Cmd"] == ["/bin/sh"]
    assert pause[1] == workload[1]
    with tarfile.open(fileobj=io.BytesIO(workload[1])) as layer_tar:
        members = {m.name: m for m in layer_tar.getmembers()}
    assert members["bin/sh"].linkname == "busybox"
    assert members["bin/busybox"].isfile()
    assert {m.mtime for m in members.values()} == {0}
