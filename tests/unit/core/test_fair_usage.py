"""``core.fair_usage``: the arithmetic of admission fair sharing, row by row against Kueue's.

Anchors: ``pkg/util/admissionfairsharing/admission_fair_sharing.go`` (v0.19): ``alpha`` is
``1 - 0.5^(dt/halfLife)`` (0 without a half-life), the usage an exponential average of what is
held at each sample, the entry penalty ``alpha(samplingInterval) x requests``, the score the
weighted sum (unlisted resources weigh 1) over the LocalQueue's weight (infinite at weight 0).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import worlds
from berth.api import names
from berth.core import fair_usage

GPU = names.ResourceName("nvidia.com/gpu")
CPU = names.ResourceName("cpu")


@pytest.mark.parametrize(
    ("elapsed", "half_life", "want"),
    [(3600, 3600, 0.5), (7200, 3600, 0.75), (0, 3600, 0.0), (300, 0, 0.0), (-5, 3600, 0.0)],
)
def test_alpha(elapsed: float, half_life: float, want: float) -> None:
    assert fair_usage.alpha(elapsed, half_life) == pytest.approx(want)


@pytest.mark.parametrize(
    ("old", "current", "elapsed", "half_life", "want"),
    [
        ({GPU: 8.0}, {GPU: 0.0}, 3600, 3600, {GPU: 4.0}),
        ({}, {GPU: 8.0}, 3600, 3600, {GPU: 4.0}),
        ({GPU: 8.0}, {CPU: 2.0}, 7200, 3600, {CPU: 1.5, GPU: 2.0}),
        ({GPU: 8.0}, {GPU: 8.0}, 10, 3600, {GPU: 8.0}),
        ({GPU: 8.0}, {GPU: 2.0}, 300, 0, {}),
    ],
    ids=[
        "an hour of nothing halves it",
        "an hour of holding 8 from nothing",
        "resources on one side only",
        "holding steady keeps it",
        "no half-life forgets everything (Kueue resets it)",
    ],
)
def test_decayed(
    old: dict[names.ResourceName, float],
    current: dict[names.ResourceName, float],
    elapsed: float,
    half_life: float,
    want: dict[names.ResourceName, float],
) -> None:
    got = fair_usage.decayed(old, current, elapsed, half_life)
    assert got == pytest.approx(want)


def test_the_entry_penalty_is_what_one_sample_would_add() -> None:
    penalty = fair_usage.penalty({GPU: 8.0}, 300, 3600)
    assert penalty[GPU] == pytest.approx(8 * (1 - 0.5 ** (300 / 3600)))
    assert fair_usage.decayed({}, {GPU: 8.0}, 300, 3600)[GPU] == pytest.approx(penalty[GPU])


@pytest.mark.parametrize(
    ("usage", "weights", "lq_weight", "want"),
    [
        ({GPU: 4.0, CPU: 8.0}, {}, 1.0, 12.0),
        ({GPU: 4.0, CPU: 8.0}, {CPU: 0.0}, 1.0, 4.0),
        ({GPU: 4.0}, {GPU: 10.0}, 2.0, 20.0),
        ({GPU: 4.0}, {}, 0.0, math.inf),
        ({}, {}, 0.0, math.inf),
    ],
    ids=[
        "unlisted resources weigh 1",
        "weight 0 leaves a resource out",
        "divided by the LocalQueue's weight",
        "LocalQueue weight 0 is always last",
        "even when idle (Kueue #13479: not NaN)",
    ],
)
def test_score(
    usage: dict[names.ResourceName, float],
    weights: dict[names.ResourceName, float],
    lq_weight: float,
    want: float,
) -> None:
    assert fair_usage.score(usage, weights, lq_weight) == want


def test_usage_is_summed_over_flavors_with_cpu_in_cores() -> None:
    usages = [{worlds.fr("a", "cpu"): 1500, worlds.fr("a", GPU): 2}, {worlds.fr("b", GPU): 3}]
    assert fair_usage.flat(usages) == {CPU: 1.5, GPU: 5.0}


@given(
    st.floats(0, 1e4),
    st.floats(0, 1e4),
    st.floats(1, 1e6),
    st.floats(1, 1e7),
)
def test_decayed_usage_stays_between_the_old_and_what_is_held(
    old: float, current: float, elapsed: float, half_life: float
) -> None:
    got = fair_usage.decayed({GPU: old}, {GPU: current}, elapsed, half_life)[GPU]
    assert min(old, current) - 1e-6 <= got <= max(old, current) + 1e-6
