"""Queue objects that do not even load (stored past the webhook) are never left half-applied.

An object with an unknown field or a bad quantity has no model at all. A ClusterQueue of that
kind is kept inactive (``InvalidSpec``, its field errors as the message) like one the
validators refuse; an older valid version is never left standing in its place, and a delete
event whose body does not load still removes the object.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from berth.api import configuration, names
from berth.operator import statuses
from berth.operator import world as world_mod
from operator_env import cluster_queue, flavor, local_queue

Body = dict[str, Any]
CQ = names.ClusterQueueName("cq")


def _rv(body: Body, rv: int) -> Body:
    out = copy.deepcopy(body)
    out["metadata"]["resourceVersion"] = str(rv)
    return out


def _unknown_field(body: Body) -> Body:
    out = copy.deepcopy(body)
    out["spec"]["cohort"] = "org"  # Kueue v1beta1's name: no model at all
    return out


def _bad_quantity(body: Body) -> Body:
    out = copy.deepcopy(body)
    out["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    return out


VALID = cluster_queue("cq", "team", {"a100": 8}, cohort="org")


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    bodies: list[Body]
    """ClusterQueue versions applied in turn (the first may be valid)."""
    want_in_message: str


CASES = [
    Case("created-with-an-unknown-field", [_unknown_field(VALID)], "spec.cohort"),
    Case("created-with-a-bad-quantity", [_bad_quantity(VALID)], "nominalQuota"),
    Case(
        "valid-then-updated-past-the-webhook",
        [VALID, _bad_quantity(VALID)],
        "nominalQuota",
    ),
]


def _world() -> world_mod.World:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    world.apply("ResourceFlavor", _rv(flavor("a100", {"gpu": "a100"}), 1))
    world.apply("LocalQueue", _rv(local_queue("lq", "team", "cq"), 2))
    return world


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_cluster_queue_that_does_not_load_is_inactive_with_its_errors(case: Case) -> None:
    world = _world()
    for rv, body in enumerate(case.bodies, start=10):
        world.apply("ClusterQueue", _rv(body, rv))
    status = statuses.build_cluster_queue(world, CQ, 1000.0)
    [active] = status["conditions"]
    assert (active["status"], active["reason"]) == ("False", "InvalidSpec")
    assert case.want_in_message in active["message"]
    node = world.cache.snapshot.cq_nodes[CQ]
    assert node.quotas == {}
    assert node.parent is None
    [lq_active] = statuses.build_local_queue(world, "team", "lq", 1000.0)["conditions"]
    assert lq_active["reason"] == "ClusterQueueIsInactive"


def test_a_delete_whose_body_does_not_load_still_removes_the_queue() -> None:
    world = _world()
    world.apply("ClusterQueue", _rv(VALID, 10))
    assert world.cache.snapshot.cluster_queues[CQ].active
    world.remove("ClusterQueue", _rv(_unknown_field(VALID), 11))
    assert CQ not in world.cache.cluster_queues
    assert CQ not in world.cache.snapshot.cluster_queues


@pytest.mark.parametrize(
    ("selected", "reason"), [("team", "Ready"), ("other", "NamespaceNotSelected")]
)
def test_a_local_queue_is_active_only_if_its_cluster_queue_takes_its_namespace(
    selected: str, reason: str
) -> None:
    """A LocalQueue whose ClusterQueue's namespaceSelector leaves its namespace out says so."""
    world = _world()
    for rv, name in enumerate(("team", "other"), start=3):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        world.apply("Namespace", _rv(namespace, rv))
    world.apply("ClusterQueue", _rv(cluster_queue("cq", selected, {"a100": 8}), 10))
    [active] = statuses.build_local_queue(world, "team", "lq", 1000.0)["conditions"]
    assert (active["status"], active["reason"]) == (str(reason == "Ready"), reason)
    if reason != "Ready":
        assert "namespaceSelector does not select namespace team" in active["message"]
