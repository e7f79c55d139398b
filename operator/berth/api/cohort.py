"""The Cohort kind: a node of the borrowing tree, with optional extra shared quota.

Cohorts named only by a ClusterQueue's ``cohortName`` exist implicitly, with no quota and no parent.
"""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base, clusterqueue, names, protection, quota


class CohortSpec(base.Model):
    """The spec of a Cohort."""

    parent_name: names.CohortName | None = None
    """The parent cohort; unset makes this cohort a root. A parent named only here exists
    implicitly; a cycle disables every queue in it."""
    resource_groups: list[quota.ResourceGroup] = pydantic.Field(default_factory=list, max_length=16)
    """Extra quota shared by every queue below this cohort."""
    fair_sharing: quota.FairSharing | None = None
    """This cohort's weight within its parent when fair sharing is enabled."""
    preemption_budget: protection.PreemptionBudget | None = None
    """At most this many workloads of the ClusterQueues below this cohort preempted per window
    (any reason), over and above each queue's own budget."""
    admission_scope: clusterqueue.AdmissionScope | None = None
    """Berth's own, on a root cohort: with UsageBasedAdmissionFairSharing the heads of its
    ClusterQueues are ordered by each queue's decayed usage (its LocalQueues' summed, over its
    fairSharing.weight) before priority, as Slurm's fair-share tree; needs the Configuration's
    admissionFairSharing."""


class CohortFairSharingStatus(base.Model):
    """Status: the cohort's weighted share within its parent."""

    weighted_share: int = 0
    """Weighted share of this cohort within its parent, in thousandths."""


class CohortStatus(base.Model):
    """Status of a Cohort."""

    fair_sharing: CohortFairSharingStatus | None = None
    """Fair-sharing state."""


class Cohort(base.Object):
    """A node of the borrowing tree: queues in a cohort lend each other unused quota."""

    KIND: ClassVar[str] = "Cohort"

    spec: CohortSpec = pydantic.Field(default_factory=CohortSpec)
    """Parent and shared quota."""
    status: CohortStatus | None = None
    """Fair-sharing state, written by the operator."""
