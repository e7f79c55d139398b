"""Topology placement: the domains a pod set's pods go to, checked against Kueue's own cases.

Every row named "kueue: ..." is a case of Kueue's ``TestFindTopologyAssignments``
(``pkg/cache/scheduler/tas_cache_test.go``, same nodes, requests and expected assignment or
message) under Kueue's default feature gates (``TASProfileMixed`` on: Unconstrained places by
LeastFreeCapacity; balanced placement and preferred affinity off). Berth's failure messages
start with Kueue's words and add the level and the largest domain there.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api import configuration, names, pod, quantity
from berth.api import topology as api_topology
from berth.core import placement, quota, resources, topology

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = topology.HOSTNAME
THREE = (BLOCK, RACK, HOST)
TWO = (BLOCK, RACK)
ONE = (HOST,)
CPU = quantity.CPU
MEMORY = names.ResourceName("memory")


def node(
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    pods: int = 10,
    ready: bool = True,
    unschedulable: bool = False,
    taints: tuple[pod.Taint, ...] = (),
    **labels: str,
) -> topology.Node:
    """A node named block-rack-host with those labels (``labels`` adds or overrides)."""
    parts = name.split("-")
    base = {BLOCK: parts[0], RACK: parts[1], HOST: parts[2]} if len(parts) == 3 else {}
    base.update({k.replace("__", "/").replace("_", "-"): v for k, v in labels.items()})
    return topology.Node(
        name=name,
        labels=base,
        allocatable=quantity.parse_list({"cpu": cpu, "memory": memory, "pods": pods}),
        taints=taints,
        ready=ready,
        unschedulable=unschedulable,
    )


# Kueue's fixtures (tas_cache_test.go), same names.
DEFAULT_NODES = (
    node("b1-r1-x3"),
    node("b1-r2-x5"),
    node("b1-r2-x1"),
    node("b1-r2-x6"),
    node("b2-r1-x2"),
    node("b2-r2-x4", cpu="2", memory="4Gi", pods=40),
)
SCATTERED_NODES = (
    node("b1-r1-x3", cpu="4"),
    node("b1-r1-x5"),
    node("b1-r1-x1"),
    node("b2-r1-x6", cpu="2"),
    node("b2-r1-x2"),
)
BINARY_TREES_NODES = tuple(
    node(n)
    for n in (
        "b1-r1-x3",
        "b1-r1-x5",
        "b1-r2-x1",
        "b1-r2-x6",
        "b2-r1-x2",
        "b2-r1-x4",
        "b2-r2-x7",
        "b2-r2-x8",
    )
)


def required(level: str, **slices: object) -> topology.Request:
    return topology.Request(topology.Placement.REQUIRED, level, **slices)  # type: ignore[arg-type]


def preferred(level: str, **slices: object) -> topology.Request:
    return topology.Request(topology.Placement.PREFERRED, level, **slices)  # type: ignore[arg-type]


UNCONSTRAINED = topology.Request(topology.Placement.UNCONSTRAINED)
IMPLIED = topology.Request(topology.Placement.UNCONSTRAINED, implied=True)


@dataclasses.dataclass
class Case:
    nodes: tuple[topology.Node, ...]
    levels: tuple[str, ...]
    request: topology.Request
    count: int
    cpu: str | None = "1"
    memory: str | None = None
    want: tuple[tuple[str, int], ...] = ()
    """(domain values joined by "/", pods), in the assignment's order."""
    want_levels: tuple[str, ...] | None = None
    want_failure: str = ""
    other_usage: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    constraints: topology.PodConstraints | None = None
    profile: configuration.TopologyProfile = configuration.TopologyProfile.MIXED


CASES = {
    "kueue: minimize the number of used racks before optimizing the number of nodes": Case(
        nodes=(
            node("b1-r1-x3", cpu="2"),
            node("b1-r2-x5", cpu="2", pods=20),
            node("b1-r3-x1"),
            node("b1-r3-x6"),
            node("b1-r3-x2"),
            node("b1-r3-x4"),
        ),
        levels=THREE,
        request=required(BLOCK),
        count=4,
        want=(("x1", 1), ("x2", 1), ("x4", 1), ("x6", 1)),
    ),
    "kueue: choose the node that can accommodate all Pods": Case(
        nodes=(node("b1-r1-x3", cpu="2"), node("b1-r1-x5"), node("b1-r1-x1")),
        levels=THREE,
        request=required(BLOCK),
        count=2,
        want=(("x3", 2),),
    ),
    "kueue: no annotation; implied; 6 pods scattered across the datacenter": Case(
        nodes=SCATTERED_NODES,
        levels=THREE,
        request=IMPLIED,
        count=6,
        want=(("x1", 1), ("x3", 1), ("x5", 1), ("x2", 1), ("x6", 2)),
    ),
    "kueue: unconstrained; 6 pods scattered across the datacenter (LeastFreeCapacity)": Case(
        nodes=SCATTERED_NODES,
        levels=THREE,
        request=UNCONSTRAINED,
        count=6,
        want=(("x1", 1), ("x3", 1), ("x5", 1), ("x2", 1), ("x6", 2)),
    ),
    "kueue: unconstrained; a single pod fits into each host": Case(
        nodes=DEFAULT_NODES,
        levels=THREE,
        request=UNCONSTRAINED,
        count=1,
        want=(("x3", 1),),
    ),
    "kueue: block required; 4 pods fit into one host each": Case(
        nodes=BINARY_TREES_NODES,
        levels=THREE,
        request=required(BLOCK),
        count=4,
        want=(("x3", 1), ("x5", 1), ("x1", 1), ("x6", 1)),
    ),
    "kueue: host required; single Pod fits in the host": Case(
        nodes=DEFAULT_NODES,
        levels=THREE,
        request=required(HOST),
        count=1,
        want=(("x3", 1),),
    ),
    "kueue: rack required; single Pod fits in a rack": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(RACK),
        count=1,
        want=(("b1/r1", 1),),
    ),
    "kueue: rack required; multiple Pods fit in a rack": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(RACK),
        count=3,
        want=(("b1/r2", 3),),
    ),
    "kueue: block preferred; Pods fit in 2 blocks": Case(
        nodes=(
            topology.Node("b1", {BLOCK: "b1"}, quantity.parse_list({"cpu": 2, "pods": 20})),
            topology.Node("b2", {BLOCK: "b2"}, quantity.parse_list({"cpu": 1, "pods": 10})),
            topology.Node("b3", {BLOCK: "b3"}, quantity.parse_list({"cpu": 4, "pods": 40})),
        ),
        levels=(BLOCK,),
        request=preferred(BLOCK),
        count=5,
        want=(("b2", 1), ("b3", 4)),
    ),
    "kueue: rack required; multiple Pods fit in some racks": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(RACK),
        count=2,
        want=(("b2/r2", 2),),
    ),
    "kueue: rack required; too many pods to fit in any rack": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(RACK),
        count=4,
        want_failure='topology "default" allows to fit only 3 out of 4 pod(s) at level '
        "cloud.com/topology-rack (the largest domain, b1/r2, has room for 3 pod(s))",
    ),
    "kueue: block required; single Pod fits in a block and a single rack": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(BLOCK),
        count=1,
        want=(("b2/r1", 1),),
    ),
    "kueue: block required; Pods fit in a block spread across two racks": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(BLOCK),
        count=4,
        want=(("b1/r1", 1), ("b1/r2", 3)),
    ),
    "kueue: block required; single Pod which cannot be split": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(BLOCK),
        count=1,
        cpu="4",
        want_failure='topology "default" doesn\'t allow to fit any of 1 pod(s) at level '
        "cloud.com/topology-block (the largest domain, b1, has room for 0 pod(s))",
    ),
    "kueue: block required; too many Pods to fit requested": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(BLOCK),
        count=5,
        want_failure='topology "default" allows to fit only 4 out of 5 pod(s) at level '
        "cloud.com/topology-block (the largest domain, b1, has room for 4 pod(s))",
    ),
    "kueue: rack required; single Pod requiring memory": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required(RACK),
        count=4,
        cpu=None,
        memory="1024",
        want=(("b1/r1", 4),),
    ),
    "kueue: rack preferred; but only block can accommodate the workload": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=preferred(RACK),
        count=4,
        want=(("b1/r1", 1), ("b1/r2", 3)),
    ),
    "kueue: rack preferred; but only multiple blocks can accommodate the workload": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=preferred(RACK),
        count=6,
        want=(("b1/r1", 1), ("b1/r2", 3), ("b2/r2", 2)),
    ),
    "kueue: block preferred; but only multiple blocks can accommodate the workload": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=preferred(BLOCK),
        count=6,
        want=(("b1/r1", 1), ("b1/r2", 3), ("b2/r2", 2)),
    ),
    "kueue: block preferred; but the workload cannot be accommodated in entire topology": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=preferred(BLOCK),
        count=10,
        want_failure='topology "default" allows to fit only 7 out of 10 pod(s) at level '
        "cloud.com/topology-block (the largest domain, b1, has room for 4 pod(s))",
    ),
    "kueue: only nodes with matching levels are considered; no host label on node": Case(
        nodes=(
            topology.Node("b1-r1-x3", {BLOCK: "b1", RACK: "r1"}, quantity.parse_list({"cpu": 1})),
        ),
        levels=THREE,
        request=required(RACK),
        count=1,
        want_failure="no topology domains at level: cloud.com/topology-rack",
    ),
    "kueue: include usage from running non-TAS pods, blocked assignment": Case(
        nodes=(node("b1-r1-x1"),),
        levels=ONE,
        request=required(HOST),
        count=1,
        other_usage={"b1-r1-x1": {"cpu": "600m"}},
        want_failure='topology "default" doesn\'t allow to fit any of 1 pod(s) at level '
        "kubernetes.io/hostname (the largest domain, x1, has room for 0 pod(s))",
    ),
    "kueue: include usage from running non-TAS pods, found free capacity on another node": Case(
        nodes=(node("b1-r1-x1"), node("b1-r1-x2")),
        levels=ONE,
        request=required(HOST),
        count=1,
        other_usage={"b1-r1-x1": {"cpu": "600m"}},
        want=(("x2", 1),),
    ),
    "kueue: no assignment as node does not have enough allocatable pods": Case(
        nodes=(node("b1-r1-x1", cpu="4", pods=1),),
        levels=ONE,
        request=required(HOST),
        count=2,
        cpu="1",
        want_failure='topology "default" allows to fit only 1 out of 2 pod(s) at level '
        "kubernetes.io/hostname (the largest domain, x1, has room for 1 pod(s))",
    ),
    "kueue: skip node which has untolerated taint": Case(
        nodes=(
            node(
                "b1-r1-x1",
                taints=(pod.Taint(key="example.com/gpu", value="present", effect="NoSchedule"),),
            ),
        ),
        levels=ONE,
        request=required(HOST),
        count=1,
        want_failure='topology "default" doesn\'t allow to fit any of 1 pod(s) at level '
        "kubernetes.io/hostname (the largest domain, x1, has room for 0 pod(s))",
    ),
    "kueue: allow to schedule on node with tolerated taint": Case(
        nodes=(
            node(
                "b1-r1-x1",
                taints=(pod.Taint(key="example.com/gpu", value="present", effect="NoSchedule"),),
            ),
        ),
        levels=ONE,
        request=required(HOST),
        count=1,
        constraints=topology.PodConstraints(
            tolerations=(pod.Toleration(key="example.com/gpu", operator="Exists"),)
        ),
        want=(("x1", 1),),
    ),
    "kueue: skip node which doesn't match node selector, label value differs": Case(
        nodes=(node("b1-r1-x1", zone="zone-b"),),
        levels=ONE,
        request=required(HOST),
        count=1,
        constraints=topology.PodConstraints(node_selector=(("zone", "zone-a"),)),
        want_failure='topology "default" doesn\'t allow to fit any of 1 pod(s) at level '
        "kubernetes.io/hostname (the largest domain, x1, has room for 0 pod(s))",
    ),
    "kueue: allow to schedule on node which matches node selector": Case(
        nodes=(node("b1-r1-x1", zone="zone-a"), node("b1-r1-x2", zone="zone-b")),
        levels=ONE,
        request=required(HOST),
        count=1,
        constraints=topology.PodConstraints(node_selector=(("zone", "zone-b"),)),
        want=(("x2", 1),),
    ),
    "kueue: block required for podset; host required for slices": Case(
        nodes=(node("b1-r1-x3", cpu="3"), node("b1-r1-x5", cpu="3"), node("b1-r1-x1", cpu="3")),
        levels=THREE,
        request=required(BLOCK, slice_level=HOST, slice_size=2),
        count=6,
        want=(("x1", 2), ("x3", 2), ("x5", 2)),
    ),
    "kueue: host slices; more free slice capacity first, then a tight fit": Case(
        nodes=(
            node("b1-r1-x3", cpu="6"),
            node("b1-r1-x5", cpu="5"),
            node("b1-r1-x1", cpu="4"),
            node("b1-r1-x6", cpu="2"),
        ),
        levels=THREE,
        request=required(BLOCK, slice_level=HOST, slice_size=2),
        count=12,
        want=(("x1", 4), ("x3", 6), ("x6", 2)),
    ),
    "slice level above the pod set's level is refused (kueue)": Case(
        nodes=DEFAULT_NODES,
        levels=THREE,
        request=required(RACK, slice_level=BLOCK, slice_size=1),
        count=2,
        want_failure="podset slice topology cloud.com/topology-block is above the podset "
        "topology cloud.com/topology-rack",
    ),
    "a level the topology does not have (kueue)": Case(
        nodes=DEFAULT_NODES,
        levels=TWO,
        request=required("cloud.com/zone"),
        count=1,
        want_failure="no requested topology level: cloud.com/zone",
    ),
    "kueue: no assignment as node is not ready": Case(
        nodes=(
            node("b1-r1-x1"),
            node("b1-r1-x2", ready=False),
            node("b1-r1-x4", unschedulable=True),
        ),
        levels=ONE,
        request=required(HOST),
        count=2,
        want_failure='topology "default" allows to fit only 1 out of 2 pod(s) at level '
        "kubernetes.io/hostname (the largest domain, x1, has room for 1 pod(s))",
    ),
    "KEP 2724 example: BestFit takes 3, 3, then the node with exactly 1": Case(
        nodes=(
            node("b1-r1-x1", cpu="3"),
            node("b1-r1-x2", cpu="3"),
            node("b1-r1-x3", cpu="2"),
            node("b1-r1-x4", cpu="1"),
        ),
        levels=THREE,
        request=required(RACK),
        count=7,
        want=(("x1", 3), ("x2", 3), ("x4", 1)),
    ),
    "KEP 2724 example: LeastFreeCapacity takes 1, 2, 3, then 1 of the last 3": Case(
        nodes=(
            node("b1-r1-x1", cpu="3"),
            node("b1-r1-x2", cpu="3"),
            node("b1-r1-x3", cpu="2"),
            node("b1-r1-x4", cpu="1"),
        ),
        levels=THREE,
        request=UNCONSTRAINED,
        count=7,
        want=(("x1", 3), ("x2", 1), ("x3", 2), ("x4", 1)),
    ),
    "profile BestFit: an unconstrained pod set is placed tightly too (KEP 2724)": Case(
        nodes=(
            node("b1-r1-x1", cpu="3"),
            node("b1-r1-x2", cpu="3"),
            node("b1-r1-x3", cpu="2"),
            node("b1-r1-x4", cpu="1"),
        ),
        levels=THREE,
        request=UNCONSTRAINED,
        count=7,
        profile=configuration.TopologyProfile.BEST_FIT,
        want=(("x1", 3), ("x2", 3), ("x4", 1)),
    ),
    "profile MostFreeCapacity: the most free first, no tight fit (spreads)": Case(
        nodes=(
            node("b1-r1-x1", cpu="3"),
            node("b1-r1-x2", cpu="3"),
            node("b1-r1-x3", cpu="2"),
            node("b1-r1-x4", cpu="1"),
        ),
        levels=THREE,
        request=required(RACK),
        count=7,
        profile=configuration.TopologyProfile.MOST_FREE_CAPACITY,
        want=(("x1", 3), ("x2", 3), ("x3", 1)),
    ),
}


def _tree(case: Case) -> topology.Tree:
    other = {n: quantity.parse_list(u) for n, u in case.other_usage.items()}
    # The tree's owner (the cache) keeps only nodes of the flavor that are Ready and schedulable.
    nodes = [n for n in case.nodes if topology.node_matches_flavor(n, {}, case.levels)]
    return topology.Tree("default", case.levels, nodes, other)


def _per_pod(case: Case) -> resources.Requests:
    out: resources.Requests = {}
    if case.cpu is not None:
        out[CPU] = quantity.parse(CPU, case.cpu)
    if case.memory is not None:
        out[MEMORY] = quantity.parse(MEMORY, case.memory)
    return out


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_find(case: Case) -> None:
    tree = _tree(case)
    got = placement.find(
        tree,
        None,
        case.request,
        case.count,
        _per_pod(case),
        constraints=case.constraints,
        profile=case.profile,
    )
    if case.want_failure:
        assert got == placement.Failure(case.want_failure)
        return
    assert isinstance(got, topology.Assignment), got
    assert tuple(("/".join(d.values), d.count) for d in got.domains) == case.want
    want_levels = case.want_levels or ((HOST,) if case.levels[-1] == HOST else case.levels)
    assert got.levels == want_levels


def test_usage_and_assumed_pods_take_room() -> None:
    """Placed pods (usage) and earlier pod sets (assumed) count; simulate_empty ignores usage."""
    tree = topology.Tree("t", ONE, (node("b1-r1-x1", cpu="2"), node("b1-r1-x2", cpu="2")))
    usage = topology.Usage(quota.Journal())
    usage.add(tree.leaf_of_node["b1-r1-x1"], {"cpu": 2000, "pods": 2}, 1)
    one_cpu = {CPU: 1000}
    got = placement.find(tree, usage, required(HOST), 2, one_cpu)
    assert got == topology.Assignment(ONE, (topology.DomainCount(("x2",), 2),))
    assumed = {tree.leaf_of_node["b1-r1-x2"]: {CPU: 1000}}
    got = placement.find(tree, usage, required(HOST), 2, one_cpu, assumed=assumed)
    assert isinstance(got, placement.Failure)
    got = placement.find(tree, usage, required(HOST), 2, one_cpu, simulate_empty=True)
    assert got == topology.Assignment(ONE, (topology.DomainCount(("x1",), 2),))


def test_usage_changes_roll_back_with_the_journal() -> None:
    journal = quota.Journal()
    usage = topology.Usage(journal)
    usage.add(0, {"cpu": 1000}, 1)
    mark = journal.checkpoint()
    usage.add(0, {"cpu": 1000, "pods": 1}, 1)
    usage.add(0, {"cpu": 2000, "pods": 1}, -1)
    assert usage.amounts == {}
    journal.rollback(mark)
    assert usage.amounts == {(0, "cpu"): 1000}


T = api_topology
ANNOTATION_CASES = {
    "required": (
        {T.REQUIRED_ANNOTATION: RACK},
        topology.Request(topology.Placement.REQUIRED, RACK),
        [],
    ),
    "preferred": (
        {T.PREFERRED_ANNOTATION: BLOCK},
        topology.Request(topology.Placement.PREFERRED, BLOCK),
        [],
    ),
    "unconstrained": (
        {T.UNCONSTRAINED_ANNOTATION: "true"},
        topology.Request(topology.Placement.UNCONSTRAINED),
        [],
    ),
    "slices with a level": (
        {
            T.REQUIRED_ANNOTATION: BLOCK,
            T.SLICE_REQUIRED_ANNOTATION: HOST,
            T.SLICE_SIZE_ANNOTATION: "4",
        },
        topology.Request(topology.Placement.REQUIRED, BLOCK, HOST, 4),
        [],
    ),
    "slices alone": (
        {T.SLICE_REQUIRED_ANNOTATION: RACK, T.SLICE_SIZE_ANNOTATION: "2"},
        topology.Request(topology.Placement.UNCONSTRAINED, None, RACK, 2),
        [],
    ),
    "none": ({"other": "x"}, None, []),
    "required and preferred": (
        {T.REQUIRED_ANNOTATION: RACK, T.PREFERRED_ANNOTATION: BLOCK},
        topology.Request(topology.Placement.REQUIRED, RACK),
        [T.PREFERRED_ANNOTATION],
    ),
    "slice size missing": (
        {T.REQUIRED_ANNOTATION: BLOCK, T.SLICE_REQUIRED_ANNOTATION: HOST},
        topology.Request(topology.Placement.REQUIRED, BLOCK),
        [T.SLICE_SIZE_ANNOTATION],
    ),
    "slice size not a number": (
        {
            T.REQUIRED_ANNOTATION: BLOCK,
            T.SLICE_REQUIRED_ANNOTATION: HOST,
            T.SLICE_SIZE_ANNOTATION: "two",
        },
        topology.Request(topology.Placement.REQUIRED, BLOCK),
        [T.SLICE_SIZE_ANNOTATION],
    ),
    "unconstrained not a boolean": (
        {T.UNCONSTRAINED_ANNOTATION: "yes"},
        None,
        [T.UNCONSTRAINED_ANNOTATION],
    ),
    "empty level": ({T.REQUIRED_ANNOTATION: ""}, None, [T.REQUIRED_ANNOTATION]),
}


@pytest.mark.parametrize(
    ("annotations", "want", "bad"), ANNOTATION_CASES.values(), ids=list(ANNOTATION_CASES)
)
def test_annotations(
    annotations: dict[str, str], want: topology.Request | None, bad: list[str]
) -> None:
    """The one reader of placement annotations, and every problem named by its annotation."""
    api = T.request_from_annotations(annotations)
    assert (None if api is None else topology.request_of(api)) == want
    problems = T.annotation_problems(annotations, "template.metadata")
    assert [p.path for p in problems] == [f"template.metadata.annotations[{k}]" for k in bad]


@st.composite
def _racks(draw: st.DrawFn) -> tuple[topology.Tree, int, int]:
    racks = draw(st.integers(1, 4))
    nodes = []
    for r in range(racks):
        for h in range(draw(st.integers(1, 4))):
            cpu = draw(st.integers(0, 4))
            nodes.append(node(f"b{r % 2}-r{r}-h{r}x{h}", cpu=str(cpu)))
    count = draw(st.integers(1, 12))
    which = draw(st.sampled_from([0, 1, 2]))
    return topology.Tree("t", THREE, nodes), count, which


@settings(max_examples=200, deadline=None)
@given(_racks())
def test_placement_invariants(drawn: tuple[topology.Tree, int, int]) -> None:
    """Placements are sound: each pod once, hosts within room, Required inside one domain.

    A placement is found exactly when the level (or, for Preferred, the whole tree) has room.
    """
    tree, count, which = drawn
    request = (required(RACK), preferred(RACK), UNCONSTRAINED)[which]
    got = placement.find(tree, None, request, count, {CPU: 1000})
    room = {leaf.values[-1]: tree.free[leaf.leaf][CPU] // 1000 for leaf in tree.leaves}
    racks: dict[tuple[str, ...], int] = {}
    for leaf in tree.leaves:
        racks[leaf.values[:2]] = racks.get(leaf.values[:2], 0) + room[leaf.values[-1]]
    if which == 0:
        fits = max(racks.values()) >= count
    else:
        fits = sum(racks.values()) >= count
    if not fits:
        assert isinstance(got, placement.Failure)
        return
    assert isinstance(got, topology.Assignment), got
    assert got.count == count
    assert all(d.count <= room[d.values[-1]] for d in got.domains)
    hosts = [d.values[-1] for d in got.domains]
    assert len(hosts) == len(set(hosts))
    if which == 0:
        rack_of = {leaf.values[-1]: leaf.values[:2] for leaf in tree.leaves}
        assert len({rack_of[h] for h in hosts}) == 1
