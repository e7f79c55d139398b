from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from berth.api import base, kinds
from berth.entry import cli
from operator_env import ROOT

SAMPLES = ROOT / "config" / "samples"
PER_KIND = [
    "resourceflavors.yaml",
    "cohorts.yaml",
    "clusterqueues.yaml",
    "localqueues.yaml",
    "priorityclasses.yaml",
]
"""The per-kind samples that together make up queues.yaml's Berth documents, in that order."""


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d is not None]


def _berth_documents() -> list[Any]:
    return [
        pytest.param(
            doc, id=f"{path.name}[{i}] {doc['kind']} {doc.get('metadata', {}).get('name', '')}"
        )
        for path in sorted(SAMPLES.glob("*.yaml"))
        for i, doc in enumerate(_documents(path.name))
        if doc.get("apiVersion") == base.API_VERSION
    ]


@pytest.mark.parametrize("doc", _berth_documents())
def test_sample_loads_validates_and_prints_back_unchanged(doc: dict[str, Any]) -> None:
    obj, problems = kinds.try_load(doc)
    assert problems == []
    assert obj is not None
    assert obj.to_yaml_dict() == doc


def test_every_kind_has_a_sample() -> None:
    kinds_seen = {
        doc["kind"]
        for path in SAMPLES.glob("*.yaml")
        for doc in _documents(path.name)
        if doc.get("apiVersion") == base.API_VERSION
    }
    assert kinds_seen == set(kinds.BERTH_KINDS)


def test_per_kind_samples_are_the_queues_of_queues_yaml() -> None:
    queues = [d for d in _documents("queues.yaml") if d["apiVersion"] == base.API_VERSION]
    assert [d for name in PER_KIND for d in _documents(name)] == queues


def test_queues_yaml_declares_the_namespaces_its_queues_select() -> None:
    docs = _documents("queues.yaml")
    namespaces = {
        d["metadata"]["name"]: d["metadata"]["labels"] for d in docs if d["kind"] == "Namespace"
    }
    for lq in (d for d in docs if d["kind"] == "LocalQueue"):
        assert lq["metadata"]["namespace"] in namespaces
    for cq in (d for d in docs if d["kind"] == "ClusterQueue"):
        want = cq["spec"]["namespaceSelector"]["matchLabels"]
        assert any(want.items() <= labels.items() for labels in namespaces.values())


def test_sample_jobs_are_queued_batch_jobs() -> None:
    jobs = _documents("jobs.yaml")
    assert 8 <= len(jobs) <= 12
    for job in jobs:
        assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
        assert job["metadata"]["labels"]["berth.dev/queue-name"] == "training"
        assert {"sim.berth.dev/at", "sim.berth.dev/duration"} <= set(job["metadata"]["annotations"])


def _events() -> list[dict[str, Any]]:
    args = ["simulate", str(SAMPLES / "queues.yaml"), str(SAMPLES / "jobs.yaml")]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_demo_tells_the_story_its_comments_tell() -> None:
    events = _events()
    by_job: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_job.setdefault(event.get("job", ""), []).append(event)

    def admitted(job: str) -> dict[str, Any]:
        return next(e for e in by_job[job] if e["event"] == "Admitted")

    def flavor(job: str) -> str:
        flavors = admitted(job)["podSets"][0]["flavors"]
        return str(flavors.get("nvidia.com/gpu", flavors["cpu"]))

    assert flavor("team-a/pretrain-7b") == "a100"
    assert flavor("team-a/ablation-lr") == "h100", "A100 is full, so the ablation lands on H100"
    assert flavor("team-a/tokenize") == "spot", "CPU-only work borrows the cohort's spot pool"
    sweep = admitted("team-b/sweep-big")["podSets"][0]["count"]
    assert 4 <= sweep < 12, "the sweep is admitted partially"
    preempted = [e for e in events if e["event"] == "Preempted"]
    assert any(
        e["job"] == "team-a/ablation-lr"
        and e["reason"] == "InClusterQueue"
        and e["by"].startswith("team-a/job-hotfix-h100")
        for e in preempted
    ), "the urgent H100 job preempts a lower-priority job of its own team"
    summary = events[-1]
    assert summary["event"] == "Summary"
    assert summary["pending"] == []
    assert len(summary["finished"]) == len(_documents("jobs.yaml"))
