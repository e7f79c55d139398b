"""Fixtures that start the project's real control plane for the ``integration`` and ``e2e`` tiers.

``control_plane`` (integration): etcd + kube-apiserver, one per session.
``gpu_cluster`` (e2e): + kube-controller-manager, kube-scheduler and kwok with two fake GPU pools,
one per session; ``jobset_cluster``, ``kubeflow_cluster``, ``kuberay_cluster`` and
``trainer_cluster`` the same with the real JobSet controller, Kubeflow training-operator, KubeRay
operator or Kubeflow Trainer (beside JobSet).
``control_plane_factory`` starts a dedicated one for a test that needs a cluster of a particular
shape; all are stopped at the end of the session.

The binaries come from ``scripts/build-control-plane`` (``scripts/test`` runs it first). When one is
missing a test skips outside CI and fails under ``CI=true``: CI builds them, so a missing binary
there is a broken build, never a reason to pass. Each control plane's logs stay in its run directory
under pytest's temporary directory, and a failed test's report says where.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Protocol, TypedDict, Unpack

import pytest

from berth.devtools.devcluster import errors, frameworks, launcher
from operator_env import GPU_POOLS

if TYPE_CHECKING:
    from berth.devtools.devcluster import kubectl, kwok


class PlaneOptions(TypedDict, total=False):
    """The fields of `ControlPlaneConfig` a test may set (the factory chooses ``run_dir``)."""

    scheduling: bool
    node_pools: tuple[kwok.NodePool, ...]
    detach: bool
    start_timeout: float
    profiling: bool
    watch_cache: bool


class ControlPlaneFactory(Protocol):
    """Starts a control plane named ``name`` (its run directory's prefix) with ``config``."""

    def __call__(
        self, name: str = ..., **config: Unpack[PlaneOptions]
    ) -> launcher.ControlPlane: ...


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="session")
def control_plane_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ControlPlaneFactory]:
    """Start control planes on demand (keyword arguments of `ControlPlaneConfig`); stop them all."""
    started: list[launcher.ControlPlane] = []

    def start(name: str = "control-plane", **config: Unpack[PlaneOptions]) -> launcher.ControlPlane:
        run_dir = tmp_path_factory.mktemp(name)
        plane = launcher.ControlPlane(launcher.ControlPlaneConfig(run_dir=run_dir, **config))
        try:
            plane.start()
        except errors.MissingBinaryError as e:
            if _in_ci():
                pytest.fail(f"{e}; CI must build it (scripts/test runs the build)", pytrace=False)
            pytest.skip(str(e))
        started.append(plane)
        return plane

    yield start
    for plane in reversed(started):
        plane.stop()


@pytest.fixture(scope="session")
def control_plane(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """Etcd and kube-apiserver with RBAC, shared by the session's integration tests."""
    return control_plane_factory("apiserver")


@pytest.fixture(scope="session")
def gpu_cluster(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """The full control plane with the `GPU_POOLS` fake nodes, shared by the session's e2e tests."""
    return control_plane_factory("gpu-cluster", scheduling=True, node_pools=GPU_POOLS)


def _framework_cluster(factory: ControlPlaneFactory, framework: str) -> launcher.ControlPlane:
    plane = factory(f"{framework}-cluster", scheduling=True, node_pools=GPU_POOLS)
    try:
        frameworks.start(plane, framework)
    except errors.MissingBinaryError as e:
        if _in_ci():
            pytest.fail(f"{e}; CI must build it (scripts/test runs the build)", pytrace=False)
        pytest.skip(str(e))
    return plane


@pytest.fixture(scope="session")
def jobset_cluster(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """A full control plane like ``gpu_cluster`` with the real JobSet controller installed.

    Installed by ``devcluster.frameworks``; skipped outside CI, failed under it, when not built.
    """
    return _framework_cluster(control_plane_factory, "jobset")


@pytest.fixture(scope="session")
def kubeflow_cluster(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """A full control plane like ``gpu_cluster`` with the real Kubeflow training-operator v1."""
    return _framework_cluster(control_plane_factory, "training-operator")


@pytest.fixture(scope="session")
def trainer_cluster(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """A full control plane like ``gpu_cluster`` with the Kubeflow Trainer v2 and JobSet."""
    return _framework_cluster(control_plane_factory, "trainer")


@pytest.fixture(scope="session")
def kuberay_cluster(control_plane_factory: ControlPlaneFactory) -> launcher.ControlPlane:
    """A full control plane like ``gpu_cluster`` with the real KubeRay operator."""
    return _framework_cluster(control_plane_factory, "kuberay")


def new_namespace(plane: launcher.ControlPlane, prefix: str) -> str:
    """Create a uniquely named namespace and wait until pods may be created in it."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    client = plane.kubectl()
    client.run("create", "namespace", name)
    if plane.config.scheduling:
        # kube-controller-manager creates the namespace's default ServiceAccount a moment later;
        # until then the ServiceAccount admission plugin refuses pods.
        wait_until(lambda: _has_default_service_account(client, name), timeout=30)
    return name


@pytest.fixture(name="new_namespace")
def new_namespace_fixture() -> Callable[[launcher.ControlPlane, str], str]:
    """`new_namespace`, for tests."""
    return new_namespace


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., None]:
    """`wait_until`, for tests."""
    return wait_until


def _has_default_service_account(client: kubectl.Kubectl, namespace: str) -> bool:
    try:
        client.run("get", "serviceaccount", "default", "-n", namespace)
    except errors.CommandError:
        return False
    return True


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.25) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met after {timeout}s", pytrace=True)
        time.sleep(interval)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Name the control plane's log directory in the report of a failed test that used one."""
    report = yield
    if report.failed:
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, launcher.ControlPlane):
                report.sections.append(("control plane", f"logs in {value.logs}"))
    return report
