"""``berth bench harness`` on the smoke config, against a control plane of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import ControlPlaneFactory

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_harness_admits_and_finishes_every_smoke_workload_with_consistent_figures(
    control_plane_factory: ControlPlaneFactory, tmp_path: Path
) -> None:
    plane = control_plane_factory("bench-harness")
    out = tmp_path / "summary.yaml"
    done = subprocess.run(  # noqa: S603 - argv built here
        [
            str(Path(sys.executable).parent / "berth"),
            "bench",
            "harness",
            str(ROOT / "config" / "bench" / "smoke.yaml"),
            f"--kubeconfig={plane.kubeconfig}",
            f"--out={out}",
            f"--dir={tmp_path / 'work'}",
            "--timeout=120",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    s: dict[str, Any] = yaml.safe_load(out.read_text())
    assert s["workloads"] == s["created"] == s["admitted"] == s["finished"] == 36
    assert s["admissions"] == s["admitted"] + s["evictions"]
    assert 0 < s["wallSeconds"] < 120
    assert s["wallSeconds"] >= s["capacityBoundSeconds"] > 0
    for cls in s["workloadClasses"].values():
        assert cls["admitted"] == cls["count"]
        # A single slow admission can lift the mean above the nearest-rank p95, so each is only
        # bounded by the run itself.
        assert 0 <= cls["averageTimeToAdmissionSeconds"] <= s["wallSeconds"]
        assert 0 <= cls["p95TimeToAdmissionSeconds"] <= s["wallSeconds"]
    assert 0 < s["clusterQueueClasses"]["cq"]["usagePercent"] <= 100
    assert s["apiserver"]["requests"] >= s["apiserver"]["harnessRequests"] > 0
    assert s["apiserver"]["operatorRequestsPerAdmission"] > 0
    assert s["operator"]["cpuSeconds"] > 0
    assert s["operator"]["peakRssMiB"] > 0
    assert s["apiserverCeiling"]["statusPatchesPerSecond"] > 0
    assert 0 < s["ratioToCeiling"]["admissionsPerSecond"] < 1
