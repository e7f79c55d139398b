"""Every scenario, public and the project's own, runs through ``berth simulate`` as expected.

The public examples live in ``../shared/scenarios`` beside the repository (``BERTH_SHARED_DIR``
overrides the location); the project's own are in ``tests/scenarios``. Each run must exit 0,
print only JSON lines and end with the Summary line; then ``scenario_expect.check`` compares it.
"""

from __future__ import annotations

import gc
import io
import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import scenario_expect
from berth.entry import cli
from berth.sim import documents, engine

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BERTH_SHARED_DIR", ROOT.parent / "shared")) / "scenarios"
OWN = ROOT / "tests" / "scenarios"


def _pairs(folder: Path) -> list[pytest.ParameterSet]:
    return [
        pytest.param(
            expect.with_name(expect.name.replace(".expect.yaml", ".yaml")),
            expect,
            id=f"{folder.name}/{expect.name.removesuffix('.expect.yaml')}",
        )
        for expect in sorted(folder.glob("*.expect.yaml"))
    ]


def test_public_scenarios_are_present() -> None:
    assert SHARED.is_dir(), f"public scenarios not found at {SHARED}; set BERTH_SHARED_DIR"
    assert _pairs(SHARED), f"no *.expect.yaml in {SHARED}"


def test_own_scenarios_are_present() -> None:
    # Parametrizing over an empty glob would pass without running anything.
    assert _pairs(OWN), f"no *.expect.yaml in {OWN}"


def _run(scenario: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario)])
    assert result.exit_code == 0, result.output + (result.stderr or "")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines, "no output"
    assert lines[-1]["event"] == "Summary"
    return lines


@pytest.mark.parametrize(("scenario", "expect"), _pairs(SHARED) + _pairs(OWN))
def test_scenario_matches_expectation(scenario: Path, expect: Path) -> None:
    events = _run(scenario)
    problems = scenario_expect.check(events, yaml.safe_load(expect.read_text()))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("scenario", "expect"), _pairs(SHARED)[:2] + _pairs(OWN)[:4])
def test_scenario_output_is_deterministic(scenario: Path, expect: Path) -> None:
    assert expect.exists()
    assert _run(scenario) == _run(scenario)


@pytest.mark.parametrize(("scenario", "expect"), _pairs(SHARED) + _pairs(OWN))
def test_a_run_leaves_no_reference_cycles_behind(scenario: Path, expect: Path) -> None:
    # The simulator runs with automatic cyclic collection paused (``adapters.collector``):
    # that is only sound while nothing it makes and drops during a run is cyclic garbage.
    del expect
    docs = documents.read_files([str(scenario)], io.StringIO())
    gc.collect()
    sim = engine.Simulator(docs)
    sim.run()
    assert gc.collect() == 0, "the run left cyclic garbage; find the cycle and break it"
    del sim
