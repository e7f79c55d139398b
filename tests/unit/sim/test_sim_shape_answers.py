"""The simulator's answer to workloads parked with their shape (``sim.engine``, ``state.queues``).

A head that does not fit is parked with every workload of its shape, and they are told its
answer: each says so with one Pending event when its reason changes, and holds the newest
message (the summary's, ``berth explain``'s) however often the shape is tried again.
"""

from __future__ import annotations

from typing import Any

import builders
from berth.sim import documents, engine

GPU = "nvidia.com/gpu"

_NO_ROOM = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
    "flavor gpu, {} more needed"
)


JobRow = tuple[str, int, float, float | None]


def _scenario(jobs: list[JobRow]) -> list[documents.Document]:
    """One 8-GPU ClusterQueue; ``jobs``: name, GPUs, arrival and runtime (None: runs on)."""
    raws: list[dict[str, Any]] = [
        builders.ResourceFlavorBuilder("gpu").raw(),
        builders.ClusterQueueBuilder("cq").flavor_quotas("gpu", {GPU: 8}).raw(),
        builders.LocalQueueBuilder("lq", cluster_queue="cq").raw(),
    ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for name, gpus, at, runtime in jobs:
        raw = builders.WorkloadBuilder(name).queue("lq").pod_set("main", 1, {GPU: gpus}).raw()
        docs.append(documents.generated(raw, len(docs), at=at, run_for=runtime))
    return docs


def test_workloads_parked_with_their_shape_hold_the_newest_answer() -> None:
    # 5 + 1 + 1 of 8 GPUs run; six 4-GPU workloads wait. Each time a 1-GPU workload ends, the
    # first of them is tried again and still does not fit, with another message: all six hold
    # the newest, and each told of its reason once. (Six, so that most of them move as a group
    # that already holds an answer when the next one comes.)
    running: list[JobRow] = [
        ("hog", 5, 0.0, 100.0),
        ("small-a", 1, 0.0, 30.0),
        ("small-b", 1, 0.0, 50.0),
    ]
    waiting: list[JobRow] = [(f"w{i}", 4, 1.0, None) for i in range(6)]
    sim = engine.Simulator(_scenario(running + waiting), until=60)
    events = sim.run()
    pending = [e for e in events if e["event"] == "Pending"]
    assert sorted(e["workload"] for e in pending) == [f"default/w{i}" for i in range(6)]
    assert {e["message"] for e in pending} == {_NO_ROOM.format(3)}
    parked = [sim.workloads[k] for k in sorted(sim.workloads) if k.name.startswith("w")]
    want = (pending[0]["reason"], _NO_ROOM.format(1))
    assert [sim.answer(w) for w in parked] == [want] * 6
    summary = events[-1]["pending"]
    assert [(p["reason"], p["message"]) for p in summary] == [want] * 6
