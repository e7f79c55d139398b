"""The simulator's checkpoint model (``sim.berth.dev/checkpoint-every``) and its bad values.

A workload that checkpoints every ``c`` saves ``c`` of work at each checkpoint after its
admission; evicted, it loses only what came after the last, and runs again for the rest
(``sim.workloads.saved_by``, which the trace benchmark counts lost work with too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import builders
from berth.entry import cli
from berth.sim import workloads

GPU = "nvidia.com/gpu"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "checkpointed-victim-goes-first.yaml"


@pytest.mark.parametrize(
    ("ran", "every", "saved"),
    [(3000.0, 1200.0, 2400.0), (1199.0, 1200.0, 0.0), (1200.0, 1200.0, 1200.0), (50.0, None, 0.0)],
)
def test_a_run_saves_whole_checkpoint_intervals(
    ran: float, every: float | None, saved: float
) -> None:
    assert workloads.saved_by(ran, every) == saved


def test_an_evicted_job_resumes_from_its_last_checkpoint() -> None:
    result = CliRunner().invoke(cli.main, ["simulate", str(SCENARIO)])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.output.splitlines()]
    saver = [e for e in events if e.get("job") == "ml/saver"]
    # 2h of work: preempted at 50m with 40m saved (checkpoints at 20m, 40m), admitted again at
    # 1h20m for the remaining 1h20m.
    assert [(e["event"], e["t"]) for e in saver if e["event"] in {"Admitted", "Finished"}] == [
        ("Admitted", 0.0),
        ("Admitted", 4800.0),
        ("Finished", 9600.0),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [("often", "is not a duration"), ("0s", "must be longer than 0s")],
)
def test_a_bad_checkpoint_interval_is_refused_naming_it(
    tmp_path: Path, value: str, message: str
) -> None:
    doc = (
        builders.WorkloadBuilder("w", "ml")
        .queue("q")
        .annotations({"sim.berth.dev/checkpoint-every": value})
        .pod_set("main", 1, {GPU: 1})
        .raw()
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli.main, ["simulate", str(path)])
    assert result.exit_code != 0
    assert "metadata.annotations[sim.berth.dev/checkpoint-every]" in result.output
    assert message in result.output
    assert "Traceback" not in result.output
