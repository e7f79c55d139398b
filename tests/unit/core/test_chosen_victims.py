"""``core.victims.ChosenVictims``: the room a queue would have with the chosen victims gone.

The cycle asks it before each entry (Kueue's ``fits`` in ``pkg/scheduler/scheduler.go``). Over
random quota trees, with and without lending limits, what it answers must equal what the
snapshot says with every chosen victim and the entry's own targets taken out one by one, and
the snapshot must be left exactly as it was.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import builders
from berth.api import names
from berth.core import flavors, snapshot, victims
from worlds import World, fr

CPU = "cpu"
GPU = "nvidia.com/gpu"
FRS = [fr("rf", CPU), fr("rf", GPU)]

_SETTINGS = settings(
    max_examples=int(os.environ.get("BERTH_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def _quota(draw: st.DrawFn, *, lending: bool) -> tuple[int | None, ...]:
    nominal = draw(st.integers(0, 8))
    borrowing = draw(st.none() | st.integers(0, 6))
    lend = draw(st.none() | st.integers(0, nominal)) if lending else None
    return (nominal, borrowing, lend)


@st.composite
def _world(draw: st.DrawFn) -> tuple[World, list[str]]:
    """A root cohort, up to three sub-cohorts, two to eight queues, some of them admitting."""
    lending = draw(st.booleans())
    objects: list[Any] = [builders.ResourceFlavorBuilder("rf"), builders.CohortBuilder("root")]
    cohorts = ["root"]
    for i in range(draw(st.integers(0, 3))):
        name = f"co{i}"
        parent = draw(st.sampled_from(cohorts))
        cohort = builders.CohortBuilder(name).parent(parent)
        if draw(st.booleans()):
            cohort.flavor_quotas("rf", {CPU: draw(_quota(lending=lending))})
        objects.append(cohort)
        cohorts.append(name)
    queues = [f"cq{i}" for i in range(draw(st.integers(2, 8)))]
    for name in queues:
        quotas = {CPU: draw(_quota(lending=lending)), GPU: draw(_quota(lending=lending))}
        cq = builders.ClusterQueueBuilder(name).flavor_quotas("rf", quotas)
        objects.append(cq.cohort(draw(st.sampled_from(cohorts))))
        objects.append(builders.LocalQueueBuilder(f"lq-{name}", "default").cluster_queue(name))
    return World(*objects), queues


def _admit_all(w: World, queues: list[str], demands: list[tuple[int, int, int]]) -> None:
    """Admit each (queue, cpu, gpu) demand that fits when its turn comes."""
    for i, (q, cpu, gpu) in enumerate(demands):
        queue = queues[q % len(queues)]
        wl = builders.WorkloadBuilder(f"w{i}").queue(f"lq-{queue}")
        info = w.info(wl.pod_set("main", 1, {CPU: cpu, GPU: gpu}))
        assignment, targets = w.assign(info, queue)
        if assignment.mode == flavors.Mode.FIT and not targets:
            w.admit(info, queue)


def _image(snap: snapshot.Snapshot) -> dict[str, dict[Any, int]]:
    nodes = [*snap.cq_nodes.values(), *snap.cohort_nodes.values()]
    return {f"{n.is_cohort}/{n.name}": dict(n.usage) for n in nodes}


@_SETTINGS
@given(
    built=_world(),
    demands=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 4), st.integers(0, 3)), max_size=14
    ),
    data=st.data(),
)
def test_the_room_with_victims_gone_is_the_snapshots_with_them_taken_out(
    built: tuple[World, list[str]], demands: list[tuple[int, int, int]], data: st.DataObject
) -> None:
    w, queues = built
    _admit_all(w, queues, demands)
    snap = w.snap
    admitted = sorted(
        (a for per_queue in snap.admitted.values() for a in per_queue.values()),
        key=lambda a: a.info.key,
    )
    order = data.draw(st.permutations(admitted))  # the order the cycle chooses them in
    n_chosen = data.draw(st.integers(0, len(order)))
    n_own = data.draw(st.integers(0, len(order) - n_chosen))
    earlier, own = order[:n_chosen], order[n_chosen : n_chosen + n_own]
    asker = names.ClusterQueueName(data.draw(st.sampled_from(queues)))

    cv = victims.ChosenVictims(snap)
    with snap.what_if():
        # The cycle's own usage changes between choices (entries admitted, preemptors counted).
        for v in earlier:
            cv.add(v)
            if data.draw(st.booleans()):
                snap.add_usage(v.admission.cluster_queue, {FRS[0]: 1})
        before = _image(snap)
        got = cv.room(asker, own, FRS)
        assert _image(snap) == before, "the snapshot is left as it was"
        with snap.what_if():
            for v in [*earlier, *own]:
                snap.remove_usage(v.admission.cluster_queue, v.admission.usage)
            want = {f: snap.node(asker).available(f) for f in FRS}
    assert got == want
