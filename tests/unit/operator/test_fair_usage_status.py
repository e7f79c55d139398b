"""A LocalQueue's admission fair-sharing usage in its status, and a new leader going on from it.

The operator writes ``status.fairSharing.admissionFairSharingStatus`` (``consumedResources``,
``lastUpdate``) as Kueue does; a World that sees a LocalQueue with such a status for the first
time seeds its usage from it (Kueue's ``initializeAfsIfNeeded``), so a restart keeps each
team's history; a status that holds no quantity is skipped with a warning, never a crash.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from berth.api import configuration, names
from berth.operator import statuses
from berth.operator import world as world_mod
from berth.state import fair_usage
from operator_env import cluster_queue, flavor, local_queue

Body = dict[str, Any]
GPU = names.ResourceName("nvidia.com/gpu")
LQ = fair_usage.LocalQueueKey("team", "lq")
AFS = configuration.AdmissionFairSharing(usage_half_life_time=3600.0)


def _rv(body: Body, rv: int) -> Body:
    out = copy.deepcopy(body)
    out["metadata"]["resourceVersion"] = str(rv)
    return out


def _world(status: Body | None = None) -> world_mod.World:
    world = world_mod.World(configuration.Configuration(admission_fair_sharing=AFS), lambda: 5000.0)
    world.apply("ResourceFlavor", _rv(flavor("a100", {"gpu": "a100"}), 1))
    cq = cluster_queue("cq", "team", {"a100": 8})
    cq["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    world.apply("ClusterQueue", _rv(cq, 2))
    lq = local_queue("lq", "team", "cq")
    if status is not None:
        lq["status"] = status
    world.apply("LocalQueue", _rv(lq, 3))
    return world


def _afs(consumed: dict[str, Any]) -> Body:
    return {"fairSharing": {"admissionFairSharingStatus": {"consumedResources": consumed}}}


def test_the_status_carries_the_usage_and_a_new_leader_goes_on_from_it() -> None:
    first = _world()
    first.state.usage.track([LQ], 1000.0)
    first.state.usage.charge(LQ, {GPU: 4.0}, {GPU: 4.0}, 1000.0)
    status = statuses.build_local_queue(first, "team", "lq", 1000.0)
    written = status["fairSharing"]["admissionFairSharingStatus"]
    assert written["lastUpdate"] == "1970-01-01T00:16:40Z"
    value = float(written["consumedResources"][GPU])
    assert value == pytest.approx(4 * (1 - 0.5 ** (300 / 3600)), abs=1e-6)
    second = _world(status)
    restored, since = second.state.usage.usage(LQ) or ({}, 0.0)
    assert restored[GPU] == pytest.approx(value)
    assert since == 5000.0


def test_a_status_that_holds_no_quantity_is_skipped() -> None:
    world = _world(_afs({"nvidia.com/gpu": "lots", "cpu": "1500m"}))
    usage, _ = world.state.usage.usage(LQ) or ({}, 0.0)
    assert usage == {names.ResourceName("cpu"): 1.5}


def test_without_admission_fair_sharing_no_usage_is_written_or_read() -> None:
    world = world_mod.World(configuration.Configuration(), lambda: 5000.0)
    world.apply("ResourceFlavor", _rv(flavor("a100", {"gpu": "a100"}), 1))
    world.apply("ClusterQueue", _rv(cluster_queue("cq", "team", {"a100": 8}), 2))
    lq = local_queue("lq", "team", "cq")
    lq["status"] = _afs({"nvidia.com/gpu": "3"})
    world.apply("LocalQueue", _rv(lq, 3))
    assert world.state.usage.usage(LQ) is None
    assert "fairSharing" not in statuses.build_local_queue(world, "team", "lq", 5000.0)
