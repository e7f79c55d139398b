"""The ``realnode`` tier's cluster: the control plane with one real node and no kwok pools.

``real_cluster`` starts kube-controller-manager, kube-scheduler and a real node (containerd, runc,
CNI, a kubelet and kube-proxy; `berth.devtools.devcluster.realnode`) advertising 8 fake A100 GPUs,
once per test module. ``real_operator`` runs ``berth run`` against it. A machine without root or the
node's Debian packages skips the tier outside CI and fails it under ``CI=true``, where
``scripts/test`` installs them first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import yaml

from berth.devtools.devcluster import errors, kwok, launcher, realnode
from operator_env import ROOT, OperatorProcess

CONFIGURATION = {
    "apiVersion": "berth.dev/v1beta1",
    "kind": "Configuration",
    # Long enough for a busybox pod to start on this node, short enough to see a timeout; the
    # backoff outlasts the test, so an evicted Job stays suspended.
    "waitForPodsReady": {
        "timeout": "15s",
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 600},
    },
}
"""The operator's Configuration: waitForPodsReady on, so readiness is the kubelet's to report."""

REAL_NODE = realnode.RealNodeConfig(name="real-0", gpus=8, labels=tuple(kwok.A100_LABELS.items()))
"""The tier's node: 8 GPUs, labelled as the A100 flavor selects."""


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[launcher.ControlPlane]:
    """The control plane with the real node, one per test module; torn down after it.

    Per module, not per session: the machine holds one real node, and ``test_dev_real_node``
    starts its own with ``berth dev up``.
    """
    if missing := realnode.missing_prerequisites():
        why = "a real node needs " + "; ".join(missing)
        if _in_ci():
            pytest.fail(f"{why}; scripts/test installs them in CI", pytrace=False)
        pytest.skip(why)
    plane = launcher.ControlPlane(
        launcher.ControlPlaneConfig(
            run_dir=tmp_path_factory.mktemp("real-cluster"),
            scheduling=True,
            real_node=REAL_NODE,
        )
    )
    try:
        plane.start()
    except errors.MissingBinaryError as e:
        if _in_ci():
            pytest.fail(f"{e}; CI must build it (scripts/test runs the build)", pytrace=False)
        pytest.skip(str(e))
    yield plane
    plane.stop()


@pytest.fixture(scope="module")
def real_operator(
    real_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """``berth run`` on the host against ``real_cluster`` with `CONFIGURATION`, CRDs installed."""
    client = real_cluster.kubectl()
    client.run("apply", "-f", str(ROOT / "crds"))
    client.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    directory = tmp_path_factory.mktemp("operator")
    config = directory / "configuration.yaml"
    config.write_text(yaml.safe_dump(CONFIGURATION))
    op = OperatorProcess(real_cluster, directory / "operator.log", config=config)
    op.start()
    yield op
    op.stop()
