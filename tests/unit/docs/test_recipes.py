"""The queue recipes of docs/admin-guide.md load, validate, and do what the guide promises.

Each recipe in ``config/recipes/`` is loaded through Berth's own loader and validators (as a
webhook would check it on ``kubectl apply``), then replayed with its Jobs from
``config/recipes/jobs/`` through ``berth simulate``; each row states the behaviour the guide
promises and the events that show it.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from berth.api import base, kinds
from berth.entry import cli
from operator_env import ROOT

RECIPES = ROOT / "config" / "recipes"
GUIDE = ROOT / "docs" / "admin-guide.md"
GPU = "nvidia.com/gpu"


def _documents(path: pathlib.Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _recipe_files() -> list[pathlib.Path]:
    return sorted(RECIPES.glob("*.yaml")) + sorted((RECIPES / "jobs").glob("*.yaml"))


def _berth_documents() -> list[Any]:
    return [
        pytest.param(doc, id=f"{path.relative_to(RECIPES)}[{i}] {doc['kind']}")
        for path in _recipe_files()
        for i, doc in enumerate(_documents(path))
        if doc.get("apiVersion") == base.API_VERSION
    ]


@pytest.mark.parametrize("doc", _berth_documents())
def test_recipe_document_loads_validates_and_prints_back_unchanged(doc: dict[str, Any]) -> None:
    obj, problems = kinds.try_load(doc)
    assert problems == []
    assert obj is not None
    assert obj.to_yaml_dict() == doc


def test_recipes_apply_as_is_only_namespaces_and_berth_kinds() -> None:
    for path in sorted(RECIPES.glob("*.yaml")):
        for doc in _documents(path):
            assert (doc["apiVersion"], doc["kind"]) == ("v1", "Namespace") or doc[
                "apiVersion"
            ] == base.API_VERSION, path.name
            assert "sim.berth.dev/at" not in str(doc), f"{path.name}: simulator-only annotations"


def test_the_admin_guide_names_every_recipe_file_and_only_existing_ones() -> None:
    named = set(re.findall(r"config/recipes/[\w/.-]+\.yaml", GUIDE.read_text()))
    on_disk = {str(p.relative_to(ROOT)) for p in _recipe_files()}
    assert named == on_disk


@dataclasses.dataclass(frozen=True)
class Recipe:
    id: str
    files: tuple[str, ...]
    promise: str
    want_admitted: tuple[tuple[str, float, str], ...] = ()
    """(job, time, flavor of nvidia.com/gpu or of the first resource) of an Admitted event."""
    want_preempted: tuple[tuple[str, float, str, str], ...] = ()
    """(victim job, time, reason, preemptor job)."""
    want_pending: tuple[tuple[str, float, str, str], ...] = ()
    """(job, time, reason, a part of the message)."""
    want_evicted: tuple[tuple[str, float, str], ...] = ()
    want_requeued: tuple[tuple[str, float, str], ...] = ()
    want_gpus_at: tuple[str, dict[str, int]] | None = None
    """(--until, GPUs in use per ClusterQueue then)."""
    want_never_admitted: tuple[str, ...] = ()


def _files(*names: str) -> tuple[str, ...]:
    return tuple(str(RECIPES / n) for n in names)


RECIPE_CASES = [
    Recipe(
        "team quotas: experiments borrow idle GPUs, teams take them back",
        _files("team-quotas.yaml", "jobs/team-quotas.yaml"),
        "experiments (no quota) borrow the pool and what teams lend (16 + 8 + 8 = 32 GPUs); a "
        "team within its quota reclaims lent GPUs; a team borrowing preempts experiments",
        want_admitted=(
            ("research/sweep-1", 10.0, "gpu"),
            ("research/sweep-4", 10.0, "gpu"),
            ("team-b/train-b", 300.0, "gpu"),
            ("team-a/train-a-big", 600.0, "gpu"),
        ),
        want_preempted=(
            ("research/sweep-1", 300.0, "InCohortReclamation", "team-b/train-b"),
            ("research/sweep-2", 600.0, "InCohortReclaimWhileBorrowing", "team-a/train-a-big"),
            ("research/sweep-3", 600.0, "InCohortReclaimWhileBorrowing", "team-a/train-a-big"),
        ),
        # team-a at nominal 16 + borrowingLimit 8; experiments keep one sweep.
        want_gpus_at=("11m", {"team-a": 24, "team-b": 16, "experiments": 8}),
    ),
    Recipe(
        "gpu models: A100 first, then H100; a pinned Job waits for its model",
        _files("gpu-flavors.yaml", "jobs/gpu-flavors.yaml"),
        "flavors are tried in order; a nodeSelector on the model label restricts the flavors",
        want_admitted=(
            ("ml/pretrain", 0.0, "a100"),
            ("ml/finetune", 10.0, "h100"),
            ("ml/bench-h100", 30.0, "h100"),
            ("ml/eval-on-a100", 3600.0, "a100"),
        ),
        want_pending=(
            ("ml/eval-on-a100", 20.0, "WaitingForQuota", "flavor h100 doesn't match node affinity"),
        ),
    ),
    Recipe(
        "mig: each profile has its own quota; an unlisted resource never fits",
        _files("mig.yaml", "jobs/mig.yaml"),
        "slices of one profile run out while another profile still admits; a whole GPU request "
        "in a MIG-only queue is NoMatchingFlavor",
        want_admitted=(
            ("inference/embed-small", 0.0, "a100-mig"),
            ("inference/rerank", 120.0, "a100-mig"),
            ("inference/embed-more", 1200.0, "a100-mig"),
        ),
        want_pending=(
            (
                "inference/embed-more",
                60.0,
                "WaitingForQuota",
                "insufficient unused quota for nvidia.com/mig-1g.10gb",
            ),
            (
                "inference/whole-gpu",
                180.0,
                "NoMatchingFlavor",
                "resource nvidia.com/gpu unavailable in ClusterQueue",
            ),
        ),
        want_never_admitted=("inference/whole-gpu",),
    ),
    Recipe(
        "priorities: urgent preempts the lowest, higher priority goes first",
        _files("priorities.yaml", "jobs/priorities.yaml"),
        "withinClusterQueue: LowerPriority preempts the lowest-priority Job; a Job without a "
        "class (priority 0) preempts nothing and is admitted after higher priorities",
        want_admitted=(
            ("ml/hotfix", 60.0, "gpu"),
            ("ml/sweep", 660.0, "gpu"),
            ("ml/unlabelled", 1800.0, "gpu"),
        ),
        want_preempted=(("ml/sweep", 60.0, "InClusterQueue", "ml/hotfix"),),
    ),
    Recipe(
        "stop policies: Hold admits nothing new, HoldAndDrain evicts, None resumes",
        _files("stop.yaml", "jobs/stop.yaml"),
        "a held ClusterQueue keeps its Jobs running; drained, it evicts them; resumed, it "
        "requeues and admits them; a LocalQueue can be drained alone",
        want_pending=(
            ("ml/train-3", 180.0, "Suspended", "ClusterQueue ml is stopped"),
            ("ml/etl", 1200.0, "Suspended", "LocalQueue batch is stopped"),
        ),
        want_evicted=(
            ("ml/train-1", 300.0, "ClusterQueueStopped"),
            ("ml/train-2", 300.0, "ClusterQueueStopped"),
            ("ml/etl", 1200.0, "LocalQueueStopped"),
        ),
        want_requeued=(
            ("ml/train-1", 600.0, "ClusterQueueRestarted"),
            ("ml/etl", 1800.0, "LocalQueueRestarted"),
        ),
        want_admitted=(("ml/train-3", 600.0, "gpu"), ("ml/etl", 1800.0, "gpu")),
    ),
    Recipe(
        "fair sharing: weight 2 gets twice the GPUs once everyone is busy",
        _files("fair-sharing.yaml", "fair-sharing-config.yaml", "jobs/fair-sharing.yaml"),
        "the first team takes the idle pool; later teams preempt it down to weighted shares",
        want_preempted=(
            ("vision/vision-1", 600.0, "InCohortFairSharing", "platform/platform-1"),
            ("platform/platform-1", 1200.0, "InCohortFairSharing", "speech/speech-1"),
        ),
        want_gpus_at=("25m", {"platform": 12, "vision": 6, "speech": 6}),
    ),
    Recipe(
        "backfill: the big gang keeps its reservation, small Jobs fill the gap",
        _files("backfill.yaml", "jobs/backfill.yaml"),
        "pretrain (16 GPUs) holds a reservation at 3h; eval ends before it and starts, tune would "
        "delay it and waits, notebook-batch fits into the gap; pretrain starts when estimated",
        want_admitted=(
            ("research/eval", 600.0, "h100"),
            ("research/notebook-batch", 3900.0, "h100"),
            ("research/pretrain", 10800.0, "h100"),
            ("research/tune", 25200.0, "h100"),
        ),
        want_pending=(
            ("research/pretrain", 300.0, "WaitingForQuota", "estimated start at 3h"),
            ("research/tune", 1800.0, "WaitingForReservation", "would delay the reservation of"),
        ),
    ),
    Recipe(
        "preemption: a protected borrower runs 30 minutes, a team loses one job an hour",
        _files("preemption.yaml", "jobs/preemption.yaml"),
        "team-a reclaims its quota from team-b only once team-b's jobs have run 30 minutes, and "
        "its second reclaim waits until team-b's budget of one preemption per hour allows it",
        want_admitted=(
            ("team-a/train-1", 1800.0, "gpu"),
            ("team-a/train-2", 5400.0, "gpu"),
        ),
        want_preempted=(
            ("team-b/sweep-1", 1800.0, "InCohortReclamation", "team-a/train-1"),
            ("team-b/sweep-4", 5400.0, "InCohortReclamation", "team-a/train-2"),
        ),
        want_pending=(
            (
                "team-a/train-1",
                600.0,
                "WaitingForQuota",
                "4 workload(s) it could preempt are protected from preemption until 30m",
            ),
            (
                "team-a/train-2",
                2400.0,
                "WaitingForQuota",
                "the preemption budget of ClusterQueue team-b is spent until 1h30m",
            ),
        ),
    ),
]


def _simulate(files: tuple[str, ...], *extra: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli.main, ["simulate", *files, *extra])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _flavor(event: dict[str, Any]) -> str:
    flavors = event["podSets"][0]["flavors"]
    return str(flavors.get(GPU, next(iter(flavors.values()))))


@pytest.mark.parametrize("case", RECIPE_CASES, ids=lambda c: c.id)
def test_recipe_does_what_the_guide_promises(case: Recipe) -> None:
    events = _simulate(case.files)
    got: dict[str, set[tuple[Any, ...]]] = {
        "Admitted": {(e["job"], e["t"], _flavor(e)) for e in events if e["event"] == "Admitted"},
        "Preempted": {
            (e["job"], e["t"], e["reason"], e["by"].rsplit("-", 1)[0].replace("/job-", "/"))
            for e in events
            if e["event"] == "Preempted"
        },
        "Evicted": {(e["job"], e["t"], e["reason"]) for e in events if e["event"] == "Evicted"},
        "Requeued": {(e["job"], e["t"], e["reason"]) for e in events if e["event"] == "Requeued"},
    }
    for admitted in case.want_admitted:
        assert admitted in got["Admitted"], case.promise
    for preempted in case.want_preempted:
        assert preempted in got["Preempted"], case.promise
    for evicted in case.want_evicted:
        assert evicted in got["Evicted"], case.promise
    for requeued in case.want_requeued:
        assert requeued in got["Requeued"], case.promise
    for job, t, reason, part in case.want_pending:
        assert any(
            e["event"] == "Pending"
            and (e["job"], e["t"], e["reason"]) == (job, t, reason)
            and part in e["message"]
            for e in events
        ), (case.promise, job, reason)
    admitted_jobs = {job for job, _, _ in got["Admitted"]}
    for job in case.want_never_admitted:
        assert job not in admitted_jobs
        assert job in {p["job"] for p in events[-1]["pending"]}
    if case.want_gpus_at is not None:
        until, want_gpus = case.want_gpus_at
        summary = _simulate(case.files, "--until", until)[-1]
        gpus = {
            cq: sum(int(per_flavor.get(GPU, "0")) for per_flavor in status["usage"].values())
            for cq, status in summary["clusterQueues"].items()
        }
        assert gpus == want_gpus, case.promise


def _guide_yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)


def test_every_yaml_excerpt_in_the_guide_is_copied_verbatim_from_a_recipe() -> None:
    recipes = [p.read_text() for p in _recipe_files()]
    blocks = _guide_yaml_blocks()
    assert blocks
    for block in blocks:
        assert any(block in text for text in recipes), block
