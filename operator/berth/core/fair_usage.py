"""Admission fair sharing's arithmetic: decayed usage, the entry penalty, a LocalQueue's score.

As Kueue computes them (``pkg/util/admissionfairsharing/admission_fair_sharing.go``, v0.19):

- ``alpha(dt, H) = 1 - 0.5 ** (dt / H)`` (0 when the half-life ``H`` is 0): how much of the
  usage sampled after ``dt`` seconds replaces the old;
- ``decayed = old * (1 - alpha) + current * alpha`` per resource: an average of the usage held
  at each sample (GPUs, cores), not a sum of resource-seconds, so it tends to what is held;
- the entry penalty ``alpha(interval, H) * requests``: what a workload admitted now would add
  at the next sample, added at once so that one LocalQueue cannot get many workloads admitted
  within one sampling interval before its usage shows them;
- the score ``sum(weight[r] * usage[r]) / lq_weight`` (a resource not weighted weighs 1;
  ``lq_weight`` 0: infinite, always last).

Usage is per resource name, summed over flavors; cpu counts in cores. Pure; called by
``berth.state.fair_usage``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from berth.api import names, quantity
from berth.core import resources

Usage = dict[names.ResourceName, float]


def alpha(elapsed: float, half_life: float) -> float:
    """The weight of a sample taken ``elapsed`` seconds after the last one."""
    if half_life <= 0:
        return 0.0
    return 1.0 - math.pow(0.5, max(elapsed, 0.0) / half_life)


def decayed(
    old: Mapping[names.ResourceName, float],
    current: Mapping[names.ResourceName, float],
    elapsed: float,
    half_life: float,
) -> Usage:
    """The decayed usage after a sample of ``current`` taken ``elapsed`` seconds after ``old``.

    With no half-life every sample forgets the past entirely (Kueue resets the usage to nothing
    then; what is held now does not count either).
    """
    if half_life <= 0:
        return {}
    a = alpha(elapsed, half_life)
    return {
        r: old.get(r, 0.0) * (1.0 - a) + current.get(r, 0.0) * a for r in sorted({*old, *current})
    }


def added(
    usage: Mapping[names.ResourceName, float], extra: Mapping[names.ResourceName, float]
) -> Usage:
    """``usage`` plus ``extra``, per resource."""
    return {r: usage.get(r, 0.0) + extra.get(r, 0.0) for r in sorted({*usage, *extra})}


def penalty(
    requests: Mapping[names.ResourceName, float], interval: float, half_life: float
) -> Usage:
    """What a workload admitted now adds to its LocalQueue's usage at once."""
    a = alpha(interval, half_life)
    return {r: a * v for r, v in requests.items()}


def score(
    usage: Mapping[names.ResourceName, float],
    weights: Mapping[names.ResourceName, float],
    lq_weight: float,
) -> float:
    """A LocalQueue's weighted usage per unit of its weight: the lowest gives the next head."""
    if lq_weight <= 0:
        return math.inf
    return sum(weights.get(r, 1.0) * usage[r] for r in sorted(usage)) / lq_weight


def flat(usages: Iterable[resources.FlavorResourceAmounts]) -> Usage:
    """Quota usage summed per resource name over flavors, cpu in cores."""
    out: Usage = {}
    for usage in usages:
        for fr, amount in usage.items():
            value = amount / 1000 if quantity.is_milli(fr.resource) else float(amount)
            out[fr.resource] = out.get(fr.resource, 0.0) + value
    return out
