"""The LocalQueue kind: a namespace's door into a ClusterQueue."""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base, clusterqueue, names, quota
from berth.api import conditions as cond


class LocalQueueSpec(base.Model):
    """The spec of a LocalQueue."""

    cluster_queue: names.ClusterQueueName
    stop_policy: clusterqueue.StopPolicy = clusterqueue.StopPolicy.NONE
    fair_sharing: quota.FairSharing | None = None


class LocalQueueStatus(base.Model):
    """Status of a LocalQueue."""

    conditions: list[cond.Condition] = pydantic.Field(default_factory=list)
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)
    flavors_usage: list[quota.FlavorUsage] = pydantic.Field(default_factory=list)


class LocalQueue(base.Object):
    """A LocalQueue (namespaced; short names ``lq``, ``queue``)."""

    KIND: ClassVar[str] = "LocalQueue"
    NAMESPACED: ClassVar[bool] = True

    spec: LocalQueueSpec
    status: LocalQueueStatus | None = None
