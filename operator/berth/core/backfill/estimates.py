"""How long a workload is expected to run once admitted, and where that figure comes from.

The Backfill strategy (``planning``) plans with these estimates. In order of trust:

1. The job's own hard bound (``berth.dev/runtime-limit``, written from ``activeDeadlineSeconds``)
   and its ``berth.dev/expected-runtime`` annotation: the smaller of those it has (Slurm plans
   with the time limit; an annotation below it is a better guess).
2. Learned: a high percentile of the runtimes of similar finished workloads of its LocalQueue
   (``state.runtimes`` keeps them).
3. The ClusterQueue's ``spec.backfill.defaultRuntime``.

A learned or default estimate never exceeds a hard bound (none of the above has one then).
Pure; called by ``core.cycle`` through the estimator ``state.runtimes`` builds.
"""

from __future__ import annotations

import dataclasses
import enum

from berth.api import clusterqueue, duration
from berth.core import workload


class Source(enum.StrEnum):
    """Where an estimate comes from."""

    LIMIT = "RuntimeLimit"
    ANNOTATION = "ExpectedRuntime"
    LEARNED = "Learned"
    DEFAULT = "Default"


@dataclasses.dataclass(frozen=True, slots=True)
class Estimate:
    """An expected runtime in seconds and its source."""

    seconds: float
    source: Source

    def describe(self) -> str:
        """The estimate as a person reads it, e.g. ``2h (learned)``."""
        return f"{duration.format(self.seconds)} ({_WORDS[self.source]})"


_WORDS = {
    Source.LIMIT: "its runtime limit",
    Source.ANNOTATION: "berth.dev/expected-runtime",
    Source.LEARNED: "learned from its LocalQueue",
    Source.DEFAULT: "the ClusterQueue's defaultRuntime",
}


def estimate(
    info: workload.WorkloadInfo, learned: float | None, settings: clusterqueue.Backfill
) -> Estimate:
    """The estimate of ``info`` given what was learned for its kind of workload."""
    limit, expected = info.runtime_limit, info.expected_runtime
    if expected is not None and (limit is None or expected < limit):
        return Estimate(expected, Source.ANNOTATION)
    if limit is not None:
        return Estimate(limit, Source.LIMIT)
    if learned is not None:
        return Estimate(learned, Source.LEARNED)
    return Estimate(settings.default_runtime, Source.DEFAULT)
