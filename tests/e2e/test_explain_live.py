"""``berth explain`` and ``berth queues`` against the live cluster the operator is running on.

One namespace holds four Jobs, each blocked for a different reason — quota, a missing
ResourceFlavor, a ClusterQueue whose namespaceSelector excludes the namespace, StrictFIFO
head-of-line — and ``berth explain job/NAME --kubeconfig`` must name each blocker with its own
reason, shortfall and position. A fifth Job's recorded reason goes stale and is shown beside the
fresh one. The commands run in-process through click, as a user runs them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import pathlib
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

import adversary
from berth.devtools.devcluster import kwok, launcher
from berth.entry import cli, live_state
from operator_env import (
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    gpu_job,
    local_queue,
    workload_of,
)


@dataclasses.dataclass(frozen=True)
class Blocked:
    """The namespace of the blocked Jobs, and the cluster they run on."""

    plane: launcher.ControlPlane
    ns: str

    def berth(self, *args: str) -> Result:
        """Run ``berth ARGS --kubeconfig`` against the cluster."""
        argv = [*args, "--kubeconfig", str(self.plane.kubeconfig)]
        return CliRunner().invoke(cli.main, argv)

    def explain(self, job: str) -> list[str]:
        """``berth explain job/JOB -n NS``: its lines, stripped; the command must succeed."""
        result = self.berth("explain", f"job/{job}", "-n", self.ns)
        assert result.exit_code == 0, result.output
        return [line.strip() for line in result.stdout.splitlines()]

    def workload(self, job: str) -> str:
        """``ns/name`` of a Job's Workload."""
        return f"{self.ns}/{workload_of(self.plane, self.ns, job)['metadata']['name']}"


def _reason(plane: launcher.ControlPlane, ns: str, job: str) -> str:
    return str(condition(workload_of(plane, ns, job), "QuotaReserved").get("reason", ""))


def _wait_until(condition: Callable[[], bool], timeout: float) -> None:
    # conftest's wait_until, for this module-scoped fixture (its fixture is per test).
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met after {timeout}s")
        time.sleep(0.25)


@pytest.fixture(scope="module")
def blocked(
    gpu_cluster: launcher.ControlPlane,
    berth_operator: OperatorProcess,  # noqa: ARG001 - runs the operator
) -> Iterator[Blocked]:
    """Five blocked Jobs, and one admitted Job in each of the two ClusterQueues with quota."""
    plane = gpu_cluster
    # No pod has to run for these tests, so the namespace's ServiceAccount need not exist yet.
    ns = f"explain-{secrets.token_hex(3)}"
    plane.kubectl().run("create", "namespace", ns)
    a100 = f"{ns}-a100"
    strict = cluster_queue(f"{ns}-fifo", ns, {a100: 4})
    strict["spec"]["queueingStrategy"] = "StrictFIFO"
    plane.kubectl().apply(
        [
            flavor(a100, kwok.A100_LABELS),
            cluster_queue(f"{ns}-quota", ns, {a100: 4}),
            cluster_queue(f"{ns}-missing", ns, {f"{ns}-h100": 4}),
            cluster_queue(f"{ns}-elsewhere", f"{ns}-other", {a100: 4}),
            cluster_queue(f"{ns}-stale", f"{ns}-other", {a100: 4}),
            strict,
            local_queue("quota", ns, f"{ns}-quota"),
            local_queue("missing", ns, f"{ns}-missing"),
            local_queue("elsewhere", ns, f"{ns}-elsewhere"),
            local_queue("fifo", ns, f"{ns}-fifo"),
            local_queue("stale", ns, f"{ns}-stale"),
        ]
    )
    plane.kubectl().create(
        [
            gpu_job("running", ns, "quota", 3, runs_for="600s"),
            gpu_job("fifo-running", ns, "fifo", 3, runs_for="600s"),
        ]
    )
    _wait_until(
        lambda: all(_reason(plane, ns, j) == "QuotaReserved" for j in ("running", "fifo-running")),
        timeout=30,
    )
    plane.kubectl().create(
        [
            gpu_job("big", ns, "quota", 4, runs_for="60s"),
            gpu_job("no-flavor", ns, "missing", 1, runs_for="60s"),
            gpu_job("wrong-namespace", ns, "elsewhere", 1, runs_for="60s"),
            gpu_job("fifo-head", ns, "fifo", 4, runs_for="60s"),
            gpu_job("stale", ns, "stale", 1, runs_for="60s"),
        ]
    )
    _wait_until(lambda: _reason(plane, ns, "big") == "WaitingForQuota", timeout=30)
    _wait_until(lambda: _reason(plane, ns, "fifo-head") == "WaitingForQuota", timeout=30)
    _wait_until(lambda: _reason(plane, ns, "wrong-namespace") != "", timeout=30)
    _wait_until(lambda: workload_of(plane, ns, "no-flavor") != {}, timeout=30)
    # Once its ClusterQueue names a missing flavor, the operator stops evaluating "stale", so the
    # reason it recorded (Misconfigured) is no longer the one that holds.
    _wait_until(lambda: _reason(plane, ns, "stale") == "Misconfigured", timeout=30)
    plane.kubectl().apply([cluster_queue(f"{ns}-stale", f"{ns}-other", {f"{ns}-h100": 4})])
    # Queue order is creation time to the second, then uid: the small Job's Workload must be
    # created in a later second than the head's to queue behind it (it would fit on its own).
    created = workload_of(plane, ns, "fifo-head")["metadata"]["creationTimestamp"]
    head_created = dt.datetime.fromisoformat(created).timestamp()
    _wait_until(lambda: time.time() >= head_created + 1.0, timeout=5)
    plane.kubectl().create([gpu_job("fifo-small", ns, "fifo", 1, runs_for="60s")])
    _wait_until(lambda: workload_of(plane, ns, "fifo-small") != {}, timeout=30)
    yield Blocked(plane, ns)
    plane.kubectl().run("delete", "namespace", ns, "--wait=false")


@pytest.mark.e2e
def test_blocked_by_quota_says_what_must_free_up(blocked: Blocked) -> None:
    ns = blocked.ns
    lines = blocked.explain("big")
    assert lines[0] == f"job {ns}/big (workload {blocked.workload('big')}): pending"
    assert f"queues: LocalQueue quota -> ClusterQueue {ns}-quota" in lines
    assert (
        "why: WaitingForQuota: couldn't assign flavors to pod set main: insufficient unused "
        f"quota for nvidia.com/gpu in flavor {ns}-a100, 3 more needed"
    ) in lines
    assert f"position: 0 in its LocalQueue, 0 in ClusterQueue {ns}-quota (0 = head)" in lines
    assert f"flavor {ns}-a100: must free up 3 nvidia.com/gpu (1 of 4 available)" in lines
    assert "could preempt: nothing under this policy" in lines
    assert not any(line.startswith("condition:") for line in lines), (
        "the operator recorded the same reason and message, so no second line"
    )


@pytest.mark.e2e
def test_a_team_member_explains_their_job_with_the_queue_reader_role_alone(
    blocked: Blocked, tmp_path: pathlib.Path
) -> None:
    """Bound in the namespace only, plus queue-reader cluster-wide: no cluster-wide Jobs or Pods."""
    plane, ns = blocked.plane, blocked.ns
    user = adversary.namespace_user(plane, ns, tmp_path)

    def explain() -> Result:
        argv = ["explain", "job/big", "-n", ns, "--kubeconfig", str(user.kubeconfig)]
        return CliRunner().invoke(cli.main, argv)

    refused = explain()
    assert refused.exit_code == 1
    assert f"ask an admin to bind you the ClusterRole {live_state.QUEUE_READER_ROLE}" in (
        refused.output
    )
    assert "Traceback" not in refused.output
    role = f"{ns}-queue-reader"
    plane.kubectl().apply(
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": role},
                "rules": list(live_state.QUEUE_READER_RULES),
            }
        ]
    )
    plane.kubectl().run(
        "create",
        "clusterrolebinding",
        role,
        f"--clusterrole={role}",
        f"--serviceaccount={ns}:{user.name}",
    )
    try:
        result = explain()
        assert result.exit_code == 0, result.output
        lines = [line.strip() for line in result.stdout.splitlines()]
        assert lines[0].startswith("(read as a namespace user: jobs")
        assert f"job {ns}/big (workload {blocked.workload('big')}): pending" in lines
        assert any(line.startswith("why: WaitingForQuota") for line in lines)
    finally:
        plane.kubectl().run("delete", f"clusterrolebinding/{role}", f"clusterrole/{role}")


@pytest.mark.e2e
def test_blocked_by_a_missing_flavor_names_it(blocked: Blocked) -> None:
    ns = blocked.ns
    lines = blocked.explain("no-flavor")
    assert (
        f"why: Suspended: ClusterQueue {ns}-missing is inactive: Can't admit new workloads: "
        f"references missing ResourceFlavor(s): {ns}-h100"
    ) in lines
    assert (
        "note: FlavorNotFound: Can't admit new workloads: references missing "
        f"ResourceFlavor(s): {ns}-h100"
    ) in lines
    assert not any(line.startswith("position:") for line in lines)


@pytest.mark.e2e
def test_blocked_by_namespace_selector_shows_selector_and_labels(blocked: Blocked) -> None:
    ns = blocked.ns
    lines = blocked.explain("wrong-namespace")
    assert "why: Misconfigured: workload namespace doesn't match ClusterQueue selector" in lines
    assert (
        f"note: ClusterQueue {ns}-elsewhere namespaceSelector: "
        f"kubernetes.io/metadata.name={ns}-other"
    ) in lines
    assert f"note: namespace {ns} labels: kubernetes.io/metadata.name={ns}" in lines


@pytest.mark.e2e
def test_blocked_behind_a_strict_fifo_head_names_the_head(blocked: Blocked) -> None:
    ns = blocked.ns
    head = blocked.workload("fifo-head")
    lines = blocked.explain("fifo-small")
    assert (
        f"why: PendingEvaluation: StrictFIFO: waits behind the head of ClusterQueue {ns}-fifo, "
        f"{head}, which cannot be admitted"
    ) in lines
    assert f"position: 1 in its LocalQueue, 1 in ClusterQueue {ns}-fifo (0 = head)" in lines
    assert f"ahead of it: {head}" in lines
    assert (
        f"blocked head: {head}: WaitingForQuota: couldn't assign flavors to pod set main: "
        f"insufficient unused quota for nvidia.com/gpu in flavor {ns}-a100, 3 more needed"
    ) in lines
    assert "note: on its own: fits: it fits now; it will be admitted in the next cycle" in lines


@pytest.mark.e2e
def test_four_blockers_give_four_different_reasons(blocked: Blocked) -> None:
    whys = {
        next(line for line in blocked.explain(job) if line.startswith("why: ")).split(":")[1]
        for job in ("big", "no-flavor", "wrong-namespace", "fifo-small")
    }
    assert whys == {" WaitingForQuota", " Suspended", " Misconfigured", " PendingEvaluation"}


@pytest.mark.e2e
def test_the_recorded_reason_is_the_operators_condition(blocked: Blocked) -> None:
    ns = blocked.ns
    written = condition(workload_of(blocked.plane, ns, "big"), "QuotaReserved")
    world = live_state.read(str(blocked.plane.kubeconfig), None).world
    found = live_state.find(world, "job", "big", ns)
    assert (found.state, found.recorded) == ("pending", (written["reason"], written["message"]))
    assert f"why: {written['reason']}: {written['message']}" in blocked.explain("big")


@pytest.mark.e2e
def test_a_stale_recorded_reason_is_shown_beside_the_fresh_one(blocked: Blocked) -> None:
    ns = blocked.ns
    why = (
        f"why: Suspended: ClusterQueue {ns}-stale is inactive: Can't admit new workloads: "
        f"references missing ResourceFlavor(s): {ns}-h100"
    )
    _wait_until(lambda: why in blocked.explain("stale"), timeout=30)
    lines = blocked.explain("stale")
    assert (
        "condition: Misconfigured: workload namespace doesn't match ClusterQueue selector"
    ) in lines
    assert (
        lines.index(why)
        == lines.index(
            "condition: Misconfigured: workload namespace doesn't match ClusterQueue selector"
        )
        + 1
    )


@pytest.mark.e2e
def test_admitted_job_names_its_cluster_queue_and_flavor(blocked: Blocked) -> None:
    ns = blocked.ns
    lines = blocked.explain("running")
    workload = blocked.workload("running")
    assert lines == [
        f"job {ns}/running (workload {workload}): admitted in ClusterQueue {ns}-quota",
        f"pod set main: 3 pod(s), nvidia.com/gpu on flavor {ns}-a100",
    ]


@pytest.mark.e2e
def test_unknown_job_and_workload_are_errors(blocked: Blocked) -> None:
    job = blocked.berth("explain", "job/nope", "-n", blocked.ns)
    assert job.exit_code == 1
    assert job.output == f"Error: no Job nope in namespace {blocked.ns}\n"
    wl = blocked.berth("explain", "workload/nope", "-n", blocked.ns)
    assert wl.exit_code == 1
    assert wl.output == f"Error: no Workload nope in namespace {blocked.ns}\n"


@pytest.mark.e2e
def test_queues_shows_pending_counts_and_usage(blocked: Blocked) -> None:
    ns = blocked.ns
    result = blocked.berth("queues")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("at ")
    assert lines[0].endswith(" UTC")
    quota = lines.index(
        f"{ns}-quota  cohort=-  BestEffortFIFO  active  pending=1 active/0 inadmissible  admitted=1"
    )
    assert lines[quota + 1].split() == [
        f"{ns}-a100/nvidia.com/gpu",
        "[###############.....]",
        "3/4",
    ]
    assert (
        f"{ns}-fifo  cohort=-  StrictFIFO  active  pending=2 active/0 inadmissible  admitted=1"
    ) in lines
    assert (
        f"{ns}-missing  cohort=-  BestEffortFIFO  inactive (FlavorNotFound)  "
        "pending=0 active/1 inadmissible  admitted=0"
    ) in lines
    assert f"{ns}/quota  {ns}-quota  1  1" in lines
    assert f"{ns}/fifo  {ns}-fifo  2  1" in lines


def test_at_needs_a_scenario() -> None:
    result = CliRunner().invoke(cli.main, ["explain", "job/x", "--at", "5m"])
    assert result.exit_code == 2
    assert "--at needs --scenario" in result.output


def test_unreachable_cluster_is_one_error_line(tmp_path: pathlib.Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(f"https://127.0.0.1:{port}")))
        for args in (["explain", "job/x"], ["queues"]):
            result = CliRunner().invoke(cli.main, [*args, "--kubeconfig", str(kubeconfig)])
            assert result.exit_code == 1
            assert result.stdout == ""
            assert result.stderr.startswith("Error: cannot read the cluster: GET /apis/")
            assert "Cannot connect to host" in result.stderr
            assert result.stderr.count("\n") == 1
            assert result.exception is None or isinstance(result.exception, SystemExit)


def _kubeconfig(server: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
