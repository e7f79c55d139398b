"""``berth bench harness --against kueue``: Kueue's harness, then Berth's, on the smoke config."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.devtools.devcluster import binaries

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_both_harnesses_run_the_smoke_config_and_are_compared_on_equal_terms(
    tmp_path: Path,
) -> None:
    cache = binaries.BinaryCache.default()
    missing = cache.missing((*binaries.KUEUE_HARNESS, "etcd", "kube-apiserver", "kubectl"))
    if missing:
        message = f"not built: {', '.join(missing)} (scripts/build-control-plane builds them)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    out = tmp_path / "both.yaml"
    done = subprocess.run(  # noqa: S603 - argv built here
        [
            str(Path(sys.executable).parent / "berth"),
            "bench",
            "harness",
            str(ROOT / "config" / "bench" / "smoke.yaml"),
            "--against=kueue",
            f"--out={out}",
            f"--dir={tmp_path / 'work'}",
            "--timeout=120",
            "--no-ceiling",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    s: dict[str, Any] = yaml.safe_load(out.read_text())
    kueue = s["kueue"]
    # Kueue's recorder saw every Workload of the config, and dropped none of their events.
    assert {c: v["count"] for c, v in kueue["workloadClasses"].items()} == {
        "large": 4,
        "medium": 8,
        "small": 24,
    }
    assert kueue["droppedWorkloadEvents"] == 0
    assert 0 < kueue["wallSeconds"] < 120
    assert kueue["controller"]["cpuSeconds"] > 0
    assert kueue["controller"]["peakRssMiB"] > 0
    # Berth ran on the same terms: Kueue's pacing, no webhook on the Workload path.
    assert s["creates"] == {"pacing": "sequential", "admissionWebhooks": False}
    assert s["finished"] == 36
    assert s["apiserver"]["webhooks"] == {}
    # Every class is compared. Kueue's recorder counts from the first watch event it records for
    # a Workload; on a busy machine that event can already show it admitted, so a small class can
    # average 0 ms there. Then the ratio is undefined and says so, never a number.
    for name in ("large", "medium", "small"):
        theirs = kueue["workloadClasses"][name]["averageTimeToAdmissionSeconds"]
        ratio = s["berthOverKueue"][f"average time to admission, {name} (s)"]
        assert theirs >= 0
        if theirs == 0:
            assert ratio is None
        else:
            assert ratio is not None
            assert ratio >= 0
    table = done.stdout.splitlines()
    assert table[0] == "| figure | Kueue | Berth | Berth ÷ Kueue |"
    assert any(line.startswith("| wall (s) |") for line in table)
