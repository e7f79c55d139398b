"""``devtools.teamshares``: each team's 7-day share of GPU-hours against its weighted share.

Hand-computed rows: a window counts for a team only if it had work waiting all through it; the
weighted share is its weight over the weights of the teams that held or waited for GPUs then.
"""

from __future__ import annotations

from typing import Any

import pytest

from berth.devtools import teamshares as ts

DAY = 86400.0
WEEK = 7 * DAY


def _admitted(t: float, key: str) -> dict[str, Any]:
    return {"t": t, "event": "Admitted", "workload": key}


def _finished(t: float, key: str) -> dict[str, Any]:
    return {"t": t, "event": "Finished", "workload": key}


def test_a_team_that_waits_while_another_holds_everything_is_far_below_its_share() -> None:
    # a holds 8 GPUs for the whole week; b's job waits from day 0 to day 7, then runs.
    jobs = [ts.Job("a/1", "a", 0, 8), ts.Job("b/1", "b", 0, 8)]
    events = [_admitted(0, "a/1"), _finished(WEEK, "a/1"), _admitted(WEEK, "b/1")]
    got = ts.measure(events, jobs, WEEK)
    assert (got.counted, got.below, got.lowest, got.lowest_team) == (1, 1, 0.0, "b")
    assert not got.met


def test_equal_halves_are_each_team_s_whole_weighted_share() -> None:
    # Both hold 4 GPUs all week and each has a second job waiting all week.
    jobs = [ts.Job(f"{t}/{i}", t, 0, 4) for t in "ab" for i in (1, 2)]
    events = [_admitted(0, "a/1"), _admitted(0, "b/1")]
    got = ts.measure(events, jobs, WEEK)
    assert (got.counted, got.below) == (2, 0)
    assert got.lowest == pytest.approx(1.0)
    assert got.met


def test_weights_raise_the_share_a_team_is_owed() -> None:
    # Equal halves, but b weighs 3: b is owed 3/4 and got 1/2.
    jobs = [ts.Job(f"{t}/{i}", t, 0, 4) for t in "ab" for i in (1, 2)]
    events = [_admitted(0, "a/1"), _admitted(0, "b/1")]
    got = ts.measure(events, jobs, WEEK, weights={"b": 3.0})
    assert got.lowest == pytest.approx(0.5 / 0.75)
    assert got.lowest_team == "b"


def test_a_team_with_nothing_waiting_claims_no_window() -> None:
    # b's job runs at once: it never waits, so no window counts for it.
    jobs = [ts.Job("a/1", "a", 0, 8), ts.Job("b/1", "b", 0, 1)]
    events = [_admitted(0, "a/1"), _admitted(0, "b/1")]
    got = ts.measure(events, jobs, WEEK)
    assert got.counted == 0
    assert got.lowest == 1.0
