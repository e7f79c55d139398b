"""The control plane launcher's pure parts: pool and taint parsing, fake Nodes, PKI, the cache."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from cryptography import x509

from berth.devtools.devcluster import binaries, errors, kwok, launcher, pki, processes


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            "gpu=h100:NoSchedule", kwok.Taint("gpu", "h100", "NoSchedule"), id="key=value"
        ),
        pytest.param(
            "dedicated:NoExecute", kwok.Taint("dedicated", "", "NoExecute"), id="key-only"
        ),
        pytest.param(
            "example.com/x=a:b:PreferNoSchedule",
            kwok.Taint("example.com/x", "a:b", "PreferNoSchedule"),
            id="colon-in-value-splits-at-the-last",
        ),
    ],
)
def test_taints_parse_as_kubectl_writes_them(text: str, want: kwok.Taint) -> None:
    assert kwok.Taint.parse(text) == want


@pytest.mark.parametrize("text", ["gpu=h100", "gpu=h100:Sometimes", ":NoSchedule"])
def test_a_taint_without_a_key_or_a_known_effect_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="taint"):
        kwok.Taint.parse(text)


def test_a_pool_spec_sets_counts_labels_and_taints() -> None:
    pool = kwok.parse_pool(
        "name=h100,nodes=3,gpus=4,memory=1Ti,label=nvidia.com/gpu.product=H100,"
        "label=zone=a,taint=berth.dev/flavor=h100:NoSchedule"
    )
    assert pool == kwok.NodePool(
        name="h100",
        nodes=3,
        gpus_per_node=4,
        memory="1Ti",
        labels={"nvidia.com/gpu.product": "H100", "zone": "a"},
        taints=(kwok.Taint("berth.dev/flavor", "h100", "NoSchedule"),),
    )
    assert pool.gpus == 12


@pytest.mark.parametrize(
    ("spec", "want_error"),
    [
        pytest.param("nodes=2", "name= is required", id="no-name"),
        pytest.param("name=a,colour=red", "unknown key 'colour'", id="unknown-key"),
        pytest.param("name=a,nodes=two", "invalid literal", id="count-not-a-number"),
        pytest.param("name=a,label=novalue", "not key=value", id="label-without-value"),
        pytest.param("name=a,nodes=-1", "non-negative", id="negative-count"),
    ],
)
def test_a_bad_pool_spec_names_its_fault(spec: str, want_error: str) -> None:
    with pytest.raises(ValueError, match=want_error):
        kwok.parse_pool(spec)


def test_fake_nodes_carry_gpu_capacity_pool_label_and_the_kwok_annotation() -> None:
    pool = kwok.NodePool(
        name="a100", nodes=2, gpus_per_node=8, taints=(kwok.Taint("k", "v", "NoSchedule"),)
    )
    nodes = kwok.node_manifests([pool])
    assert [n["metadata"]["name"] for n in nodes] == ["a100-0", "a100-1"]
    node = nodes[1]
    assert node["status"]["allocatable"][kwok.GPU_RESOURCE] == "8"
    assert node["status"]["capacity"] == node["status"]["allocatable"]
    assert node["metadata"]["labels"][kwok.POOL_LABEL] == "a100"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "a100-1"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["spec"]["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]


def test_a_pool_without_gpus_offers_no_gpu_resource() -> None:
    (node,) = kwok.node_manifests([kwok.NodePool(name="cpu", nodes=1, gpus_per_node=0)])
    assert kwok.GPU_RESOURCE not in node["status"]["capacity"]


def test_pod_timing_sets_delay_and_jitter_alike_for_every_stage() -> None:
    timing = kwok.pod_timing("1h")
    assert timing["pod-complete.stage.kwok.x-k8s.io/delay"] == "1h"
    assert timing["pod-complete.stage.kwok.x-k8s.io/jitter-delay"] == "1h"
    assert timing["pod-create.stage.kwok.x-k8s.io/jitter-delay"] == "0s"
    assert timing["pod-ready.stage.kwok.x-k8s.io/delay"] == "0s"


def test_the_serving_certificate_is_signed_by_the_ca_and_names_loopback(tmp_path: Path) -> None:
    files = pki.write_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    serving = x509.load_pem_x509_certificate(files.serving_cert.read_bytes())
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert files.ca_key.stat().st_mode & 0o777 == 0o600
    assert files.service_account_key.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("env", "want"),
    [
        pytest.param({"BERTH_CACHE": "/c", "XDG_CACHE_HOME": "/x"}, "/c", id="berth-cache-wins"),
        pytest.param({"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/berth", id="xdg"),
        pytest.param({"HOME": "/h"}, "/h/.cache/berth", id="home"),
    ],
)
def test_the_cache_directory_follows_the_build_scripts_rule(env: dict[str, str], want: str) -> None:
    assert binaries.cache_dir(env) == Path(want)


def test_binaries_are_found_by_component_and_pinned_version(tmp_path: Path) -> None:
    versions = binaries.Versions(
        kubernetes="v1.2.3",
        etcd="v3.4.5",
        kwok="v0.1.0",
        helm="v3.0.0",
        helm_unittest="v1.0.0",
        jobset="v0.9.0",
        training_operator="v1.9.0",
        kuberay="v1.6.0",
        trainer="v2.3.0",
        kueue="v0.19.2",
    )
    cache = binaries.BinaryCache(tmp_path, versions)
    assert cache.path("kubectl") == tmp_path / "bin" / "kubectl-v1.2.3" / "kubectl"
    runner = tmp_path / "bin" / "kueue-perf-runner-v0.19.2" / "kueue-perf-runner"
    assert cache.path("kueue-perf-runner") == runner
    assert cache.path("minimalkueue").parent.name == "minimalkueue-v0.19.2"
    with pytest.raises(errors.MissingBinaryError, match="Kueue's CRDs"):
        cache.kueue_crds()
    assert cache.path("jobset") == tmp_path / "bin" / "jobset-v0.9.0" / "jobset"
    assert cache.path("kuberay") == tmp_path / "bin" / "kuberay-v1.6.0" / "kuberay"
    etcd = cache.path("etcd")
    etcd.parent.mkdir(parents=True)
    etcd.write_text("#!/bin/sh\n")
    etcd.chmod(0o755)
    assert cache.find("etcd") == etcd
    assert cache.missing(["etcd", "kube-apiserver"]) == ["kube-apiserver"]
    with pytest.raises(errors.MissingBinaryError, match="scripts/build-control-plane"):
        cache.find("kube-apiserver")


def test_the_pinned_versions_are_read_from_versions_yaml() -> None:
    versions = binaries.load_versions()
    assert versions.kubernetes.startswith("v1.")
    assert versions.etcd.startswith("v3.")
    assert versions.of("kube-scheduler") == versions.kubernetes


def _detached_sleep(tmp_path: Path) -> processes.ManagedProcess:
    child = processes.ManagedProcess(
        "sleeper", ["/bin/sleep", "60"], tmp_path / "sleeper.log", detach=True
    )
    child.start()
    # Until it has exec'd, /proc names the forking Python, not the recorded executable.
    deadline = time.monotonic() + 10
    while not processes.is_running(child.record()):
        assert time.monotonic() < deadline, "the sleeper never started"
        time.sleep(0.01)
    return child


def _state(tmp_path: Path, child: processes.ManagedProcess, starting: int | None) -> None:
    state = {
        "server": "",
        "kubeconfig": str(tmp_path / "kubeconfig"),
        "starting": starting,
        "real_node": None,
        "processes": [dataclasses.asdict(child.record())],
    }
    (tmp_path / launcher.STATE_FILE).write_text(json.dumps(state))


def test_a_run_whose_starter_died_is_stopped_and_one_still_starting_is_left(
    tmp_path: Path,
) -> None:
    child = _detached_sleep(tmp_path)
    try:
        # A starter that is alive (this process) is still starting the run: left alone.
        _state(tmp_path, child, os.getpid())
        assert launcher.clear_abandoned(tmp_path) is None
        assert processes.is_running(child.record())
        # A finished run (no starter recorded) is no one's leftover either.
        _state(tmp_path, child, None)
        assert launcher.clear_abandoned(tmp_path) is None
        # A starter that has exited: what it started is stopped and named.
        dead = _a_dead_pid()
        _state(tmp_path, child, dead)
        assert launcher.clear_abandoned(tmp_path) == ["sleeper"]
        assert not (tmp_path / launcher.STATE_FILE).exists()
    finally:
        child.kill()


def _a_dead_pid() -> int:
    done = subprocess.Popen(["/bin/true"])
    done.wait()
    return done.pid
