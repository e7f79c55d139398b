"""``berth bench core``'s cycles by kind: what each cycle decided, and the line it prints.

Rows run one real cycle on a small world (two queues of 2 GPUs, no cohort) and name its kind;
the summary lists only the kinds seen, in ``CycleKind`` order, with count, p50 and slowest.
"""

from __future__ import annotations

import dataclasses
import types

import pytest

import builders
import worlds
from berth.core import cycle, workload
from berth.devtools import bench_cmd

GPU = "nvidia.com/gpu"
_K = bench_cmd.CycleKind


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    running: list[tuple[str, str, int, int]]
    """(name, queue, GPUs, priority) admitted before the cycle."""
    heads: list[tuple[str, str, int, int]]
    want: bench_cmd.CycleKind


ROWS = [
    Row("every head fits", [], [("a", "qa", 2, 0), ("b", "qb", 1, 0)], _K.ALL_ADMITTED),
    Row("no head fits", [("full", "qa", 2, 0)], [("late", "qa", 1, 0)], _K.NONE_ADMITTED),
    Row(
        "one fits, one does not",
        [("full", "qa", 2, 0)],
        [("late", "qa", 1, 0), ("b", "qb", 2, 0)],
        _K.MIXED,
    ),
    Row(
        "a higher priority head preempts (even beside an admission)",
        [("low", "qa", 2, 0)],
        [("urgent", "qa", 2, 9), ("b", "qb", 2, 0)],
        _K.PREEMPTING,
    ),
]


def _world() -> worlds.World:
    return worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        *(
            builders.ClusterQueueBuilder(cq)
            .flavor_quotas("a100", {GPU: 2})
            .preemption(within_cluster_queue="LowerPriority")
            for cq in ("cq-a", "cq-b")
        ),
        builders.LocalQueueBuilder("qa", "default").cluster_queue("cq-a"),
        builders.LocalQueueBuilder("qb", "default").cluster_queue("cq-b"),
    )


def _info(
    w: worlds.World, name: str, queue: str, gpus: int, priority: int
) -> workload.WorkloadInfo:
    wl = builders.WorkloadBuilder(name).queue(queue).priority(priority)
    return w.info(wl.pod_set("main", 1, {GPU: gpus}))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_a_cycle_is_named_by_what_it_decided(row: Row) -> None:
    w = _world()
    for name, queue, gpus, prio in row.running:
        w.admit(_info(w, name, queue, gpus, prio), "cq-a" if queue == "qa" else "cq-b")
    for name, queue, gpus, prio in row.heads:
        w.submit(_info(w, name, queue, gpus, prio))
    result = w.state.schedule(w.now, cycle.Policy())
    assert result is not None
    assert bench_cmd.CycleKind.of(result) == row.want


def test_the_summary_lists_each_kind_seen_with_count_p50_and_slowest() -> None:
    w = _world()
    w.submit(_info(w, "a", "qa", 1, 0))
    admitted = w.state.schedule(0.0, cycle.Policy())
    assert admitted is not None
    none = cycle.CycleResult()  # a cycle that decided nothing counts as admitting no head
    timer = bench_cmd._CycleTimer()
    for result, seconds, round_ in (
        (admitted, 0.004, 1),
        (none, 0.002, 1),
        (admitted, 0.001, 2),
        (none, 0.003, 3),
    ):
        # The timer reads only the round count of the simulator's queues.
        seen = types.SimpleNamespace(queues=types.SimpleNamespace(cycle=round_))
        timer.on_cycle(seen, result, seconds)  # type: ignore[arg-type]  # as above
    # p50 is the project's percentile: the value at index len/2 of the sorted durations.
    assert timer.kinds() == [
        "admitted every head: 2 cycles, p50 4.00 ms, max 4.00 ms",
        "admitted no head: 2 cycles, p50 3.00 ms, max 3.00 ms",
    ]
    # The cycles of one round (one per group of quota trees) add up to the round's cost.
    assert timer.round_seconds == pytest.approx({1: 0.006, 2: 0.001, 3: 0.003})
