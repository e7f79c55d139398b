"""The quota tree's arithmetic (Kueue's resource-node math) on hand-computed cases.

Each row builds a tree, puts usage on ClusterQueues, and states what every queue could use now
(``available``) and at most (``potential``), plus cohort usage where bubbling matters. The
arithmetic behind each expected number is in the row's comment.
"""

from __future__ import annotations

import dataclasses

import pytest

import builders
from worlds import World, fr

GPU = "nvidia.com/gpu"
A100 = fr("a100", GPU)


def cq(name: str, cohort: str | None, quota: builders.QuotaSpec) -> builders.ClusterQueueBuilder:
    b = builders.ClusterQueueBuilder(name).flavor_quotas("a100", {GPU: quota})
    return b.cohort(cohort) if cohort else b


def co(
    name: str, parent: str | None = None, quota: builders.QuotaSpec | None = None
) -> builders.CohortBuilder:
    b = builders.CohortBuilder(name)
    if parent:
        b.parent(parent)
    if quota is not None:
        b.flavor_quotas("a100", {GPU: quota})
    return b


@dataclasses.dataclass
class Case:
    objects: list[object]
    usage: dict[str, int]
    want_available: dict[str, int]
    want_potential: dict[str, int]
    want_cohort_usage: dict[str, int] = dataclasses.field(default_factory=dict)


TWO_LEVEL = [
    co("org"),
    co("research", "org", (2, None, 1)),
    co("prod", "org", 4),
    cq("r1", "research", (4, None, 2)),
    cq("r2", "research", (2, 1)),
    cq("p1", "prod", 6),
]
# Subtree quotas: r1 4 (keeps 4-2=2 locally), r2 2, research 2+(4-2)+2 = 6 (keeps 6-1 = 5),
# prod 4+6 = 10, org (6-5)+10 = 11. The whole tree holds 4+2+2+4+6 = 18.

CASES = [
    pytest.param(
        Case(
            [co("co"), cq("a", "co", 10), cq("b", "co", 5)],
            {},
            want_available={"a": 15, "b": 15},
            want_potential={"a": 15, "b": 15},
        ),
        id="flat cohort: each queue may use everything the cohort holds",
    ),
    pytest.param(
        Case(
            [co("co"), cq("a", "co", (10, 2)), cq("b", "co", 5)],
            {},
            want_available={"a": 12, "b": 15},
            want_potential={"a": 12, "b": 15},
        ),
        id="borrowing limit caps a queue at nominal plus the limit",
    ),
    pytest.param(
        Case(
            [co("co"), cq("a", "co", (10, None, 4)), cq("b", "co", 5)],
            {},
            want_available={"a": 15, "b": 9},
            want_potential={"a": 15, "b": 9},
        ),
        id="lending limit hides nominal minus the limit from the other queues (5 + 4 = 9)",
    ),
    pytest.param(
        Case(
            [co("co"), cq("a", "co", (10, None, 4)), cq("b", "co", 5)],
            {"a": 8},
            want_available={"a": 7, "b": 7},
            want_potential={"a": 15, "b": 9},
            want_cohort_usage={"co": 2},
        ),
        id=(
            "usage beyond local quota bubbles up: a uses 8 of which 6 stay local, "
            "2 reach the cohort"
        ),
    ),
    pytest.param(
        Case(
            [co("co"), cq("a", "co", 4), cq("b", "co", 4)],
            {"a": 6},
            want_available={"a": 2, "b": 2},
            want_potential={"a": 8, "b": 8},
            want_cohort_usage={"co": 6},
        ),
        id="borrowing queue leaves the lender only what is left in the cohort",
    ),
    pytest.param(
        Case(
            TWO_LEVEL,
            {},
            want_available={"r1": 18, "r2": 3, "p1": 11},
            want_potential={"r1": 18, "r2": 3, "p1": 11},
        ),
        id="two levels: research lends org only 1, so prod queues reach 10 + 1",
    ),
    pytest.param(
        Case(
            TWO_LEVEL,
            {"r1": 5},
            want_available={"r1": 13, "r2": 3, "p1": 11},
            want_potential={"r1": 18, "r2": 3, "p1": 11},
            want_cohort_usage={"research": 3, "org": 0},
        ),
        id="two levels: r1's 3 beyond its local 2 are absorbed by research's local 5",
    ),
    pytest.param(
        Case(
            TWO_LEVEL,
            {"r1": 5, "p1": 11},
            want_available={"r1": 2, "r2": 2, "p1": 0},
            want_potential={"r1": 18, "r2": 3, "p1": 11},
            want_cohort_usage={"research": 3, "prod": 11, "org": 11},
        ),
        id="two levels: prod borrows research's lent 1; research keeps 8-5-1 = 2 for its queues",
    ),
    pytest.param(
        Case(
            [co("org"), co("research", "org", (0, 1)), cq("r1", "research", 4), cq("p1", "org", 6)],
            {},
            want_available={"r1": 5, "p1": 10},
            want_potential={"r1": 5, "p1": 10},
        ),
        id="cohort borrowing limit: research may take only 1 beyond its own subtree of 4",
    ),
    pytest.param(
        Case(
            [co("org"), co("research", "org", (0, 1)), cq("r1", "research", 4), cq("p1", "org", 6)],
            {"p1": 7},
            want_available={"r1": 3, "p1": 3},
            want_potential={"r1": 5, "p1": 10},
        ),
        id="cohort borrowing limit and parent usage: org has 3 left, below research's limit of 5",
    ),
    pytest.param(
        Case(
            [cq("alone", None, 4)],
            {"alone": 3},
            want_available={"alone": 1},
            want_potential={"alone": 4},
        ),
        id="a queue without a cohort has only its nominal quota",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_quota_tree(case: Case) -> None:
    world = World(builders.ResourceFlavorBuilder("a100"), *case.objects)
    snap = world.snap
    for name, amount in case.usage.items():
        snap.add_usage(name, {A100: amount})  # type: ignore[arg-type]
    snap.commit()
    for name, want in case.want_available.items():
        assert snap.cq_nodes[name].available(A100) == want, f"available({name})"  # type: ignore[index]
    for name, want in case.want_potential.items():
        assert snap.cq_nodes[name].potential_available(A100) == want, f"potential({name})"  # type: ignore[index]
    for name, want in case.want_cohort_usage.items():
        assert snap.cohort_nodes[name].usage.get(A100, 0) == want, f"usage({name})"  # type: ignore[index]


def test_removing_usage_returns_what_was_stored_in_the_parent() -> None:
    world = World(builders.ResourceFlavorBuilder("a100"), *TWO_LEVEL)
    snap = world.snap
    before = {n.name: dict(n.usage) for n in [*snap.cq_nodes.values(), *snap.cohort_nodes.values()]}
    snap.add_usage("r1", {A100: 9})  # type: ignore[arg-type]
    snap.add_usage("p1", {A100: 3})  # type: ignore[arg-type]
    snap.remove_usage("r1", {A100: 9})  # type: ignore[arg-type]
    snap.remove_usage("p1", {A100: 3})  # type: ignore[arg-type]
    after = {n.name: dict(n.usage) for n in [*snap.cq_nodes.values(), *snap.cohort_nodes.values()]}
    assert after == before


def test_cohort_cycle_makes_its_queues_inactive() -> None:
    world = World(
        builders.ResourceFlavorBuilder("a100"),
        co("x", "y"),
        co("y", "x"),
        cq("a", "x", 4),
        cq("b", None, 4),
    )
    assert not world.cq("a").active
    assert world.cq("b").active
