"""The ResourceFlavor kind: a class of nodes (GPU model, spot or on-demand) quota is counted in.

Read by flavor assignment (labels and taints decide which pods may use it) and by job integrations
(labels and tolerations are injected into admitted pods).
"""

from __future__ import annotations

from typing import ClassVar

import pydantic

from berth.api import base, pod


class ResourceFlavorSpec(base.Model):
    """What nodes of this flavor look like."""

    node_labels: dict[str, str] = pydantic.Field(default_factory=dict, max_length=8)
    """Labels of this flavor's nodes; added to the node selector of admitted pods, and pods whose
    required node affinity contradicts them cannot use the flavor."""
    node_taints: list[pod.Taint] = pydantic.Field(default_factory=list, max_length=8)
    """Taints of this flavor's nodes; a pod set may use the flavor only if its pods tolerate the
    NoSchedule and NoExecute ones (PreferNoSchedule is ignored)."""
    tolerations: list[pod.Toleration] = pydantic.Field(default_factory=list, max_length=8)
    """Tolerations added to admitted pods; taints they tolerate are not checked at admission."""
    topology_name: str | None = None
    """Name of the Topology of this flavor's nodes, for topology-aware admission; requires at
    least one node label."""


class ResourceFlavor(base.Object):
    """A class of nodes (GPU model, spot or on-demand) that quota is counted in."""

    KIND: ClassVar[str] = "ResourceFlavor"

    spec: ResourceFlavorSpec = pydantic.Field(default_factory=ResourceFlavorSpec)
    """The nodes this flavor stands for."""
