"""A Backfill plan's fitting test: the quota check it makes of holders whose flavor is forced.

A plan asks whether each holder fits many times as it passes releases. Once a holder fitted in a
queue that gives each of its resources a single flavor, the planner answers later questions
with a quota check of the usage found then (``core.reservations``). These tests hold it to the
answer of a full flavor assignment as the quota changes in between, in a queue with one flavor
and in one with a second flavor to fall back on.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
from berth.api import names
from berth.core import flavors as flavors_mod
from berth.core import workload
from berth.core.backfill import estimates, reservations
from worlds import World

GPU = "nvidia.com/gpu"
CPU = "cpu"
_ESTIMATE = estimates.Estimate(3600.0, estimates.Source.DEFAULT)


def _world(flavors: tuple[str, ...]) -> World:
    """``cq`` (8 GPUs and 16 CPUs in each of ``flavors``) and ``other`` (8 GPUs) in one cohort."""
    queue = builders.ClusterQueueBuilder("cq").cohort("pool")
    for flavor in flavors:
        queue.flavor_quotas(flavor, {GPU: 8, CPU: 16})
    return World(
        *(builders.ResourceFlavorBuilder(f) for f in sorted({*flavors, "gpu"})),
        queue,
        builders.ClusterQueueBuilder("other").cohort("pool").flavor_quotas("gpu", {GPU: 8}),
        builders.LocalQueueBuilder("q", "default").cluster_queue("cq"),
        builders.LocalQueueBuilder("oq", "default").cluster_queue("other"),
    )


def _planner(w: World) -> reservations.Planner:
    inputs = reservations.Inputs(holders={}, estimate=lambda _info, _cq: _ESTIMATE)
    return reservations.Planner(w.snap, w.now, inputs, {})


def _job(w: World, name: str, queue: str, gpus: int, cpus: int = 0) -> workload.WorkloadInfo:
    requests = {GPU: gpus} if not cpus else {GPU: gpus, CPU: cpus}
    return w.info(builders.WorkloadBuilder(name).queue(queue).pod_set("main", 1, requests))


_Step = tuple[bool, int]
"""Admit (True) a job of that many GPUs into ``other`` if it fits, or finish (False) the job
admitted that many steps back (modulo those running)."""

_STEPS = st.lists(st.tuples(st.booleans(), st.integers(1, 8)), min_size=1, max_size=25)


@pytest.mark.parametrize(
    "flavors",
    [("gpu",), ("gpu", "spare")],
    ids=["one flavor: a quota check", "two flavors: the other flavor once the first is full"],
)
@settings(max_examples=60, deadline=None)
@given(steps=_STEPS, gpus=st.integers(1, 12), cpus=st.integers(0, 4))
def test_a_holder_fits_when_a_full_assignment_says_it_does(
    flavors: tuple[str, ...], steps: list[_Step], gpus: int, cpus: int
) -> None:
    w = _world(flavors)
    holder = _job(w, "holder", "q", gpus, cpus)
    planner = _planner(w)
    cq = names.ClusterQueueName("cq")
    running: list[names.WorkloadKey] = []
    for i, (admit, size) in enumerate(steps):
        if admit:
            job = _job(w, f"r{i}", "oq", size)
            if w.assign(job, "other")[0].mode == flavors_mod.Mode.FIT:
                w.admit(job, "other")
                running.append(job.key)
        elif running:
            w.finish(running.pop(size % len(running)))
        # The same planner throughout (as a plan passing releases), against a fresh one.
        assert planner.fits(cq, holder) == _planner(w).fits(cq, holder)


def test_a_changed_workload_is_assigned_again() -> None:
    # The remembered usage holds only for the same workload object: a new one (another
    # priority, other requests) is assigned in full.
    w = _world(("gpu",))
    planner = _planner(w)
    cq = names.ClusterQueueName("cq")
    assert planner.fits(cq, _job(w, "holder", "q", 4)) is not None
    bigger = _job(w, "holder", "q", 12)
    w.admit(_job(w, "lent", "oq", 8), "other")
    assert planner.fits(cq, bigger) is None
    assert _planner(w).fits(cq, bigger) is None
