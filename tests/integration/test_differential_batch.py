"""A fixed-seed batch of random cases: real Kueue (minimalkueue) and the simulator agree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from berth.devtools.devcluster import binaries
from berth.devtools.differential import campaign, compare

pytestmark = pytest.mark.integration

SEED = 1
CASES = 24
"""About a minute and a half on two CPUs: one API server, the cases side by side."""


def _require_kueue_harness() -> None:
    cache = binaries.BinaryCache.default()
    missing = cache.missing((*binaries.KUEUE_HARNESS, "etcd", "kube-apiserver"))
    if missing:
        message = f"not built: {', '.join(missing)} (scripts/build-control-plane builds them)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


async def test_a_fixed_batch_of_random_cases_decides_as_kueue_does(tmp_path: Path) -> None:
    _require_kueue_harness()
    settings = campaign.Settings(
        cases=CASES,
        seed=SEED,
        parallel=CASES,
        repeats=1,
        shrink_per_class=0,
        work=tmp_path,
    )
    report = await campaign.run(settings)
    assert report.cases == CASES
    assert report.steps > CASES
    kueue_errors = [
        f for f in report.findings if f.divergence.kind == compare.DivergenceClass.KUEUE_ERROR
    ]
    assert not kueue_errors, report.markdown()
    assert not report.by_class(), report.markdown()
