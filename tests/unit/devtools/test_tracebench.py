"""The trace benchmark's pieces (``devtools.tracebench``): reading, quotas, gangs, figures.

Reading keeps arrival order and each trace's team; quotas share the capacity by work and sum to
it; gangs split into pods of at most 8 GPUs; and a replay's figures (utilisation while jobs
arrive, GPU-seconds lost to preemption, time queued by gang size) come out as worked by hand on
small traces, one with a reclaim. Replays side by side give what they give one after the other,
and Ctrl-C stops them without a traceback.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from berth.api.clusterqueue import PreemptionPolicy, QueueingStrategy
from berth.devtools import bench_cmd
from berth.devtools import tracebench as tb
from berth.entry import cli
from berth.sim import documents, engine

Job = tb.TraceJob


def test_philly_rows_become_jobs_in_arrival_order(tmp_path: Path) -> None:
    csv = tmp_path / "philly.csv"
    csv.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,vc-b\n"
        "2017-10-09 06:13:03,2951.0,8,23608.0,vc-a\n"
        "2017-10-09 06:20:00,10.0,0,0.0,vc-a\n"
        "2017-10-09 07:01:55,5.0,2,10.0,vc-a\n"
    )
    assert tb.read_philly(csv) == [
        Job(0.0, 2951.0, 8, "vc-a"),
        Job(2932.0, 66.0, 1, "vc-b"),  # ties keep file order
        Job(2932.0, 5.0, 2, "vc-a"),
    ]


def test_each_itp_cluster_file_is_a_team(tmp_path: Path) -> None:
    for name, rows in (("cluster02", "x,100,600,8\ny,50,700,1\n"), ("cluster01", "z,75,900,2\n")):
        (tmp_path / f"{name}.csv").write_text(f"job_id,submission_time,duration,num_gpu\n{rows}")
    assert tb.read_itp(tmp_path) == [
        Job(0.0, 700.0, 1, "cluster02"),
        Job(25.0, 900.0, 2, "cluster01"),
        Job(50.0, 600.0, 8, "cluster02"),
    ]


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdef"), st.integers(1, 64), st.integers(1, 10_000)),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 4096),
)
def test_quotas_share_the_capacity_by_work(rows: list[tuple[str, int, int]], capacity: int) -> None:
    jobs = [Job(0.0, float(d), g, team) for team, g, d in rows]
    got = tb.quotas(jobs, capacity)
    assert sum(got.values()) == capacity
    work = {t: sum(g * d for team, g, d in rows if team == t) for t in got}
    total = sum(work.values())
    for team, quota in got.items():
        exact = capacity * work[team] / total
        assert math.floor(exact) <= quota <= math.ceil(exact)
    assert tb.quotas(list(reversed(jobs)), capacity) == got  # the order of jobs never matters


@pytest.mark.parametrize(
    ("gpus", "pods"),
    [(1, (1, 1)), (5, (1, 5)), (8, (1, 8)), (9, (3, 3)), (12, (2, 6)), (16, (2, 8)),
     (24, (3, 8)), (128, (16, 8))],
)  # fmt: skip
def test_gangs_split_into_equal_pods_of_at_most_8_gpus(gpus: int, pods: tuple[int, int]) -> None:
    assert tb.pod_shape(gpus) == pods


@pytest.mark.parametrize(
    ("gpus", "bucket"), [(1, "1"), (2, "2-4"), (4, "2-4"), (5, "5-8"), (8, "5-8"), (9, ">8")]
)
def test_gang_size_buckets(gpus: int, bucket: str) -> None:
    assert tb.bucket_of(gpus).name == bucket


def test_default_capacity_fills_to_the_load_and_fits_the_largest_gang() -> None:
    # 4 GPUs busy on average over the 100 s window at load 0.5: 8 GPUs.
    jobs = [Job(0.0, 100.0, 2, "a"), Job(100.0, 100.0, 2, "a")]
    assert tb.default_capacity(jobs, 0.5) == 8
    assert tb.default_capacity([*jobs, Job(50.0, 1.0, 20, "b")], 0.5) == 24


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    jobs: list[tb.TraceJob]
    capacity: int
    utilisation: float
    lost: float
    waits: dict[str, tuple[int, float, float]]
    preemptions: int
    peak_pending: int


CASES = [
    Case(
        # Team a did two thirds of the work: 8 of the 12 GPUs, room for both its jobs at once;
        # while the jobs arrive (10 s) 8 of 12 GPUs are held and nobody queues.
        "quota-by-work-and-nobody-queues",
        [Job(0, 100, 4, "a"), Job(0, 100, 4, "b"), Job(10, 100, 4, "a")],
        12,
        utilisation=8 / 12,
        lost=0.0,
        waits={"2-4": (3, 0.0, 0.0)},
        preemptions=0,
        peak_pending=0,
    ),
    Case(
        # Team b borrows a's half at t=0; a reclaims it at 10, cutting b's run short (80 of 1,680
        # GPU-seconds); b runs again at 20 once a's job ends, having queued 10 s.
        "a-reclaim-cuts-a-borrowers-run-short",
        [Job(0, 100, 8, "b"), Job(10, 10, 4, "a"), Job(500, 190, 4, "a")],
        8,
        utilisation=(8 * 10 + 4 * 10 + 8 * 100) / (8 * 500),
        lost=80 / 1680,
        waits={"2-4": (2, 0.0, 0.0), "5-8": (1, 10.0, 10.0)},
        preemptions=1,
        peak_pending=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_replay_figures(case: Case) -> None:
    got = tb.replay(case.id, case.jobs, QueueingStrategy.BEST_EFFORT_FIFO, case.capacity)
    assert got.utilisation == pytest.approx(case.utilisation)
    assert got.lost == pytest.approx(case.lost)
    waits = {name: (w.jobs, w.mean, w.p95) for name, w in got.waits.items() if w.jobs}
    assert waits == case.waits
    assert got.preemptions == case.preemptions
    assert got.peak_pending == case.peak_pending
    assert got.never_admitted == 0
    assert got.jobs_per_cpu_second > 0


def test_a_protection_delays_the_reclaim_until_the_borrowers_window_ends() -> None:
    # The second case with each run protected from reclaim for 60 s: a's job waits from 10 to
    # 60, then cuts b's run short after 60 s (480 GPU-seconds lost instead of 80); b runs again
    # once a's ends at 70.
    jobs = [Job(0, 100, 8, "b"), Job(10, 10, 4, "a"), Job(500, 190, 4, "a")]
    got = tb.replay(
        "protected", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, tb.Settings(protection=60.0)
    )
    assert (got.preemptions, got.preempted_jobs) == (1, 1)
    assert got.preempted_share == pytest.approx(1 / 3)
    assert got.preemptions_per_job == pytest.approx(1 / 3)
    assert got.lost == pytest.approx(480 / (480 + 8 * 100 + 4 * 10 + 4 * 190))
    assert got.waits["2-4"].mean == pytest.approx(50 / 2)
    assert got.waits["5-8"].mean == pytest.approx(10.0)


def test_a_run_that_checkpoints_loses_only_the_work_since_its_last_checkpoint() -> None:
    # The second case with every job checkpointing every 3 s: b's run cut short at 10 saved 9 s
    # (checkpoints at 3, 6, 9) and loses 1 s of 8 GPUs; it runs again for its other 91 s.
    jobs = [Job(0, 100, 8, "b"), Job(10, 10, 4, "a"), Job(500, 190, 4, "a")]
    got = tb.replay(
        "checkpoints", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, tb.Settings(checkpoint_every=3.0)
    )
    assert got.preemptions == 1
    assert got.lost == pytest.approx(8 / (8 + 8 * 100 + 4 * 10 + 4 * 190))


def test_lenders_that_never_reclaim_wait_for_the_borrower_instead() -> None:
    # The second case with reclaimWithinCohort: Never: b's run is not cut short; a's 4-GPU job
    # waits for it to end at 100.
    jobs = [Job(0, 100, 8, "b"), Job(10, 10, 4, "a"), Job(500, 190, 4, "a")]
    got = tb.replay(
        "never",
        jobs,
        QueueingStrategy.BEST_EFFORT_FIFO,
        8,
        tb.Settings(reclaim=PreemptionPolicy.NEVER),
    )
    assert (got.preemptions, got.lost) == (0, 0.0)
    assert got.waits["2-4"].mean == pytest.approx(90 / 2)


def test_the_bound_replays_one_queue_of_the_whole_capacity() -> None:
    # Without team quotas nothing is reclaimed: b's 8-GPU run is never cut short, and a's
    # 4-GPU job waits for it instead.
    jobs = [Job(0, 100, 8, "b"), Job(10, 10, 4, "a"), Job(500, 190, 4, "a")]
    got = tb.replay("bound", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, tb.Settings(bound=True))
    assert got.preemptions == 0
    assert got.lost == 0.0
    assert got.waits["2-4"].mean == pytest.approx(90 / 2)
    assert got.peak_pending == 1


def test_replays_side_by_side_give_what_replays_one_after_the_other_give() -> None:
    # Each replay in its own process, longest first, the figures back in the order asked.
    jobs = [Job(0, 100, 8, "b"), Job(10, 10, 4, "a"), Job(20, 50, 1, "a"), Job(500, 190, 4, "a")]
    asked = [
        tb.Replay("bound", QueueingStrategy.BEST_EFFORT_FIFO, tb.Settings(bound=True)),
        tb.Replay("StrictFIFO", QueueingStrategy.STRICT_FIFO),
        tb.Replay("Backfill", QueueingStrategy.BACKFILL),
    ]
    apart = tb.replay_each(jobs, 8, asked, workers=2)
    alone = tb.replay_each(jobs, 8, asked, workers=1)

    def seen(rows: list[tb.Figures]) -> list[tb.Figures]:
        return [dataclasses.replace(f, cpu_seconds=0.0) for f in rows]  # CPU is each one's own

    assert seen(apart) == seen(alone)
    assert [f.label for f in apart] == ["bound", "StrictFIFO", "Backfill"]
    assert apart[0].preemptions == 0
    assert apart[1].preemptions == 1
    assert all(f.cpu_seconds > 0 for f in apart)


def test_ctrl_c_stops_replays_side_by_side_without_a_traceback(tmp_path: Path) -> None:
    # Ctrl-C reaches the command and its workers (one process group); the command stops them.
    folder = tmp_path / "philly-pollux"
    folder.mkdir()
    rows = (
        f"2017-10-09 06:{i // 60 % 60:02d}:{i % 60:02d},600.0,1,600.0,vc-{i % 3}"
        for i in range(3600)
    )
    (folder / "philly.csv").write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n" + "\n".join(rows) + "\n"
    )
    berth = Path(sys.executable).with_name("berth")
    args = [str(berth), "bench", "trace", "--traces-dir", str(tmp_path), "--gpus", "8"]
    # Started as from a terminal, Ctrl-C at its default: a job a shell ran in the background
    # (CI's, say) passes it on ignored, and an ignored Ctrl-C rightly stays ignored.
    terminal = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    terminal += "os.execv(sys.argv[1], sys.argv[1:])"
    command = subprocess.Popen(  # noqa: S603 - our own interpreter and the project's script
        [sys.executable, "-c", terminal, *args, "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )

    def group() -> list[Path]:
        """The live processes of the command's group (the command, its workers, their helper)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                state, _parent, pgid = stat.read_text().rsplit(")", 1)[1].split()[:3]
            except OSError:
                continue  # gone meanwhile
            if int(pgid) == command.pid and state != "Z":
                found.append(stat.parent)
        return found

    deadline = time.monotonic() + 60
    while len(group()) < 4 and command.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # the command, the pool's resource tracker and two workers starting
    assert command.poll() is None, "the replays ended before they could be interrupted"
    os.killpg(command.pid, signal.SIGINT)
    _, err = command.communicate(timeout=60)
    assert command.returncode == 1
    assert err.strip() == "Aborted!"  # no traceback, from the command or a worker
    deadline = time.monotonic() + 10
    while group() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group() == []


def test_the_written_scenario_replays_the_same() -> None:
    # berth bench trace --scenario-out writes berth simulate input: read back, it decides alike.
    jobs = CASES[1].jobs
    docs = tb.scenario(jobs, QueueingStrategy.STRICT_FIFO, 8)
    text = tb.scenario_yaml(docs)
    read = documents.read_streams([("trace.yaml", io.StringIO(text))])
    assert engine.Simulator(read).run() == engine.Simulator(docs).run()


def test_backfill_keeps_the_gang_its_start_and_reports_how_far_off_the_estimates_were() -> None:
    # Nothing is learned yet: every estimate is the default hour. The 8-GPU gang waits for the
    # first job (exactly an hour); the long 4-GPU job fits beside that job at 20 s but would still
    # run at 1 h, so it waits; the gang starts at 1 h as estimated, the long job at 1 h 30 m, half
    # an hour before its estimate (the gang's default hour, though it ran 30 m).
    jobs = [Job(0, 3600, 4, "a"), Job(10, 1800, 8, "a"), Job(20, 7200, 4, "a")]
    backfill = tb.replay("backfill", jobs, QueueingStrategy.BACKFILL, 8)
    assert backfill.estimate_errors == (0.0, -1800.0)
    assert backfill.estimate_error == pytest.approx(900.0)
    assert backfill.waits["5-8"].mean == pytest.approx(3590.0)
    greedy = tb.replay("greedy", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8)
    assert greedy.estimate_error is None
    assert greedy.waits["5-8"].mean == pytest.approx(7220.0 - 10.0)


def test_the_wait_plot_is_a_png(tmp_path: Path) -> None:
    jobs = CASES[0].jobs
    rows = [tb.replay(p.value, jobs, p, 12) for p in tb.STRATEGIES]
    path = tmp_path / "waits.png"
    tb.plot_waits(rows, "three jobs", path)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def _figures(label: str, utilisation: float, one_p95: float, big_p95: float) -> tb.Figures:
    waits = {b.name: tb.Waits(0, 0.0, 0.0) for b in tb.BUCKETS}
    waits["1"] = tb.Waits(10, one_p95 / 2, one_p95)
    return tb.Figures(
        label=label,
        jobs=20,
        capacity=8,
        utilisation=utilisation,
        lost=0.0,
        waits=waits,
        longest_wait=max(one_p95, big_p95),
        never_admitted=0,
        preemptions=0,
        preempted_jobs=0,
        peak_pending=0,
        cpu_seconds=1.0,
        big_gangs=tb.Waits(10 if big_p95 >= 0 else 0, big_p95, max(big_p95, 0.0)),
    )


@dataclasses.dataclass(frozen=True)
class GoalCase:
    id: str
    utilisation: float
    one_p95: float
    big_p95: float
    """-1 for no big gang at all."""
    ratio: float | None
    points: float
    met: bool


GOAL_CASES = [
    GoalCase("exactly twice, same utilisation", 0.80, 100.0, 200.0, 2.0, 0.0, met=True),
    GoalCase("two points below is still within", 0.78, 100.0, 150.0, 1.5, -2.0, met=True),
    GoalCase("three points below is not", 0.77, 100.0, 150.0, 1.5, -3.0, met=False),
    GoalCase("big gangs wait a little too long", 0.80, 100.0, 201.0, 2.01, 0.0, met=False),
    GoalCase("1-GPU jobs never queued: no ratio", 0.80, 0.0, 50.0, None, 0.0, met=False),
    GoalCase("no big gang at all: no ratio", 0.80, 100.0, -1.0, None, 0.0, met=False),
]


@pytest.mark.parametrize("case", GOAL_CASES, ids=lambda c: c.id)
def test_the_goal_compares_big_gangs_with_1_gpu_jobs_and_utilisation_with_best_effort(
    case: GoalCase,
) -> None:
    best_effort = _figures("BestEffortFIFO", 0.80, 10.0, 100.0)
    got = tb.goal(_figures("Backfill", case.utilisation, case.one_p95, case.big_p95), best_effort)
    assert got.ratio == (None if case.ratio is None else pytest.approx(case.ratio))
    assert got.points == pytest.approx(case.points)
    assert got.met is case.met
    alone = tb.goal(_figures("Backfill", case.utilisation, case.one_p95, case.big_p95), None)
    assert (alone.ratio, alone.points, alone.met) == (got.ratio, None, False)


@pytest.mark.parametrize(
    ("utilisation", "shown"),
    [
        pytest.param(0.80 - 1e-5, "+0.0", id="a hair below rounds to zero, unsigned"),
        pytest.param(0.80 + 1e-5, "+0.0", id="a hair above too"),
        pytest.param(0.7915, "-0.9", id="below by most of a point"),
        pytest.param(0.812, "+1.2", id="above"),
    ],
)
def test_a_goal_line_prints_the_utilisation_difference_to_a_tenth(
    utilisation: float, shown: str
) -> None:
    rows = [
        _figures("BestEffortFIFO", 0.80, 10.0, 100.0),
        _figures("Backfill", utilisation, 100.0, 150.0),
    ]
    line = bench_cmd.goal_lines(rows)[2]
    assert f"utilisation {shown} points: met" in line, line


def test_big_gangs_are_the_jobs_of_at_least_8_gpus_across_buckets() -> None:
    # The 8-GPU job (bucket 5-8) and the 16-GPU one (bucket >8) wait for the first job together.
    jobs = [Job(0, 100, 16, "a"), Job(10, 50, 8, "a"), Job(20, 50, 16, "a"), Job(30, 5, 4, "a")]
    got = tb.replay("one team", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 16)
    assert got.big_gangs.jobs == 3
    assert got.big_gangs.p95 == max(got.waits["5-8"].p95, got.waits[">8"].p95)
    assert got.big_gangs.p95 > 0


def test_bench_trace_prints_each_policy_against_the_goal(tmp_path: Path) -> None:
    # Team a (two thirds of the work: 8 of 12 GPUs) sends an 8-GPU gang behind 1-GPU jobs.
    folder = tmp_path / "philly-pollux"
    folder.mkdir()
    rows = [
        "2017-10-09 06:00:00,3600.0,4,14400.0,vc-b",
        "2017-10-09 06:00:10,3600.0,6,21600.0,vc-a",
        "2017-10-09 06:00:20,3600.0,8,28800.0,vc-a",
        *(f"2017-10-09 06:01:{s:02d},600.0,1,600.0,vc-a" for s in range(0, 40, 5)),
    ]
    (folder / "philly.csv").write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n" + "\n".join(rows) + "\n"
    )
    args = ["bench", "trace", "--traces-dir", str(tmp_path), "--gpus", "12"]
    both = CliRunner().invoke(
        cli.main, [*args, "--policy", "BestEffortFIFO", "--policy", "Backfill", "--workers", "2"]
    )
    assert both.exit_code == 0, both.output
    assert "3 replays took" in both.output
    assert "s of wall time, 2 side by side" in both.output
    assert ">=8: 1" in both.output
    goal = both.output.split("goal: ", 1)[1].splitlines()
    assert goal[0].startswith("p95 wait of >=8-GPU jobs at most 2x that of 1-GPU jobs")
    assert [line.split()[0] for line in goal[1:3]] == ["BestEffortFIFO", "Backfill"]
    assert all(line.endswith(("met", "not met")) and " points: " in line for line in goal[1:3])
    alone = CliRunner().invoke(cli.main, [*args, "--policy", "Backfill", "--workers", "1"])
    assert alone.exit_code == 0, alone.output
    assert "2 replays took" in alone.output
    assert "one after the other" in alone.output
    assert "utilisation not compared (replay BestEffortFIFO too)" in alone.output


@pytest.mark.parametrize(
    ("protect", "want"),
    [
        (["--protect", "10m"], ["BestEffortFIFO +10m", "3 replays took"]),
        (["--protect", "30s"], ["Invalid value for --protect: '30s' is outside 1m..720h"]),
        (["--protect", "soon"], ["Invalid value for '--protect'"]),
        (["--reclaim", "Never"], ["reclaimWithinCohort: Never", "2 replays took"]),
    ],
    ids=[
        "a protected replay beside the unprotected one",
        "too short",
        "not a duration",
        "lenders that never reclaim, named in the header",
    ],
)
def test_protect_adds_a_protected_replay_or_names_the_bad_window(
    tmp_path: Path, protect: list[str], want: list[str]
) -> None:
    (tmp_path / "philly-pollux").mkdir()
    (tmp_path / "philly-pollux" / "philly.csv").write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 06:00:00,3600.0,8,28800.0,vc-b\n"
        "2017-10-09 06:00:10,600.0,4,2400.0,vc-a\n"
    )
    result = CliRunner().invoke(
        cli.main,
        [
            *("bench", "trace", "--traces-dir", str(tmp_path), "--gpus", "8"),
            *("--policy", "BestEffortFIFO", "--workers", "1", *protect),
        ],
    )
    for line in want:
        assert line in result.output, result.output
    assert "Traceback" not in result.output


def test_the_shared_queue_under_admission_fair_sharing_alternates_the_teams() -> None:
    # One 8-GPU queue: a queues three 8-GPU jobs of 100 s at 0, b one at 1. By arrival b runs
    # last (at 300); with a's usage counted it runs second (at 100).
    jobs = [Job(0, 100, 8, "a"), Job(0, 100, 8, "a"), Job(0, 100, 8, "a"), Job(1, 100, 8, "b")]
    docs = tb.scenario(jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, tb.Settings(bound=True))
    assert all(d.raw["kind"] != "Configuration" for d in docs)
    fair = tb.Settings(bound=True, fair_usage_half_life=3600.0)
    docs = tb.scenario(jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, fair)
    config = next(d.raw for d in docs if d.raw["kind"] == "Configuration")
    assert config["admissionFairSharing"] == {"usageHalfLifeTime": "1h"}
    by_arrival = tb.replay(
        "fifo", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, tb.Settings(bound=True)
    )
    shared = tb.replay("afs", jobs, QueueingStrategy.BEST_EFFORT_FIFO, 8, fair)
    assert by_arrival.waits["5-8"].jobs == shared.waits["5-8"].jobs == 4
    # b waits 299 s by arrival, 99 s under fair sharing (a.s second and third: 200 s, 300 s).
    assert by_arrival.longest_wait == pytest.approx(299.0)
    assert shared.longest_wait == pytest.approx(300.0)
    assert shared.waits["5-8"].mean == pytest.approx((0 + 99 + 200 + 300) / 4)
