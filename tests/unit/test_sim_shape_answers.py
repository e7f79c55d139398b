"""The simulator's answer to workloads parked with their shape (``sim.engine``, ``state.queues``).

A head that does not fit is parked with every workload of its shape, and they are told its
answer: each says so with one Pending event when its reason changes, and holds the newest
message (the summary's, ``berth explain``'s) however often the shape is tried again.
"""

from __future__ import annotations

from typing import Any

from berth.api import base
from berth.sim import documents, engine

GPU = "nvidia.com/gpu"


def _workload(name: str, gpus: int, *, at: float, run_for: float | None = None) -> dict[str, Any]:
    return {
        "raw": {
            "apiVersion": base.API_VERSION,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {GPU: gpus}}}
                                ]
                            }
                        },
                    }
                ],
            },
        },
        "at": at,
        "run_for": run_for,
    }


def _scenario(workloads: list[dict[str, Any]]) -> list[documents.Document]:
    raws: list[dict[str, Any]] = [
        {"apiVersion": base.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "gpu"}},
        {
            "apiVersion": base.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": [GPU],
                        "flavors": [
                            {"name": "gpu", "resources": [{"name": GPU, "nominalQuota": 8}]}
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": base.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ml"},
            "spec": {"clusterQueue": "cq"},
        },
    ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for wl in workloads:
        docs.append(documents.generated(wl["raw"], len(docs), at=wl["at"], run_for=wl["run_for"]))
    return docs


def test_workloads_parked_with_their_shape_hold_the_newest_answer() -> None:
    # 5 + 1 + 1 of 8 GPUs run; six 4-GPU workloads wait. Each time a 1-GPU workload ends, the
    # first of them is tried again and still does not fit, with another message: all six hold
    # the newest, and each told of its reason once. (Six, so that most of them move as a group
    # that already holds an answer when the next one comes.)
    sim = engine.Simulator(
        _scenario(
            [
                _workload("hog", 5, at=0, run_for=100),
                _workload("small-a", 1, at=0, run_for=30),
                _workload("small-b", 1, at=0, run_for=50),
                *(_workload(f"w{i}", 4, at=1) for i in range(6)),
            ]
        ),
        until=60,
    )
    events = sim.run()
    pending = [e for e in events if e["event"] == "Pending"]
    assert sorted(e["workload"] for e in pending) == [f"ml/w{i}" for i in range(6)]
    assert {e["message"] for e in pending} == {_NO_ROOM.format(3)}
    waiting = [sim.workloads[k] for k in sorted(sim.workloads) if k.name.startswith("w")]
    want = (pending[0]["reason"], _NO_ROOM.format(1))
    assert [sim.answer(w) for w in waiting] == [want] * 6
    summary = events[-1]["pending"]
    assert [(p["reason"], p["message"]) for p in summary] == [want] * 6


_NO_ROOM = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
    "flavor gpu, {} more needed"
)
