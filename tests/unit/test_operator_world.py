"""The operator's ``World``: what the job controller is asked to look at again."""

from __future__ import annotations

from berth.api import configuration, names
from berth.entry.operator import world as world_mod
from operator_env import gpu_job, priority_class


def test_a_job_without_workload_is_looked_at_again_when_a_priority_class_arrives() -> None:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    job = gpu_job("train", "team", "lq", 2, runs_for="1s", priority="urgent")
    job["metadata"].update(uid="uid-1", resourceVersion="5")
    world.apply("Job", job)
    world.dirty_jobs.clear()  # the job controller looked, and the class was unknown
    world.apply("WorkloadPriorityClass", priority_class("urgent", 1000))
    assert world.dirty_jobs == {names.WorkloadKey("team", "train")}
