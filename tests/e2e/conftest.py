"""The operator for the e2e tier: ``berth run`` on the session's GPU cluster, CRDs installed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from berth.devtools.devcluster import launcher
from operator_env import ROOT, OperatorProcess


@pytest.fixture(scope="session")
def berth_operator(
    gpu_cluster: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator running against ``gpu_cluster``; its log is in the fixture's directory."""
    client = gpu_cluster.kubectl()
    client.run("apply", "-f", str(ROOT / "crds"))
    client.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    op = OperatorProcess(gpu_cluster, tmp_path_factory.mktemp("operator") / "operator.log")
    op.start()
    yield op
    op.stop()
