"""The parts of a Kubernetes Node that topology-aware admission reads, and their one parser.

Labels place a node in its topology domains; ``status.allocatable`` is its room; taints,
``spec.unschedulable`` and the ``Ready`` condition say whether pods may go there. Everything
else of the Node is kept as written and ignored. Read by the simulator (Node documents in a
scenario) and the operator (Node events); ``berth.core.topology.node_of`` turns it into the
core's value.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pydantic

from berth.api import base, errors, kinds, pod

API_VERSION = "v1"
KIND = "Node"
DEFAULT_PODS = 110
"""The kubelet's default pod limit, for a node whose allocatable does not say."""


class NodeCondition(base.OpenModel):
    """A node condition; only ``Ready`` is read."""

    type: str
    status: str = "Unknown"


class NodeSpec(base.OpenModel):
    """Whether new pods may go to the node, and its taints."""

    unschedulable: bool = False
    taints: list[pod.Taint] = pydantic.Field(default_factory=list)


class NodeStatus(base.OpenModel):
    """The node's room and conditions."""

    allocatable: pod.ResourceList = pydantic.Field(default_factory=dict)
    conditions: list[NodeCondition] = pydantic.Field(default_factory=list)


class Node(base.Object):
    """A Kubernetes Node, as far as placement reads it."""

    model_config = pydantic.ConfigDict(extra="allow")
    KIND: ClassVar[str] = KIND

    api_version: str = API_VERSION
    spec: NodeSpec = pydantic.Field(default_factory=NodeSpec)
    status: NodeStatus = pydantic.Field(default_factory=NodeStatus)

    @property
    def ready(self) -> bool:
        """Tell whether its Ready condition is True.

        A node that reports no condition counts as ready, as a scenario's hand-written nodes
        usually do.
        """
        ready = [c for c in self.status.conditions if c.type == "Ready"]
        return not ready or ready[-1].status == "True"


def parse(raw: dict[str, Any]) -> tuple[Node | None, list[errors.FieldError]]:
    """Read a Node object; every problem as a field error with its path."""
    try:
        node = Node.model_validate(raw)
    except pydantic.ValidationError as exc:
        return None, kinds.errors_from_pydantic(exc)
    if not node.metadata.name:
        return None, [errors.FieldError("metadata.name", "required; give the node a name")]
    return node, []
