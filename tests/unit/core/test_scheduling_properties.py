"""Invariants of the scheduler over random queue trees and workload streams (Hypothesis).

- No ClusterQueue ever uses more than the tree allows: after every instant, every queue's
  ``available`` is non-negative (no over-admission anywhere on its path to the root).
- Admitting and removing a workload, or any what-if, restores the snapshot exactly.
- The same input always gives the same decisions.
- A cycle per group of quota trees that share nothing (``core.cycle_groups``) decides what one
  cycle over every queue would: the same events at each instant, in another order across trees.
- No workload is admitted with fewer pods than it asked for, unless down to its ``minCount``.
- Every preemption frees capacity its preemptor then uses at the same instant.
- With fair sharing, runs reach a fixed point: once arrivals stop, nothing more happens.

Classical preemption can loop where Kueue's rules allow it (a reclaim of any priority, an in-queue
preemption and a lower-priority reclaim while borrowing, each legal on its own; pinned by
``tests/unit/data/preemption-loop.yaml``). Such a draw is discarded for the classical properties,
after checking the quota invariant at the instant that loops; with fair sharing a loop fails.
"""

from __future__ import annotations

import copy
import io
import json
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from unittest import mock

import yaml
from hypothesis import HealthCheck, given, reject, settings

import strategies
from berth.api import names
from berth.core import cycle_groups, snapshot
from berth.sim import documents, engine

_T = TypeVar("_T")

_SETTINGS = settings(
    max_examples=int(os.environ.get("BERTH_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _docs(raw: list[dict[str, Any]]) -> list[documents.Document]:
    return documents.read_streams([("scenario.yaml", io.StringIO(yaml.safe_dump_all(raw)))])


def _usage_image(snap: snapshot.Snapshot) -> dict[str, dict[Any, int]]:
    nodes = [*snap.cq_nodes.values(), *snap.cohort_nodes.values()]
    return {f"{n.is_cohort}/{n.name}": dict(n.usage) for n in nodes}


class CheckedSimulator(engine.Simulator):
    """A simulator that checks the quota invariant after every instant."""

    def _settle(self) -> None:
        try:
            super()._settle()
        finally:
            self._check_quota()

    def _check_quota(self) -> None:
        snap = self.cache.snapshot
        for name, node in snap.cq_nodes.items():
            for fr in node.quotas:
                assert node.raw_available(fr) >= 0, f"{name} over-admitted on {fr} at t={self.now}"
                limit = node.quotas[fr].borrowing_limit
                if limit is not None:
                    assert node.usage.get(fr, 0) <= node.quotas[fr].nominal + limit
        for node in snap.cohort_nodes.values():
            if node.parent is None:
                for fr, amount in node.usage.items():
                    assert amount <= node.subtree_quota.get(fr, 0)


def _classical(run: Callable[[], _T]) -> _T:
    """Run a classical-preemption draw; one that loops (as Kueue's rules allow) is discarded."""
    try:
        return run()
    except engine.UnsettledError:
        reject()


@_SETTINGS
@given(strategies.scenarios())
def test_no_queue_exceeds_what_the_tree_allows(raw: list[dict[str, Any]]) -> None:
    _classical(CheckedSimulator(_docs(raw)).run)


@_SETTINGS
@given(strategies.scenarios(fair_sharing=True))
def test_fair_sharing_never_over_admits(raw: list[dict[str, Any]]) -> None:
    CheckedSimulator(_docs(raw)).run()


@_SETTINGS
@given(strategies.scenarios())
def test_same_input_same_decisions(raw: list[dict[str, Any]]) -> None:
    first = _classical(lambda: engine.simulate(_docs(copy.deepcopy(raw))))
    assert first == engine.simulate(_docs(raw))


def _by_instant(events: list[dict[str, Any]]) -> dict[float, list[str]]:
    """Each instant's events, in an order of their own (a round's groups may come in any)."""
    out: dict[float, list[str]] = {}
    for e in events:
        out.setdefault(float(e.get("t", -1.0)), []).append(json.dumps(e, sort_keys=True))
    return {t: sorted(lines) for t, lines in out.items()}


def _one_group(
    partition: cycle_groups.Partition,
    cluster_queues: Iterable[names.ClusterQueueName],
    *,
    one_group: bool = False,
) -> list[tuple[names.ClusterQueueName, ...]]:
    del partition, one_group
    queues = tuple(sorted(set(cluster_queues)))
    return [queues] if queues else []


def _rounds_match_one_cycle(raw: list[dict[str, Any]]) -> None:
    grouped = engine.simulate(_docs(copy.deepcopy(raw)))
    with mock.patch.object(cycle_groups.Partition, "split", _one_group):
        together = engine.simulate(_docs(raw))
    assert _by_instant(grouped) == _by_instant(together)


@_SETTINGS
@given(strategies.scenarios())
def test_a_cycle_per_group_of_trees_decides_what_one_cycle_over_all_does(
    raw: list[dict[str, Any]],
) -> None:
    _classical(lambda: _rounds_match_one_cycle(raw))


@_SETTINGS
@given(strategies.scenarios(fair_sharing=True))
def test_with_fair_sharing_a_cycle_per_group_decides_what_one_cycle_does(
    raw: list[dict[str, Any]],
) -> None:
    _rounds_match_one_cycle(raw)


@_SETTINGS
@given(strategies.scenarios())
def test_admit_then_remove_restores_the_snapshot(raw: list[dict[str, Any]]) -> None:
    sim = engine.Simulator(_docs(raw), until=3.0)
    _classical(sim.run)
    snap = sim.cache.snapshot
    before = _usage_image(snap)
    for key in sorted(sim.cache.admitted):
        adm = sim.cache.admitted[key]
        with snap.what_if():
            snap.remove_workload(key, adm.cluster_queue)
            snap.add_workload(adm)
            snap.remove_usage(adm.cluster_queue, adm.admission.usage)
        assert _usage_image(snap) == before
        forgotten = sim.cache.forget(key)
        assert forgotten is not None
        sim.cache.assume(forgotten.info, forgotten.admission, forgotten.reserved_at)
        assert _usage_image(sim.cache.snapshot) == before


@_SETTINGS
@given(strategies.scenarios())
def test_no_workload_is_partially_admitted_below_its_minimum(raw: list[dict[str, Any]]) -> None:
    counts = {
        f"ns/{d['metadata']['name']}": d["spec"]["podSets"][0]
        for d in raw
        if d["kind"] == "Workload"
    }
    for event in _classical(lambda: engine.simulate(_docs(raw))):
        if event["event"] != "Admitted":
            continue
        wanted = counts[event["workload"]]
        admitted = event["podSets"][0]["count"]
        assert admitted <= wanted["count"]
        assert admitted == wanted["count"] or admitted >= wanted.get("minCount", wanted["count"])


@_SETTINGS
@given(strategies.scenarios())
def test_every_preemption_makes_room_its_preemptor_uses(raw: list[dict[str, Any]]) -> None:
    events = _classical(lambda: engine.simulate(_docs(raw)))
    admitted_at = {(e["workload"], e["t"]) for e in events if e["event"] == "Admitted"}
    for e in events:
        if e["event"] == "Preempted":
            assert (e["by"], e["t"]) in admitted_at, (
                f"{e['by']} preempted {e['workload']} but was not admitted at t={e['t']}"
            )


@_SETTINGS
@given(strategies.scenarios(fair_sharing=True, finishing=False))
def test_fair_sharing_reaches_a_fixed_point(raw: list[dict[str, Any]]) -> None:
    events = engine.simulate(_docs(raw))
    last_arrival = max(
        float(d["metadata"]["annotations"]["sim.berth.dev/at"].rstrip("s"))
        for d in raw
        if d["kind"] == "Workload"
    )
    assert all(e["t"] <= last_arrival for e in events if e["event"] != "Summary")
    admissions: dict[str, int] = {}
    for e in events:
        if e["event"] == "Admitted":
            admissions[e["workload"]] = admissions.get(e["workload"], 0) + 1
    arrivals = len(
        {d["metadata"]["annotations"]["sim.berth.dev/at"] for d in raw if d["kind"] == "Workload"}
    )
    assert all(n <= arrivals for n in admissions.values())
