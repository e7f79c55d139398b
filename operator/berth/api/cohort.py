"""The Cohort kind: a node of the borrowing tree, with optional extra shared quota.

Cohorts named only by a ClusterQueue's ``cohortName`` exist implicitly, with no quota and no parent.
"""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base, names, quota


class CohortSpec(base.Model):
    """The spec of a Cohort."""

    parent_name: names.CohortName | None = None
    resource_groups: list[quota.ResourceGroup] = pydantic.Field(default_factory=list, max_length=16)
    fair_sharing: quota.FairSharing | None = None


class CohortFairSharingStatus(base.Model):
    """Status: the cohort's weighted share within its parent."""

    weighted_share: int = 0


class CohortStatus(base.Model):
    """Status of a Cohort."""

    fair_sharing: CohortFairSharingStatus | None = None


class Cohort(base.Object):
    """A Cohort (cluster-scoped; short name ``co``)."""

    KIND: ClassVar[str] = "Cohort"

    spec: CohortSpec = pydantic.Field(default_factory=CohortSpec)
    status: CohortStatus | None = None
