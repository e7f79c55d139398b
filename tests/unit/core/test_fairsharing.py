"""``core.fairsharing``: dominant resource shares and their order, checked directly.

The share follows Kueue's ``pkg/cache/scheduler/fair_sharing.go`` (``dominantResourceShare``): a
node's borrowing above its own (subtree) quota, per resource, times 1000, divided by what its
parent's tree could lend of that resource. The largest such ratio is the dominant one, and it is
divided by the fair-sharing weight. Status reports it rounded up. A zero weight that borrows is
an infinite share, after every finite one.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import builders
import worlds
from berth.api import names
from berth.core import fairsharing

GPU = "nvidia.com/gpu"


def _cohort_world(a_weight: str | None = None) -> worlds.World:
    a = builders.ClusterQueueBuilder("team-a").cohort("research").flavor_quotas("a100", {GPU: 4})
    if a_weight is not None:
        a.fair_weight(a_weight)
    return worlds.World(
        builders.ResourceFlavorBuilder("a100"),
        a,
        builders.ClusterQueueBuilder("team-b").cohort("research").flavor_quotas("a100", {GPU: 8}),
        builders.LocalQueueBuilder("qa", "default").cluster_queue("team-a"),
        builders.LocalQueueBuilder("qb", "default").cluster_queue("team-b"),
    )


def _use(w: worlds.World, cq: str, gpus: int, name: str) -> None:
    q = "qa" if cq == "team-a" else "qb"
    info = w.info(builders.WorkloadBuilder(name).queue(q).pod_set("main", 1, {GPU: gpus}))
    w.admit(info, cq)


def _share(w: worlds.World, cq: str) -> fairsharing.DRS:
    return fairsharing.share(w.snap, w.snap.node(names.ClusterQueueName(cq)))


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    a_uses: int
    weight: str | None
    want_rounded: int
    want_borrowing: bool


ROWS = [
    Row("within its nominal quota: no share", 4, None, 0, want_borrowing=False),
    # borrows 2 of the 12 GPUs the cohort could lend: 2 * 1000 / 12 = 166.7, rounded up.
    Row("borrowing 2 of 12", 6, None, 167, want_borrowing=True),
    Row("borrowing 6 of 12", 10, None, 500, want_borrowing=True),
    # weight 2 halves the share: 500 / 2.
    Row("weight 2 halves it", 10, "2", 250, want_borrowing=True),
    # weight 0 and borrowing: infinite, reported as MaxInt64.
    Row("weight 0 borrowing is infinite", 6, "0", fairsharing.MAX_SHARE, want_borrowing=True),
    Row("weight 0 not borrowing is zero", 3, "0", 0, want_borrowing=False),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_share(row: Row) -> None:
    w = _cohort_world(row.weight)
    _use(w, "team-a", row.a_uses, "a")
    drs = _share(w, "team-a")
    assert drs.rounded() == row.want_rounded
    assert drs.borrowing == row.want_borrowing
    if row.want_borrowing:
        assert drs.dominant == GPU


def test_extra_usage_counts_as_if_admitted() -> None:
    w = _cohort_world()
    _use(w, "team-a", 4, "a")
    node = w.snap.node(names.ClusterQueueName("team-a"))
    extra = {worlds.fr("a100", GPU): 3}
    assert fairsharing.share(w.snap, node, extra).rounded() == 250  # 3 * 1000 / 12


def test_a_cohort_root_has_no_share() -> None:
    w = _cohort_world()
    _use(w, "team-a", 10, "a")
    root = w.snap.node(names.ClusterQueueName("team-a")).root()
    assert fairsharing.share(w.snap, root).rounded() == 0


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (fairsharing.DRS(1000, 100.0), fairsharing.DRS(1000, 200.0), -1),
        (fairsharing.DRS(1000, 200.0), fairsharing.DRS(2000, 200.0), 1),  # weight 2 is fairer
        (fairsharing.DRS(1000, 0.0), fairsharing.DRS(0, 0.0), 0),  # both zero
        (fairsharing.DRS(0, 1.0), fairsharing.DRS(1000, 999.0), 1),  # infinite after finite
        (fairsharing.DRS(0, 1.0), fairsharing.DRS(0, 2.0), -1),  # two infinite: by ratio
    ],
    ids=["lower first", "weight", "zero", "infinite last", "infinite by ratio"],
)
def test_compare(a: fairsharing.DRS, b: fairsharing.DRS, want: int) -> None:
    assert fairsharing.compare(a, b) == want
    assert fairsharing.compare(b, a) == -want


@given(st.integers(0, 12), st.sampled_from(["1", "2", "0.5"]))
def test_shares_are_never_negative_and_grow_with_borrowing(uses: int, weight: str) -> None:
    w = _cohort_world(weight)
    if uses:
        _use(w, "team-a", uses, "a")
    drs = _share(w, "team-a")
    assert drs.precise() >= 0
    assert drs.borrowing == (uses > 4)
    if uses < 12:
        more = fairsharing.share(
            w.snap,
            w.snap.node(names.ClusterQueueName("team-a")),
            {worlds.fr("a100", GPU): 1},
        )
        assert fairsharing.compare(drs, more) <= 0
