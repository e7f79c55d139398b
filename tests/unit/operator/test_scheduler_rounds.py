"""The operator's scheduler runs a round of cycles, one per group of quota trees, in one batch."""

from __future__ import annotations

from typing import Any

from berth.adapters.kube import events
from berth.api import configuration
from berth.jobs import batchjob
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


def test_a_round_runs_a_cycle_per_quota_tree_and_writes_them_in_one_batch() -> None:
    world = _world(["a", "b", "c"])
    api: Any = object()  # decide writes nothing itself: it returns the writes
    sched = scheduler_mod.Scheduler(world, api, events.Recorder(api))
    writes, more = sched.decide(1000.0)
    assert (_admitted(writes), more) == (["train-a", "train-b", "train-c"], True)
    assert sched.cycles == 3
