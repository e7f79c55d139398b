"""The topology benchmark's pieces (``devtools.topologybench``): cluster, shapes, stranded GPUs.

Stranded GPUs are worked by hand on small clusters: a free GPU is stranded when no waiting job
could use it (its host has no room for a pod of any waiting job, or its domain is too small
for every waiting gang that requires one). A small replay checks that packing (Mixed) strands
fewer GPUs than spreading (MostFreeCapacity) when a rack-bound gang waits behind small jobs.
"""

from __future__ import annotations

import pytest

from berth.api import configuration
from berth.devtools import topologybench as tb
from berth.devtools import tracebench

RACK, BLOCK = tb.RACK, tb.BLOCK


def test_hosts_are_four_to_a_rack_and_four_racks_to_a_block() -> None:
    got = tb.hosts(8 * 20)
    assert len(got) == 20
    assert {h.rack for h in got[:4]} == {"r000"}
    assert got[4].rack == "r001"
    assert {h.block for h in got[:16]} == {"b00"}
    assert got[16].block == "b01"


SHAPES = {
    "one GPU: anywhere": (1, tb.Shape(1, 1, None)),
    "one host: anywhere": (8, tb.Shape(1, 8, None)),
    "two hosts: a rack": (16, tb.Shape(2, 8, RACK)),
    "a rack's worth: a rack": (32, tb.Shape(4, 8, RACK)),
    "more than a rack: a block": (64, tb.Shape(8, 8, BLOCK)),
    "more than a block: prefers blocks": (256, tb.Shape(32, 8, None)),
}


@pytest.mark.parametrize(("gpus", "want"), SHAPES.values(), ids=list(SHAPES))
def test_shape(gpus: int, want: tb.Shape) -> None:
    assert tb.shape(gpus) == want


def _used(pattern: dict[str, int]) -> dict[str, int]:
    return {h.name: pattern.get(h.name, 0) for h in tb.hosts(64)}


STRANDED = {
    "nothing waits: nothing stranded": ({"h0000": 4}, set(), 0),
    "a small job can use every free GPU": ({"h0000": 4}, {tb.Shape(1, 1, None)}, 0),
    "half-free hosts cannot take a whole-host pod": (
        {"h0000": 4, "h0001": 4},
        {tb.Shape(1, 8, None)},
        8,
    ),
    "a rack-bound gang: only racks with room count": (
        # rack r000 has one free host (3 used), r001 is empty: r000's 8 free GPUs are stranded
        {"h0000": 8, "h0001": 8, "h0002": 8},
        {tb.Shape(2, 8, RACK)},
        8,
    ),
}


@pytest.mark.parametrize(("used", "shapes", "want"), STRANDED.values(), ids=list(STRANDED))
def test_stranded_now(used: dict[str, int], shapes: set[tb.Shape], want: int) -> None:
    assert tb._stranded_now(tb.hosts(64), _used(used), shapes) == want


def test_packing_strands_fewer_gpus_than_spreading() -> None:
    """Eight 1-GPU jobs then a rack-bound 32-GPU gang on two racks of 4 hosts.

    Packed, the small jobs fill one host and the gang gets the other rack at once; spread,
    they take one GPU on each of eight hosts, so no rack is whole and the gang waits while 56
    GPUs stand free.
    """
    jobs = [tracebench.TraceJob(float(i), 3600.0, 1, "t") for i in range(8)]
    jobs.append(tracebench.TraceJob(10.0, 3600.0, 32, "t"))
    jobs.append(tracebench.TraceJob(4000.0, 10.0, 1, "t"))  # the window runs past the first hour
    packed = tb.replay(jobs, 64, configuration.TopologyProfile.MIXED, sample=60)
    spread = tb.replay(jobs, 64, configuration.TopologyProfile.MOST_FREE_CAPACITY, sample=60)
    assert packed.stranded == 0
    assert spread.stranded > 40
    assert packed.mean_wait[">8"] == 0
    assert spread.mean_wait[">8"] > 3000
