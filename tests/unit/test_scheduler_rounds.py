"""The operator's scheduler: a round of cycles, one per group of quota trees, in batches.

Once a batch's time is up the round stops between two groups; the next round starts with those
left out.
"""

from __future__ import annotations

from typing import Any

from berth.adapters.kube import events
from berth.api import configuration
from berth.core import batchjob
from berth.operator import scheduler as scheduler_mod
from berth.operator import world as world_mod
from operator_env import cluster_queue, flavor, gpu_job, local_queue


def _world(queues: list[str]) -> world_mod.World:
    """A ClusterQueue per name, each its own quota tree, with one Workload queued in each."""
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    world.apply("ResourceFlavor", flavor("a100", {"gpu": "a100"}))
    for cq in queues:
        world.apply("ClusterQueue", cluster_queue(cq, f"ns-{cq}", {"a100": 4}))
        world.apply("LocalQueue", local_queue("lq", f"ns-{cq}", cq))
        job = gpu_job(f"train-{cq}", f"ns-{cq}", "lq", 4, runs_for="1s")
        obj, problems = batchjob.to_workload(job, uid=f"uid-{cq}", honor_kueue=False)
        assert obj is not None, problems
        body: dict[str, Any] = obj.to_yaml_dict()
        body["metadata"].update(name=f"train-{cq}", resourceVersion="1", uid=f"wl-{cq}")
        world.apply("Workload", body)
    return world


def _admitted(writes: list[Any]) -> list[str]:
    return [w.key.name for w in writes if w.kind == scheduler_mod.WriteKind.ADMIT]


def test_a_round_past_its_deadline_stops_between_groups_and_the_next_goes_on_from_there() -> None:
    world = _world(["a", "b", "c"])
    api: Any = object()  # decide writes nothing itself: it returns the writes
    sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))
    # A deadline already past: each round runs its first group only, and says it progressed
    # (the groups left out still have heads).
    first, more = sched.decide(1000.0, deadline=0.0)
    assert (_admitted(first), more) == (["train-a"], True)
    second, more = sched.decide(1000.0, deadline=0.0)
    assert (_admitted(second), more) == (["train-b"], True)
    # Without a deadline the round runs every group left: c's is the only head.
    rest, _ = sched.decide(1000.0)
    assert _admitted(rest) == ["train-c"]
    assert sched.cycles == 3


def test_a_round_in_time_runs_a_cycle_per_quota_tree() -> None:
    world = _world(["a", "b", "c"])
    api: Any = object()
    sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))
    writes, more = sched.decide(1000.0)
    assert (_admitted(writes), more) == (["train-a", "train-b", "train-c"], True)
    assert sched.cycles == 3
