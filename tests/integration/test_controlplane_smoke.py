"""The integration tier's control plane: a real etcd and kube-apiserver with RBAC on loopback."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from berth.devtools.devcluster import binaries, errors

if TYPE_CHECKING:
    from collections.abc import Callable

    from berth.devtools.devcluster import launcher

pytestmark = pytest.mark.integration


def test_api_server_reports_the_pinned_kubernetes_version(
    control_plane: launcher.ControlPlane,
) -> None:
    version = control_plane.kubectl().json("version")
    assert version["serverVersion"]["gitVersion"] == binaries.load_versions().kubernetes


def test_api_server_listens_on_loopback_with_its_own_ca(
    control_plane: launcher.ControlPlane,
) -> None:
    assert control_plane.server.startswith("https://127.0.0.1:")
    assert control_plane.ca_file.read_text().startswith("-----BEGIN CERTIFICATE-----")


def test_objects_are_stored_and_read_back(
    control_plane: launcher.ControlPlane, new_namespace: Callable[[launcher.ControlPlane, str], str]
) -> None:
    client = control_plane.kubectl()
    namespace = new_namespace(control_plane, "smoke")
    client.run("create", "configmap", "probe", "-n", namespace, "--from-literal=answer=42")
    stored = client.json("get", "configmap", "probe", "-n", namespace)
    assert stored["data"] == {"answer": "42"}


def test_rbac_refuses_a_service_account_without_a_role(
    control_plane: launcher.ControlPlane,
) -> None:
    client = control_plane.kubectl()
    nobody = "--as=system:serviceaccount:default:nobody"
    assert (
        client.run(
            "auth",
            "can-i",
            "list",
            "pods",
            "--all-namespaces",
            "--as=berth-admin",
            "--as-group=system:masters",
        ).strip()
        == "yes"
    )
    with pytest.raises(errors.CommandError) as refused:
        client.run("get", "pods", "-n", "default", nobody)
    assert "forbidden" in refused.value.stderr.lower()


def test_a_token_the_api_server_does_not_know_is_refused(
    control_plane: launcher.ControlPlane,
) -> None:
    client = control_plane.kubectl()
    with pytest.raises(errors.CommandError) as refused:
        client.run("get", "namespaces", f"--server={control_plane.server}", "--token=not-a-token")
    assert "unauthorized" in refused.value.stderr.lower()
