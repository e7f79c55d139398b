"""A terminating ClusterQueue's Active condition names the workloads its deletion waits for.

Deleting a ClusterQueue in use leaves it Terminating until no workload reserves its quota
(``finalizers``); its status is where an admin looks for what still holds it.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

import builders
from berth.api import configuration, names
from berth.core import admission, workload
from berth.operator import statuses
from berth.operator import world as world_mod
from operator_env import cluster_queue, flavor

GPU = "nvidia.com/gpu"


def _admit(world: world_mod.World, name: str) -> None:
    """Count an admission of one GPU in ``cq``, as the scheduler's assume does."""
    b = builders.WorkloadBuilder(name, "team").queue("lq").pod_set("main", 1, {GPU: 1})
    info = workload.from_api(b.obj(), priority=0, creation_time=0.0, uid=name)
    adm = b.admitted("cq", {GPU: "a100"}).obj()
    assert adm.status is not None
    assert adm.status.admission is not None
    world.cache.assume(info, admission.from_status(info, adm.status.admission), 0.0)


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    deleting: bool
    admitted: int
    want_reason: str
    want_in_message: list[str]
    want_not_in_message: list[str] = dataclasses.field(default_factory=list)


CASES = [
    Case("not-deleted", False, 1, "Ready", ["Can admit"], ["Workload"]),
    Case("deleted-and-empty", True, 0, "Terminating", ["being deleted"], ["still reserved"]),
    Case(
        "deleted-with-two-workloads",
        True,
        2,
        "Terminating",
        ["still reserved by 2: Workload team/w00, Workload team/w01"],
    ),
    Case(
        "deleted-with-twelve-workloads-names-ten",
        True,
        12,
        "Terminating",
        ["still reserved by 12: Workload team/w00", "Workload team/w09 and 2 more"],
        ["team/w10"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_terminating_cluster_queue_message(case: Case) -> None:
    world = world_mod.World(configuration.Configuration(), lambda: 1000.0)
    world.apply("ResourceFlavor", flavor("a100", {"gpu": "a100"}))
    cq = copy.deepcopy(cluster_queue("cq", "team", {"a100": 16}))
    if case.deleting:
        cq["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        cq["metadata"]["finalizers"] = ["berth.dev/resource-in-use"]
    world.apply("ClusterQueue", cq)
    for i in range(case.admitted):
        _admit(world, f"w{i:02d}")
    status = statuses.build_cluster_queue(world, names.ClusterQueueName("cq"), 1000.0)
    [active] = status["conditions"]
    assert active["reason"] == case.want_reason
    for part in case.want_in_message:
        assert part in active["message"]
    for part in case.want_not_in_message:
        assert part not in active["message"]
    assert status["reservingWorkloads"] == case.admitted
