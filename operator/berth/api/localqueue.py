"""The LocalQueue kind: a namespace's door into a ClusterQueue."""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base, clusterqueue, names, quota
from berth.api import conditions as cond


class LocalQueueSpec(base.Model):
    """The spec of a LocalQueue."""

    cluster_queue: names.ClusterQueueName
    """The ClusterQueue that admits this queue's workloads."""
    stop_policy: clusterqueue.StopPolicy = clusterqueue.StopPolicy.NONE
    """None; Hold: admit nothing new; HoldAndDrain: also evict admitted workloads."""
    fair_sharing: quota.FairSharing | None = None
    """This queue's weight for admission fair sharing."""


class AdmissionFairSharingStatus(base.Model):
    """A LocalQueue's decayed usage, kept so that a restart goes on from it."""

    consumed_resources: dict[names.ResourceName, str] = pydantic.Field(default_factory=dict)
    """Decayed usage per resource (decimal quantities; cpu in cores, memory in bytes)."""
    last_update: str | None = None
    """When it was last sampled (RFC 3339)."""


class LocalQueueFairSharingStatus(base.Model):
    """Admission fair-sharing state of a LocalQueue."""

    admission_fair_sharing_status: AdmissionFairSharingStatus | None = None
    """Its decayed usage, in a ClusterQueue using UsageBasedAdmissionFairSharing."""


class LocalQueueStatus(base.Model):
    """Status of a LocalQueue."""

    conditions: list[cond.Condition] = pydantic.Field(default_factory=list)
    """Conditions; Active tells whether the queue accepts workloads."""
    pending_workloads: int = 0
    """Workloads waiting for admission."""
    reserving_workloads: int = 0
    """Workloads holding a quota reservation."""
    admitted_workloads: int = 0
    """Admitted workloads that have not finished."""
    flavors_reservation: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    """Quota reserved by this queue's workloads, per flavor and resource."""
    flavors_usage: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    """Quota used by this queue's admitted workloads, per flavor and resource."""
    fair_sharing: LocalQueueFairSharingStatus | None = None
    """Its decayed usage for admission fair sharing."""


class LocalQueue(base.Object):
    """A namespace's door into a ClusterQueue; jobs name it in berth.dev/queue-name."""

    KIND: ClassVar[str] = "LocalQueue"
    NAMESPACED: ClassVar[bool] = True

    spec: LocalQueueSpec
    """The backing ClusterQueue and policies."""
    status: LocalQueueStatus | None = None
    """Usage and counts, written by the operator."""
