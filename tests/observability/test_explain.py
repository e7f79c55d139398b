import dataclasses
import io
import pathlib

import pytest
from click.testing import CliRunner

import scenario_text as st
from berth.api import names
from berth.entry import cli
from berth.sim import documents, engine
from berth.state import explain as state_explain


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    scenario: str
    target: str
    want_reason: str
    want_blocker: str
    want_lines: tuple[str, ...]


CASES = [
    Case(
        "blocked by quota: 3 GPUs must free up, nothing to preempt at equal priority",
        st.stream(
            st.FLAVOR,
            st.cluster_queue(),
            st.LOCAL_QUEUE,
            st.workload("running", 3),
            st.workload("big", 4, at="1s"),
        ),
        "ml/big",
        "WaitingForQuota",
        "quota",
        (
            (
                "why: WaitingForQuota: couldn't assign flavors to pod set main: insufficient "
                "unused quota for nvidia.com/gpu in flavor a100, 3 more needed"
            ),
            "position: 0 in its LocalQueue, 0 in ClusterQueue gpu-cq (0 = head)",
            "flavor a100: must free up 3 nvidia.com/gpu (1 of 4 available)",
            "could preempt: nothing under this policy",
        ),
    ),
    Case(
        "blocked by a missing flavor: the ClusterQueue names a ResourceFlavor that does not exist",
        st.stream(
            st.FLAVOR,
            st.cluster_queue(flavor="h100"),
            st.LOCAL_QUEUE,
            st.workload("big", 4),
        ),
        "ml/big",
        "Suspended",
        "flavor",
        (
            (
                "why: Suspended: ClusterQueue gpu-cq is inactive: Can't admit new workloads: "
                "references missing ResourceFlavor(s): h100"
            ),
            (
                "note: FlavorNotFound: Can't admit new workloads: references missing "
                "ResourceFlavor(s): h100"
            ),
        ),
    ),
    Case(
        "blocked by namespaceSelector: the selector and the namespace's labels are shown",
        st.stream(
            st.FLAVOR,
            st.cluster_queue(selector="{matchLabels: {team: ml}}"),
            st.LOCAL_QUEUE,
            st.workload("big", 1),
        ),
        "ml/big",
        "Misconfigured",
        "namespace",
        (
            "why: Misconfigured: workload namespace doesn't match ClusterQueue selector",
            "note: ClusterQueue gpu-cq namespaceSelector: team=ml",
            "note: namespace ml labels: kubernetes.io/metadata.name=ml",
        ),
    ),
    Case(
        "blocked by StrictFIFO head-of-line: small fits but waits behind big",
        st.stream(
            st.FLAVOR,
            st.cluster_queue(strategy="StrictFIFO"),
            st.LOCAL_QUEUE,
            st.workload("running", 3),
            st.workload("big", 4, at="1s"),
            st.workload("small", 1, at="2s"),
        ),
        "ml/small",
        "PendingEvaluation",
        "head-of-line",
        (
            (
                "why: PendingEvaluation: StrictFIFO: waits behind the head of ClusterQueue gpu-cq, "
                "ml/big, which cannot be admitted"
            ),
            "position: 1 in its LocalQueue, 1 in ClusterQueue gpu-cq (0 = head)",
            "ahead of it: ml/big",
            (
                "blocked head: ml/big: WaitingForQuota: couldn't assign flavors to pod set main: "
                "insufficient unused quota for nvidia.com/gpu in flavor a100, 3 more needed"
            ),
            "note: on its own: fits: it fits now; it will be admitted in the next cycle",
        ),
    ),
]


def _simulate(text: str) -> engine.Simulator:
    sim = engine.Simulator(documents.read_files(["-"], io.StringIO(text)))
    sim.run()
    return sim


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_explanation_names_the_blocker(case: Case) -> None:
    sim = _simulate(case.scenario)
    wl = sim.workloads[names.WorkloadKey.parse(case.target)]
    assert wl.state == "pending"
    exp = state_explain.explain(sim.state, wl.info, sim.policy, sim.now)
    assert (exp.reason, exp.blocker) == (case.want_reason, case.want_blocker)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_explain_command_prints_the_explanation(case: Case, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(case.scenario)
    namespace, name = case.target.split("/")
    result = CliRunner().invoke(
        cli.main, ["explain", f"workload/{name}", "-n", namespace, "--scenario", str(path)]
    )
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    for want in case.want_lines:
        assert want in lines, f"{want!r} not in:\n{result.output}"


def test_four_blockers_give_four_different_explanations() -> None:
    seen = set()
    for case in CASES:
        sim = _simulate(case.scenario)
        wl = sim.workloads[names.WorkloadKey.parse(case.target)]
        exp = state_explain.explain(sim.state, wl.info, sim.policy, sim.now)
        seen.add((exp.reason, exp.blocker, exp.message))
    assert len(seen) == len(CASES)


def test_higher_priority_would_preempt_the_lower_priority_workload() -> None:
    sim = _simulate(CASES[0].scenario)
    wl = sim.workloads[names.WorkloadKey.parse("ml/big")]
    urgent = dataclasses.replace(wl.info, priority=100)
    exp = state_explain.explain(sim.state, urgent, sim.policy, sim.now)
    assert exp.reason == "WaitingForPreemptedWorkloads"
    assert [(v.workload, v.reason) for v in exp.victims] == [("ml/running", "InClusterQueue")]


def test_explain_of_a_job_by_its_job_name(tmp_path: pathlib.Path) -> None:
    result = CliRunner().invoke(
        cli.main,
        [
            "explain",
            "job/ablation-lr",
            "-n",
            "team-a",
            "--scenario",
            "config/samples/queues.yaml",
            "--scenario",
            "config/samples/jobs.yaml",
            "--at",
            "100s",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "job team-a/ablation-lr (workload team-a/job-ablation-lr-" in result.output
    assert "flavor spot: can never fit" in result.output
    del tmp_path


def test_queues_command_shows_bars_and_pending_counts(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(CASES[3].scenario)
    result = CliRunner().invoke(cli.main, ["queues", "--scenario", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "at 2s"
    assert (
        "gpu-cq  cohort=-  StrictFIFO  active  pending=2 active/0 inadmissible  admitted=1" in lines
    )
    assert any("a100/nvidia.com/gpu" in ln and "[###############.....] 3/4" in ln for ln in lines)
    assert "ml/training  gpu-cq  2  1" in lines


def test_a_stopped_local_queue_is_the_blocker() -> None:
    stopped = st.LOCAL_QUEUE + "  stopPolicy: Hold\n"
    sim = _simulate(st.stream(st.FLAVOR, st.cluster_queue(), stopped, st.workload("big", 1)))
    wl = sim.workloads[names.WorkloadKey.parse("ml/big")]
    exp = state_explain.explain(sim.state, wl.info, sim.policy, sim.now)
    assert (exp.reason, exp.message, exp.blocker) == (
        "Suspended",
        "LocalQueue training is stopped",
        "queue",
    )


def test_an_admitted_workload_is_reported_with_its_cluster_queue_and_flavors(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(CASES[0].scenario)
    result = CliRunner().invoke(
        cli.main, ["explain", "workload/running", "-n", "ml", "--scenario", str(path)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "workload ml/running: admitted in ClusterQueue gpu-cq",
        "  pod set main: 3 pod(s), nvidia.com/gpu on flavor a100",
    ]


@pytest.mark.parametrize("command", ["explain", "queues"])
def test_cluster_options_do_not_go_with_a_scenario(command: str, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(CASES[0].scenario)
    target = ["workload/big", "-n", "ml"] if command == "explain" else []
    result = CliRunner().invoke(
        cli.main, [command, *target, "--scenario", str(path), "--kubeconfig", str(path)]
    )
    assert result.exit_code == 2
    assert "--kubeconfig and --config read the live cluster" in result.output


_RECIPES = pathlib.Path(__file__).resolve().parents[2] / "config" / "recipes"


def _backfill_recipe_at_40m(*command: str) -> str:
    """What ``berth COMMAND`` prints on the Backfill recipe 40 minutes in."""
    recipe = ("--scenario", str(_RECIPES / "backfill.yaml"))
    jobs = ("--scenario", str(_RECIPES / "jobs" / "backfill.yaml"))
    result = CliRunner().invoke(cli.main, [*command, *recipe, *jobs, "--at", "40m"])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(
            "tune",
            [
                (
                    "why: WaitingForReservation: Workload fits, but its estimated runtime of 4h "
                    "(berth.dev/expected-runtime) would delay the reservation of "
                    "research/job-pretrain-"
                ),
            ],
            id="a job that fits but would delay the reservation ahead of it",
        ),
        pytest.param(
            "pretrain",
            ["why: WaitingForQuota:", "estimated start: t=3h (Backfill"],
            id="the blocked gang and when its reservation starts",
        ),
    ],
)
def test_explain_in_a_backfill_queue_says_what_it_waits_for_and_when(
    job: str, want: list[str]
) -> None:
    output = _backfill_recipe_at_40m("explain", f"job/{job}", "-n", "research")
    for line in want:
        assert line in output


def test_queues_lists_a_backfill_queues_reservation() -> None:
    output = _backfill_recipe_at_40m("queues")
    [line] = [x for x in output.splitlines() if "reservation:" in x]
    assert line.strip().startswith("reservation: research/job-pretrain-")
    assert "from 3h to 7h (estimated runtime 4h (berth.dev/expected-runtime))" in line


_SCENARIOS = pathlib.Path(__file__).resolve().parents[1] / "scenarios"


@pytest.mark.parametrize(
    ("at", "want"),
    [
        pytest.param(
            "2m",
            [
                (
                    "estimated start: t=10m (when enough of the workloads it could preempt are "
                    "past their preemption protection or budget, if nothing else frees up first)"
                ),
                (
                    "could preempt: nothing now; 1 workload(s) it could preempt are protected "
                    "until t=10m (preemptionProtection)"
                ),
            ],
            id="inside the borrower's protection: until when, and when it can start",
        ),
        pytest.param(
            "15m", ["workload ml/owner: admitted in ClusterQueue team-a"], id="after it: admitted"
        ),
    ],
)
def test_explain_says_until_when_a_protection_keeps_the_preemptor_waiting(
    at: str, want: list[str]
) -> None:
    _explain_says("protection-reclaim-waits-for-window.yaml", "owner", at, want)


def test_explain_says_until_when_a_spent_budget_keeps_the_preemptor_waiting() -> None:
    _explain_says(
        "budget-spaces-out-reclaims.yaml",
        "owner-2",
        "5m",
        [
            (
                "could preempt: nothing now; the preemption budget of ClusterQueue team-b is "
                "spent until t=1h1m (preemptionBudget)"
            ),
            (
                "estimated start: t=1h1m (when enough of the workloads it could preempt are "
                "past their preemption protection or budget, if nothing else frees up first)"
            ),
        ],
    )


def _explain_says(scenario_file: str, name: str, at: str, want: list[str]) -> None:
    scenario = _SCENARIOS / scenario_file
    result = CliRunner().invoke(
        cli.main,
        ["explain", f"workload/{name}", "-n", "ml", "--scenario", str(scenario), "--at", at],
    )
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    for line in want:
        assert line in lines, f"{line!r} not in:\n{result.output}"
