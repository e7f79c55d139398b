"""The simulator and the operator's tasks decide alike on every scenario.

Each scenario of the suite (the public ones beside the repository and the project's own, as
``test_scenarios`` finds them) runs twice:
- through ``berth simulate``'s engine;
- through the operator's own tasks on a fake clock against the API fake (``parity.Driver``):
  the watch intake (``World``), the scheduler loop, the job controller and the lifecycle task.

Both must make the same admissions (in the same ClusterQueue), preemptions and evictions (for
the same reason) at the same virtual times. Decisions at one instant are compared as a multiset,
because the operator writes a batch of decisions in the order its writes return.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import parity
from berth.sim import documents, engine
from test_scenarios import OWN, SHARED


def _scenarios() -> list[Path]:
    return sorted(
        p
        for folder in (SHARED, OWN)
        for p in folder.glob("*.yaml")
        if not p.name.endswith(".expect.yaml")
    )


def test_the_suite_is_not_empty() -> None:
    assert len(_scenarios()) > 100


@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda p: p.stem)
def test_operator_decides_as_the_simulator(scenario: Path) -> None:
    simulated = parity.simulator_decisions(
        engine.Simulator(documents.read_files([str(scenario)], sys.stdin)).run()
    )
    operated = parity.run_operator(documents.read_files([str(scenario)], sys.stdin))
    assert sorted(operated) == sorted(simulated)
