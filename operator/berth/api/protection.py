"""Preemption protection and budgets: who cannot be a victim, for how long, and how often.

One model serves two places with one shape: the Configuration's ``preemptionProtection`` (the
operator-wide windows, Kueue's KEP-9876 field names ``fairSharing.minAdmitDuration`` and
``reclaimWithinCohort.minAdmitDuration``, plus Berth's opt-in ``withinClusterQueue``) and a
ClusterQueue's ``spec.preemptionProtection``, which sets them for the workloads admitted to
that queue. ``PreemptionBudget`` bounds how many workloads below a ClusterQueue or Cohort may be
preempted within a sliding window (the ``PreemptedClusterQueue`` scope of Kueue's
``PreemptionLimit``, KEP-13396: ``limit`` and ``limitWindowDuration``). Read by
``berth.core.protection``; validated here, so the webhook, the CRD schema and ``berth simulate``
refuse the same values with the same message.
"""

from __future__ import annotations

import pydantic

from berth.api import base, duration

SHORTEST = 60.0
"""The shortest window, in seconds, as Kueue's proposals (KEP-8522, KEP-9876) require: below one
minute the scheduler's own retries already outlast it."""

LONGEST = 30 * 24 * 3600.0
"""The longest window, in seconds (30 days): longer, and a queue could never reclaim its quota
from a job that runs for weeks; give such work a higher priority instead."""


class MinAdmitDuration(base.Model):
    """One protection window."""

    min_admit_duration: duration.Duration
    """How long after its admission a workload cannot be preempted for this reason: 0s for no
    protection, otherwise between 1m and 720h (30 days)."""

    @pydantic.field_validator("min_admit_duration", mode="before")
    @classmethod
    def _window(cls, value: object) -> float:
        seconds = duration.parse(value)  # a DurationError is a ValueError: pydantic names the field
        if seconds != 0 and not SHORTEST <= seconds <= LONGEST:
            msg = (
                f"{value!r} is outside 1m..720h; write 0s for no protection, at least 1m (shorter "
                "windows end before the scheduler retries) and at most 720h (longer ones let no "
                "queue reclaim its quota; use a higher priority instead)"
            )
            raise ValueError(msg)
        return seconds

    @pydantic.field_serializer("min_admit_duration")
    def _print_duration(self, value: float) -> str:
        return duration.format(value)


class PreemptionProtection(base.Model):
    """How long a workload is protected after admission from each kind of preemption."""

    within_cluster_queue: MinAdmitDuration | None = None
    """From priority preemption by a workload of its own ClusterQueue (withinClusterQueue,
    Berth's own; Kueue never protects from it). Unset: not protected."""
    reclaim_within_cohort: MinAdmitDuration | None = None
    """From reclamation by another queue of its cohort (reasons InCohortReclamation and
    InCohortReclaimWhileBorrowing), as Kueue's KEP-9876. Unset: not protected."""
    fair_sharing: MinAdmitDuration | None = None
    """From fair-sharing preemption by another queue (reason InCohortFairSharing), as Kueue's
    KEP-9876. Unset: not protected."""

    def over(self, default: PreemptionProtection | None) -> PreemptionProtection:
        """These windows, each unset one taken from ``default`` (a queue's over the operator's)."""
        if default is None:
            return self
        return PreemptionProtection(
            within_cluster_queue=self.within_cluster_queue or default.within_cluster_queue,
            reclaim_within_cohort=self.reclaim_within_cohort or default.reclaim_within_cohort,
            fair_sharing=self.fair_sharing or default.fair_sharing,
        )


class PreemptionBudget(base.Model):
    """At most ``limit`` evictions by preemption in any ``limitWindowDuration``."""

    limit: int = pydantic.Field(ge=1, le=100_000)
    """How many of the workloads below it may be preempted within one window: at least 1 (a
    budget of 0 would stop preemption for good; set the preemption policy to Never instead)."""
    limit_window_duration: duration.Duration
    """The sliding window the limit counts in: between 1m and 720h (30 days)."""

    @pydantic.field_validator("limit_window_duration", mode="before")
    @classmethod
    def _window(cls, value: object) -> float:
        seconds = duration.parse(value)
        if not SHORTEST <= seconds <= LONGEST:
            msg = f"{value!r} is outside 1m..720h; write e.g. 1h or 24h"
            raise ValueError(msg)
        return seconds

    @pydantic.field_serializer("limit_window_duration")
    def _print_duration(self, value: float) -> str:
        return duration.format(value)
