"""A run of Kueue's harness replayed through Berth's core: its log read, its cycles kept."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from berth.devtools import bench_cmd
from berth.devtools.harness import generator, kueue, replay

_T0 = "2026-11-28T06:00:"


def _config(tmp_path: Path, *, nominal: int, sets: list[dict[str, object]]) -> Path:
    """One cohort of two ClusterQueues with the given workload sets."""
    raw = {
        "cohorts": [
            {
                "className": "co",
                "count": 1,
                "queuesSets": [
                    {
                        "className": "cq",
                        "count": 2,
                        "nominalQuota": nominal,
                        "borrowingLimit": 0,
                        "reclaimWithinCohort": "Any",
                        "withinClusterQueue": "LowerPriority",
                        "workloadsSets": sets,
                    }
                ],
            }
        ]
    }
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(raw))
    return path


def _set(
    cls: str, *, count: int, interval_ms: int, runtime_ms: int, priority: int, request: int
) -> dict[str, object]:
    return {
        "count": count,
        "creationIntervalMs": interval_ms,
        "workloads": [
            {"className": cls, "runtimeMs": runtime_ms, "priority": priority, "request": request}
        ],
    }


SMALLS = [_set("small", count=2, interval_ms=1000, runtime_ms=500, priority=50, request=1)]
"""Per queue: small-0-0-0 at 1 s and small-0-1-0 at 2 s, each the queue's whole quota of 1."""


@dataclasses.dataclass(frozen=True)
class KueueRunFiles:
    """What a run of Kueue's harness leaves in its ``kueue`` folder, written by a test."""

    creates: dict[tuple[str, str], float]
    """(namespace, name) -> seconds after 06:00:00 minimalkueue saw it created."""
    held: dict[tuple[str, str], float]
    cycles: list[float]
    evictions: dict[str, int] = dataclasses.field(default_factory=dict)

    def write(self, folder: Path) -> Path:
        lines = [
            f"{_T0}{at:09.6f}Z\tLEVEL(-2)\tworkload-reconciler\tcore/workload_controller.go:1300"
            "\tWorkload create event\t"
            + json.dumps({"workload": {"name": name, "namespace": ns}, "status": "pending"})
            for (ns, name), at in self.creates.items()
        ]
        lines += [
            f"{_T0}{at:09.6f}Z\tLEVEL(-2)\tscheduler\tscheduler/scheduler.go:300"
            f"\tScheduling cycle starts\t{json.dumps({'schedulingCycle': i})}"
            for i, at in enumerate(self.cycles)
        ]
        lines.append(f"{_T0}00.000001Z\tINFO\tsetup\tminimalkueue/main.go:140\tK8S Client\t{{}}")
        (folder / replay.LOG).write_text("\n".join(lines) + "\n")
        rows = ["id,class name,namespace,name,ms to admitted,ms to finish,num evictions"]
        rows += [
            f"{i},{name.split('-')[0]},{ns},{name},1000,{1000 + round(1000 * h)},0"
            for i, ((ns, name), h) in enumerate(self.held.items())
        ]
        (folder / replay.STATES).write_text("\n".join(rows) + "\n")
        classes = "".join(
            f"  {c}:\n    averageTimeToAdmissionMs: 1500\n    count: 4\n    totalEvictions: {n}\n"
            for c, n in sorted(self.evictions.items())
        )
        (folder / kueue.SUMMARY).write_text(
            "clusterQueueClasses:\n  cq:\n"
            f'    firstEventTime: "{_T0}01.000000000Z"\n'
            f'    lastEventTime: "{_T0}09.000000000Z"\n'
            f"workloadClasses:\n{classes}"
        )
        (folder / kueue.STATS).write_text("wallMs: 9000\nuserMs: 1000\nsysMs: 100\nmaxrss: 1024\n")
        return folder


def _smalls(cycles: list[float], held: float = 0.5) -> KueueRunFiles:
    """Both queues' smalls seen created 1 s apart from 10 s on, as Kueue's generator sends them."""
    keys = [(f"cq-0-{q}-co-0", f"small-0-{r}-0") for q in (0, 1) for r in (0, 1)]
    return KueueRunFiles(
        creates={k: 10.0 + int(k[1].split("-")[2]) for k in keys},
        held=dict.fromkeys(keys, held),
        cycles=cycles,
        evictions={"small": 0},
    )


def test_the_timeline_counts_seconds_from_the_first_create(tmp_path: Path) -> None:
    timeline = replay.read_timeline(_smalls([10.25, 11.5]).write(tmp_path))
    assert timeline.created[("cq-0-1-co-0", "small-0-1-0")] == pytest.approx(1.0)
    assert timeline.cycles == pytest.approx([0.25, 1.5])
    assert timeline.held[("cq-0-0-co-0", "small-0-0-0")] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("cycles", "paced", "want_wait", "want_unadmitted"),
    [
        pytest.param([10.25, 11.75], True, 0.5, 0, id="paced-each-waits-for-kueues-next-cycle"),
        pytest.param([10.25, 11.75], False, 0.0, 0, id="at-once-none-waits-for-a-free-queue"),
        pytest.param([10.25], True, 0.25, 2, id="paced-none-admitted-after-kueues-last-cycle"),
        pytest.param([], False, 0.0, 0, id="at-once-needs-no-cycle-of-kueues"),
    ],
)
def test_a_paced_replay_admits_only_when_kueue_ran_a_cycle(
    tmp_path: Path, cycles: list[float], paced: bool, want_wait: float, want_unadmitted: int
) -> None:
    config = generator.load(_config(tmp_path, nominal=1, sets=SMALLS))
    timeline = replay.read_timeline(_smalls(cycles).write(tmp_path))
    figures = replay.replay(config, timeline, paced=paced)
    assert figures.average_wait["small"] == pytest.approx(want_wait)
    assert figures.unadmitted == want_unadmitted
    assert figures.evictions == {"small": 0}


def test_a_workload_holds_its_quota_as_long_as_kueues_run_measured(tmp_path: Path) -> None:
    # Held 1.5 s, the first small still holds the queue's quota when the second arrives at 1 s.
    config = generator.load(_config(tmp_path, nominal=1, sets=SMALLS))
    timeline = replay.read_timeline(_smalls([], held=1.5).write(tmp_path))
    figures = replay.replay(config, timeline, paced=False)
    assert figures.average_wait["small"] == pytest.approx(0.25)
    assert figures.end == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("paced", "want_large_wait"),
    [
        pytest.param(True, 1.0, id="paced-the-preemptor-is-admitted-at-kueues-next-cycle"),
        pytest.param(False, 0.0, id="at-once-the-preemptor-is-admitted-in-the-same-instant"),
    ],
)
def test_evictions_are_counted_by_the_victims_class(
    tmp_path: Path, paced: bool, want_large_wait: float
) -> None:
    # Each queue: a small (priority 50) seen at 0 s holding its quota of 2 for 10 s, then a large
    # (priority 200) seen at 1 s asking for all of it, which evicts the small (LowerPriority).
    sets = [
        _set("small", count=1, interval_ms=1000, runtime_ms=10_000, priority=50, request=2),
        _set("large", count=1, interval_ms=2000, runtime_ms=1000, priority=200, request=2),
    ]
    config = generator.load(_config(tmp_path, nominal=2, sets=sets))
    keys = {
        (f"cq-0-{q}-co-0", f"{cls}-{s}-0-0"): at
        for q in (0, 1)
        for s, (cls, at) in enumerate([("small", 0.0), ("large", 1.0)])
    }
    held = {k: 10.0 if k[1].startswith("small") else 1.0 for k in keys}
    files = KueueRunFiles(keys, held, [0.0, 1.0, 2.0], {"small": 2, "large": 0})
    figures = replay.replay(config, replay.read_timeline(files.write(tmp_path)), paced=paced)
    assert figures.evictions == {"large": 0, "small": 2}
    assert figures.average_wait["large"] == pytest.approx(want_large_wait)


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        pytest.param("no-log", r"minimalkueue\.err\.log is missing", id="no-log"),
        pytest.param("no-creates", "names no created Workload", id="log-without-debug-lines"),
        pytest.param("other-config", "has no record of Workload", id="log-of-another-config"),
        pytest.param("torn-log", r"err\.log:2: not a line of minimalkueue's log", id="torn-log"),
        pytest.param("bad-row", r"wlStates\.csv:3: not a row of Kueue's recorder", id="bad-row"),
    ],
)
def test_a_folder_that_is_not_a_run_of_this_config_is_an_error(
    tmp_path: Path, damage: str, match: str
) -> None:
    folder = _smalls([10.25]).write(tmp_path)
    sets = SMALLS
    if damage == "no-log":
        (folder / replay.LOG).unlink()
    elif damage == "no-creates":
        (folder / replay.LOG).write_text(f"{_T0}00.1Z\tINFO\tsetup\tmain.go:1\tStart\t{{}}\n")
    elif damage == "torn-log":
        lines = (folder / replay.LOG).read_text().splitlines()
        lines[1] = lines[1][:-20]
        (folder / replay.LOG).write_text("\n".join(lines))
    elif damage == "bad-row":
        rows = (folder / replay.STATES).read_text().splitlines()
        rows[2] = rows[2].replace(",1000,", ",soon,", 1)
        (folder / replay.STATES).write_text("\n".join(rows))
    else:
        sets = [_set("small", count=3, interval_ms=1000, runtime_ms=500, priority=50, request=1)]
    config = generator.load(_config(tmp_path, nominal=1, sets=sets))
    with pytest.raises(replay.ReplayError, match=match):
        replay.replay(config, replay.read_timeline(folder), paced=True)


def test_the_command_prints_kueues_figures_beside_both_replays(tmp_path: Path) -> None:
    config = _config(tmp_path, nominal=1, sets=SMALLS)
    folder = _smalls([10.25, 11.75]).write(tmp_path)
    result = CliRunner().invoke(
        bench_cmd.command, ["harness-replay", str(folder), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    rows = {line.split(" | ")[0].strip("| "): line for line in result.stdout.splitlines()}
    assert rows["average time to admission, small (s)"].endswith("| 1.5 | 0.5 | 0.0 |")
    assert rows["scheduling cycles"].startswith("| scheduling cycles | 2 | 2 |")
    assert rows["evictions"] == "| evictions | 0 | 0 | 0 |"


def test_the_command_names_a_missing_file_without_a_traceback(tmp_path: Path) -> None:
    config = _config(tmp_path, nominal=1, sets=SMALLS)
    result = CliRunner().invoke(
        bench_cmd.command, ["harness-replay", str(tmp_path), "--config", str(config)]
    )
    assert result.exit_code == 2
    assert "minimalkueue.err.log is missing" in result.output
    assert "Traceback" not in result.output
