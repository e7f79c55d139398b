"""Admission fair sharing in state: each LocalQueue's usage charged and sampled, and the head.

``state.fair_usage.UsageLedger`` through ``state.lifecycle`` (the code both drivers run):
an admission decays its LocalQueue's usage to now and adds its entry penalty; a sample decays
what each LocalQueue holds; the ClusterQueue's next head is the first workload of the LocalQueue
with the lowest score (Kueue's ``queueOrderingFunc``), and only in a ClusterQueue whose
``admissionScope`` asks for it while the Configuration enables it.
"""

from __future__ import annotations

import pytest

import builders
import worlds
from berth.api import configuration, names
from berth.state import fair_usage

GPU = "nvidia.com/gpu"
HOUR = 3600.0
A = fair_usage.LocalQueueKey("team-a", "lq")
B = fair_usage.LocalQueueKey("team-b", "lq")


def _world(*, usage_based: bool = True, weight_b: str | None = None) -> worlds.World:
    cq = builders.ClusterQueueBuilder("shared").flavor_quotas("a100", {GPU: 2})
    if usage_based:
        cq.set("spec.admissionScope", {"admissionMode": "UsageBasedAdmissionFairSharing"})
    lq_b = builders.LocalQueueBuilder("lq", "team-b").cluster_queue("shared")
    if weight_b is not None:
        lq_b.set("spec.fairSharing", {"weight": weight_b})
    w = worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        cq,
        builders.LocalQueueBuilder("lq", "team-a").cluster_queue("shared"),
        lq_b,
        namespaces={"team-a": {}, "team-b": {}},
    )
    w.state.configure_fair_usage(
        configuration.AdmissionFairSharing(usage_half_life_time=HOUR, usage_sampling_interval=300),
        0.0,
    )
    return w


def _job(w: worlds.World, name: str, ns: str, at: float) -> None:
    wl = builders.WorkloadBuilder(name, ns).queue("lq").pod_set("main", 1, {GPU: 2})
    w.submit(w.info(wl, at=at))


def _admitted(w: worlds.World) -> list[str]:
    return [str(a.info.key) for a in w.cycle().admitted]


def test_an_admission_charges_its_local_queue_with_the_entry_penalty() -> None:
    w = _world()
    _job(w, "a1", "team-a", 0)
    assert _admitted(w) == ["team-a/a1"]
    usage, last = w.state.usage.usage(A) or ({}, -1.0)
    assert last == 0.0
    assert usage[names.ResourceName(GPU)] == pytest.approx(2 * (1 - 0.5 ** (300 / HOUR)))


def test_a_sample_decays_what_each_local_queue_holds() -> None:
    w = _world()
    _job(w, "a1", "team-a", 0)
    _admitted(w)
    penalty = (w.state.usage.usage(A) or ({}, 0))[0][names.ResourceName(GPU)]
    w.now = HOUR
    assert w.state.sample_usage(HOUR) == [A, B]  # every LocalQueue at each tick
    got = (w.state.usage.usage(A) or ({}, 0))[0][names.ResourceName(GPU)]
    assert got == pytest.approx(penalty * 0.5 + 2 * 0.5)
    assert w.state.usage.next_sample() == HOUR + 300


@pytest.mark.parametrize(
    ("usage_based", "weight_b", "want"),
    [
        (True, None, "team-b/b1"),
        (False, None, "team-a/a2"),
        (True, "0", "team-a/a2"),
    ],
    ids=[
        "the queue with less usage gives the head, though created later",
        "without admissionScope the order is by creation",
        "a LocalQueue of weight 0 is always last",
    ],
)
def test_the_head_comes_from_the_local_queue_with_the_lowest_score(
    usage_based: bool, weight_b: str | None, want: str
) -> None:
    w = _world(usage_based=usage_based, weight_b=weight_b)
    _job(w, "a1", "team-a", 0)
    _admitted(w)
    _job(w, "a2", "team-a", 1)
    _job(w, "b1", "team-b", 2)
    w.finish(names.WorkloadKey("team-a", "a1"))
    assert _admitted(w) == [want]


def test_the_queue_order_lists_the_lowest_score_first_and_follows_a_switch() -> None:
    w = _world()
    _job(w, "a1", "team-a", 0)
    _admitted(w)
    _job(w, "a2", "team-a", 1)
    _job(w, "b1", "team-b", 2)
    q = w.queues.queues[names.ClusterQueueName("shared")]
    assert [str(k) for k in q.ordered()] == ["team-b/b1", "team-a/a2"]
    w.state.configure_fair_usage(None, 5.0)
    assert [str(k) for k in q.ordered()] == ["team-a/a2", "team-b/b1"]
    assert str(q.pop()) == "team-a/a2"


def test_usage_restored_from_a_status_is_kept_and_not_decayed_over_the_downtime() -> None:
    ledger = fair_usage.UsageLedger()
    ledger.configure(configuration.AdmissionFairSharing(usage_half_life_time=HOUR))
    ledger.restore(A, {names.ResourceName(GPU): 6.0}, 1000.0)
    ledger.restore(A, {names.ResourceName(GPU): 1.0}, 2000.0)  # seen again: already known
    assert ledger.usage(A) == ({names.ResourceName(GPU): 6.0}, 1000.0)
    assert ledger.score(A, 2.0) == 3.0
