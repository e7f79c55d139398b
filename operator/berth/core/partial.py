"""Partial admission: the largest pod counts, down to each pod set's ``minCount``, that fit.

Mirrors Kueue's pod set reducer: a binary search over how much of the total allowed reduction
to apply, each pod set reduced in proportion to its own allowance. Called by ``berth.core.cycle``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from berth.core import workload

T = TypeVar("T")


def search(
    pod_sets: tuple[workload.PodSetInfo, ...], fits: Callable[[tuple[int, ...]], T | None]
) -> T | None:
    """Return ``fits``' result for the largest counts that fit, or None if none does.

    ``fits`` gets one count per pod set and returns a result, or None when those counts do not
    fit. Index 0 (no reduction) is part of the search, as in Kueue.
    """
    full = [ps.count for ps in pod_sets]
    deltas = [ps.count - (ps.count if ps.min_count is None else ps.min_count) for ps in pod_sets]
    total = sum(deltas)
    if total == 0:
        return None

    def counts_at(i: int) -> tuple[int, ...]:
        return tuple(f - d * i // total for f, d in zip(full, deltas, strict=True))

    # Smallest reduction i in [0, total] whose counts fit, by bisection (sort.Search).
    lo, hi = 0, total + 1
    best: T | None = None
    best_index = -1
    while lo < hi:
        mid = (lo + hi) // 2
        result = fits(counts_at(mid))
        if result is not None:
            best, best_index = result, mid
            hi = mid
        else:
            lo = mid + 1
    if best is None or lo != best_index:
        return None
    return best
