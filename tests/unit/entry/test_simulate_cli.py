"""``berth simulate`` as a command: output formats, ``--until``, and its contract on bad input.

Bad input exits 2, prints nothing on standard output, and names the file, the document index
and the field path of every problem on standard error, without a traceback.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import builders
from berth.entry import cli
from berth.sim import engine
from operator_env import ROOT

GPU = "nvidia.com/gpu"
DATA = ROOT / "tests" / "unit" / "data"
"""Scenarios kept from the property tests' finds (``core/test_scheduling_properties.py``)."""


def _scenario(tmp_path: Path, *docs: dict[str, object]) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _world() -> list[dict[str, object]]:
    return [
        builders.ResourceFlavorBuilder("a100").raw(),
        builders.ClusterQueueBuilder("cq")
        .namespace_selector()
        .flavor_quotas("a100", {GPU: 4})
        .raw(),
        builders.LocalQueueBuilder("lq", "ml").cluster_queue("cq").raw(),
        builders.WorkloadBuilder("first", "ml")
        .queue("lq")
        .pod_set("main", 2, {GPU: 2})
        .sim(duration="60s")
        .raw(),
        builders.WorkloadBuilder("second", "ml")
        .queue("lq")
        .pod_set("main", 1, {GPU: 4})
        .sim(at="1s")
        .raw(),
    ]


def test_jsonl_is_one_json_event_per_line_ending_with_the_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.main, ["simulate", _scenario(tmp_path, *_world())])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == [
        "Admitted",
        "Pending",
        "Finished",
        "Admitted",
        "Summary",
    ]
    assert events[3] == {
        "t": 60.0,
        "event": "Admitted",
        "workload": "ml/second",
        "clusterQueue": "cq",
        "podSets": [{"name": "main", "count": 1, "flavors": {GPU: "a100"}}],
    }


def test_until_stops_the_clock_with_running_and_pending_work(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli.main, ["simulate", _scenario(tmp_path, *_world()), "--until", "30s"]
    )
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["t"] == 30.0
    assert summary["running"] == ["ml/first"]
    assert [p["workload"] for p in summary["pending"]] == ["ml/second"]
    assert summary["clusterQueues"]["cq"]["usage"] == {"a100": {GPU: "4"}}


@pytest.mark.parametrize(
    ("fmt", "want"),
    [
        pytest.param(
            "table", "1m    Admitted  ml/second  cq [mainx1] on a100", id="table is a timeline"
        ),
        pytest.param("summary", "a100/nvidia.com/gpu", id="summary has utilisation per flavor"),
    ],
)
def test_human_formats(tmp_path: Path, fmt: str, want: str) -> None:
    result = CliRunner().invoke(
        cli.main, ["simulate", _scenario(tmp_path, *_world()), "--output", fmt]
    )
    assert result.exit_code == 0
    assert want in result.stdout


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(
            builders.ClusterQueueBuilder("cq").flavor_quotas("a100", {GPU: "4x"}).raw(),
            "document 0: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota:",
            id="bad quantity in a ClusterQueue",
        ),
        pytest.param(
            builders.WorkloadBuilder("w").pod_set("main", 2, {GPU: 1}, min_count=3).raw(),
            "document 0: spec.podSets[0].minCount:",
            id="minCount above count",
        ),
        pytest.param(
            builders.JobBuilder("j").queue("lq").parallelism(2).min_parallelism(5).raw(),
            "document 0: metadata.annotations[berth.dev/job-min-parallelism]:",
            id="Job min-parallelism above parallelism, found before the run",
        ),
        pytest.param(
            builders.WorkloadBuilder("w").pod_set("main", 1, {GPU: 1}).sim(at="soon").raw(),
            "document 0: metadata.annotations[sim.berth.dev/at]:",
            id="bad simulation annotation",
        ),
        pytest.param(
            {"apiVersion": "example.com/v1", "kind": "Gadget"},
            "document 0: kind:",
            id="unknown kind",
        ),
        pytest.param(
            builders.JobSetBuilder("js").queue("lq").replicated_job("r").raw(),
            "document 0: kind: JobSet is not integrated: add jobset.x-k8s.io/jobset to the "
            "Configuration's integrations.frameworks",
            id="JobSet without its integration enabled",
        ),
        pytest.param(
            builders.JobSetBuilder("js")
            .queue("lq")
            .replicated_job("r")
            .set("spec.replicatedJobs[0].replicas", "two")
            .raw(),
            "document 0: spec.replicatedJobs[0].replicas:",
            id="JobSet with a bad replica count, found before the run",
        ),
    ],
)
def test_bad_input_exits_2_naming_file_document_and_path(
    tmp_path: Path, doc: dict[str, object], want: str
) -> None:
    path = _scenario(tmp_path, doc)
    result = CliRunner().invoke(cli.main, ["simulate", path])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{path}: {want}" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = _scenario(
        tmp_path,
        builders.ClusterQueueBuilder("cq")
        .strategy("Fifo")
        .flavor_quotas("a100", {GPU: "4x"})
        .raw(),
        builders.WorkloadBuilder("w").pod_set("main", 2, {GPU: 1}, min_count=3).raw(),
    )
    result = CliRunner().invoke(cli.main, ["simulate", path])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 3


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"\xff\xfe\x00kind: Job\n", id="UTF-16 byte order mark"),
        pytest.param(
            b"apiVersion: batch/v1\nkind: Job\nmetadata: {name: caf\xe9}\n", id="Latin-1 text"
        ),
        # 10 MB of random bytes from a fixed seed: the same bytes every run.
        pytest.param(
            random.Random(13).randbytes(10_000_000),  # noqa: S311 - test data, not a secret
            id="10 MB of random bytes",
        ),
    ],
)
def test_input_that_is_not_utf8_exits_2_naming_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(content)
    result = CliRunner().invoke(cli.main, ["simulate", str(path)])
    assert result.exit_code == 2
    assert f"{path}: document 0: not UTF-8 text" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_history_store_exits_2_naming_it(tmp_path: Path) -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused at once.
    url = "postgresql://nobody@127.0.0.1:1/history"
    result = CliRunner().invoke(
        cli.main, ["simulate", _scenario(tmp_path, *_world()), "--record", url]
    )
    assert result.exit_code == 2
    assert "--record: cannot reach the history store" in result.stderr
    assert "127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_run_that_never_settles_exits_1_naming_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine, "_MAX_CYCLES_PER_INSTANT", 2_000)  # the loop shows in a few
    scenario = DATA / "preemption-loop.yaml"
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "did not settle at t=15" in result.stderr
    assert "ns/w0, ns/w10, ns/w8 preempt each other in a loop" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda text: text.replace(
                "reclaimWithinCohort: Any", "reclaimWithinCohort: LowerPriority", 1
            ),
            id="reclaim-lower-priority-only",
        ),
        pytest.param(
            lambda text: (
                "apiVersion: berth.dev/v1beta1\nkind: Configuration\nmetadata:\n"
                "  name: config\nfairSharing: {}\n---\n" + text
            ),
            id="fair-sharing",
        ),
    ],
)
def test_the_loop_is_broken_as_docs_scheduling_says(
    change: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "_MAX_CYCLES_PER_INSTANT", 2_000)
    loop = (DATA / "preemption-loop.yaml").read_text()
    scenario = tmp_path / "settles.yaml"
    scenario.write_text(change(loop))
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario), "--output", "summary"])
    assert result.exit_code == 0, result.stderr
    assert "virtual time" in result.stdout


def test_the_summary_gives_a_backfill_queues_start_error() -> None:
    # The scenario's gang and the Job behind it start exactly when first estimated.
    scenario = ROOT / "tests" / "scenarios" / "backfill-reservation.yaml"
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario), "--output", "summary"])
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line}
    assert "  0s (n=2)  " in rows["backfill"]
    assert "  -  " in rows["besteffort"]
