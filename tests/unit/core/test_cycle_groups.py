"""``core.cycle_groups.Partition``: which queues' heads may be decided in cycles of their own.

Rows build a world of queues (each with its cohort and flavor) and name the groups wanted:
quota trees apart, joined by a Topology their flavors share or by blockAdmission.
"""

from __future__ import annotations

import dataclasses

import pytest

import builders
import worlds
from berth.api import names
from berth.core import cycle_groups

GPU = "nvidia.com/gpu"


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    queues: list[tuple[str, str | None, str]]
    """(ClusterQueue, cohort or None, flavor)."""
    want: list[tuple[str, ...]]
    ask: list[str] | None = None
    """The queues with a head (default: all of them)."""
    one_group: bool = False
    cohorts: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    """(cohort, parent) for nested cohorts."""


ROWS = [
    Row(
        "queues without a cohort: a group each",
        [("a", None, "plain"), ("b", None, "plain")],
        [("a",), ("b",)],
    ),
    Row(
        "queues of one cohort: one group",
        [("a", "team", "plain"), ("b", "team", "plain"), ("c", None, "plain")],
        [("a", "b"), ("c",)],
    ),
    Row(
        "cohorts nested under one root: one group",
        [("a", "left", "plain"), ("b", "right", "plain")],
        [("a", "b")],
        cohorts=[("left", "root"), ("right", "root")],
    ),
    Row(
        "two trees whose flavors share a Topology: one group",
        [("a", "x", "rack-a"), ("b", "y", "rack-b"), ("c", "z", "plain")],
        [("a", "b"), ("c",)],
    ),
    Row(
        "a shared flavor without a Topology joins nothing (quota is per tree)",
        [("a", "x", "plain"), ("b", "y", "plain")],
        [("a",), ("b",)],
    ),
    Row(
        "flavors on different Topologies: apart",
        [("a", None, "rack-a"), ("b", None, "zone")],
        [("a",), ("b",)],
    ),
    Row(
        "a tree whose root is named like a Topology stays apart from it",
        [("a", "racks", "plain"), ("b", None, "rack-a")],
        [("a",), ("b",)],
    ),
    Row(
        "only the queues with a head are grouped, a queue unknown to the snapshot alone",
        [("a", "team", "plain"), ("b", "team", "plain"), ("c", None, "plain")],
        [("a",), ("ghost",)],
        ask=["ghost", "a"],
    ),
    Row(
        "blockAdmission: one group for all",
        [("a", None, "plain"), ("b", None, "zone")],
        [("a", "b")],
        one_group=True,
    ),
]


def _world(row: Row) -> worlds.World:
    objects: list[object] = [
        builders.ResourceFlavorBuilder("plain"),
        builders.ResourceFlavorBuilder("rack-a").node_labels({"pool": "rack-a"}).topology("racks"),
        builders.ResourceFlavorBuilder("rack-b").node_labels({"pool": "rack-b"}).topology("racks"),
        builders.ResourceFlavorBuilder("zone").node_labels({"pool": "zone"}).topology("zones"),
    ]
    objects += [builders.CohortBuilder(name).parent(parent) for name, parent in row.cohorts]
    for name, cohort, flavor in row.queues:
        cq = builders.ClusterQueueBuilder(name).flavor_quotas(flavor, {GPU: 4})
        objects.append(cq if cohort is None else cq.cohort(cohort))
    return worlds.World(*objects)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_groups_share_nothing_a_cycle_decides_with(row: Row) -> None:
    w = _world(row)
    ask = [names.ClusterQueueName(q) for q in (row.ask or [q for q, _, _ in row.queues])]
    got = cycle_groups.Partition(w.snap).split(ask, one_group=row.one_group)
    assert got == row.want
