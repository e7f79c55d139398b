"""Priority classes: Berth's WorkloadPriorityClass and Kubernetes' PriorityClass.

Read when a job becomes a workload, whose priority is resolved from these; when a
WorkloadPriorityClass's value changes, the operator and the simulator rewrite the priority of the
workloads naming it (``berth.core.priority``).
"""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base


class WorkloadPriorityClass(base.Object):
    """A priority for workloads, independent of the pods' PriorityClass."""

    KIND: ClassVar[str] = "WorkloadPriorityClass"

    value: int = pydantic.Field(ge=-(2**31), le=2**31 - 1)
    """The priority; higher is more important. Changing it changes the priority of the workloads
    that name the class, pending or admitted."""
    description: str | None = pydantic.Field(default=None, max_length=2048)
    """What the class is for."""


class PriorityClass(base.Object):
    """A ``scheduling.k8s.io/v1`` PriorityClass, for pods that name one."""

    KIND: ClassVar[str] = "PriorityClass"

    model_config = pydantic.ConfigDict(extra="allow")

    api_version: str = "scheduling.k8s.io/v1"
    value: int = pydantic.Field(ge=-(2**31), le=2**31 - 1)
    global_default: bool = False
    description: str | None = None
