"""The order of preemption victims by the work they would lose, and the priority boost.

Anchors:
- Kueue's ``CandidatesOrdering`` (``pkg/scheduler/preemption/common/ordering.go``): evicted
  first, other ClusterQueues first, lower priority first, most recently admitted first, uid.
- Berth's criterion 4 (``core.ordering.candidate_key``): the latest start of unsaved work, the
  admission or a later ``berth.dev/checkpointed-at``; the same as Kueue's without checkpoints.
- KEP-7990 (``kueue.x-k8s.io/priority-boost``, Berth's ``berth.dev/priority-boost``): the
  effective priority, base plus boost, orders candidates and decides ``LowerPriority``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

import builders
import worlds
from berth.api import workload

GPU = "nvidia.com/gpu"


def _time(seconds: float) -> str:
    """An RFC 3339 time ``seconds`` after the epoch (the test world's clock starts there)."""
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).isoformat().replace("+00:00", "Z")


@dataclasses.dataclass(frozen=True)
class Running:
    name: str
    gpus: int
    admitted_at: float
    priority: int = 0
    checkpointed_at: float | None = None
    boost: int | None = None


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    running: list[Running]
    needs: int
    """GPUs the preemptor (priority 10) needs beyond what is free."""
    want: list[str]
    """Victims, in the order they are taken."""


ROWS = [
    Row(
        "no checkpoints: the most recently admitted first (Kueue's criterion)",
        [Running("old", 4, 0), Running("young", 4, 500)],
        4,
        ["young"],
    ),
    Row(
        "a checkpoint after admission makes the older job the cheaper victim",
        [Running("old", 4, 0, checkpointed_at=900), Running("young", 4, 500)],
        4,
        ["old"],
    ),
    Row(
        "a checkpoint from before this admission saved nothing this run loses",
        [Running("young", 4, 500, checkpointed_at=100), Running("old", 4, 300)],
        4,
        ["young"],
    ),
    Row(
        "time since the checkpoint, not GPUs x time: one 8-GPU hour before eight 1-GPU 2 hours",
        [Running(f"small-{i}", 1, 0) for i in range(8)] + [Running("big", 8, 3600)],
        8,
        ["big"],
    ),
    Row(
        "priority still comes first: a fresh checkpoint does not make a higher priority a victim",
        [Running("low", 4, 0), Running("mid", 4, 0, priority=5, checkpointed_at=900)],
        4,
        ["low"],
    ),
    Row(
        "a boost above the preemptor's priority makes a low job no victim under LowerPriority",
        [Running("boosted", 4, 500, boost=20), Running("plain", 4, 0)],
        4,
        ["plain"],
    ),
    Row(
        "a negative boost makes a job a victim before a younger one of a lower class",
        [Running("lowered", 4, 0, priority=5, boost=-5), Running("peer", 4, 500, priority=3)],
        4,
        ["lowered"],
    ),
    Row(
        "a boost that makes it equal to the preemptor protects it under LowerPriority",
        [Running("equal", 16, 0, boost=10)],
        4,
        [],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_victims_by_lost_work_and_effective_priority(row: Row) -> None:
    w = worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        builders.ClusterQueueBuilder("cq")
        .flavor_quotas("a100", {GPU: 16})
        .preemption(within_cluster_queue="LowerPriority"),
        builders.LocalQueueBuilder("q", "default").cluster_queue("cq"),
    )
    for r in row.running:
        notes = {}
        if r.checkpointed_at is not None:
            notes[workload.CHECKPOINTED_AT_ANNOTATION] = _time(r.checkpointed_at)
        if r.boost is not None:
            notes[workload.PRIORITY_BOOST_ANNOTATION] = str(r.boost)
        wl = (
            builders.WorkloadBuilder(r.name)
            .queue("q")
            .priority(r.priority)
            .annotations(notes)
            .pod_set("main", 1, {GPU: r.gpus})
        )
        w.admit(w.info(wl, at=r.admitted_at), "cq", at=r.admitted_at)
    free = 16 - sum(r.gpus for r in row.running)
    preemptor = w.info(
        builders.WorkloadBuilder("new")
        .queue("q")
        .priority(10)
        .pod_set("main", 1, {GPU: free + row.needs}),
        at=1000.0,
    )
    _, targets = w.assign(preemptor, "cq")
    assert [t.victim.info.key.name for t in targets] == row.want


@pytest.mark.parametrize(
    ("notes", "priority"),
    [
        ({}, 7),
        ({workload.PRIORITY_BOOST_ANNOTATION: "150"}, 157),
        ({workload.PRIORITY_BOOST_ANNOTATION: "-8"}, -1),
        ({workload.PRIORITY_BOOST_ANNOTATION: "+3"}, 10),
    ],
)
def test_the_effective_priority_is_the_base_plus_the_boost(
    notes: dict[str, str], priority: int
) -> None:
    w = worlds.World()
    info = w.info(
        builders.WorkloadBuilder("wl").priority(7).annotations(notes).pod_set("main", 1, {GPU: 1})
    )
    assert info.priority == priority
    assert info.priority_boost == priority - 7
