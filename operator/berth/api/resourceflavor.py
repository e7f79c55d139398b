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
    node_taints: list[pod.Taint] = pydantic.Field(default_factory=list, max_length=8)
    tolerations: list[pod.Toleration] = pydantic.Field(default_factory=list, max_length=8)
    topology_name: str | None = None


class ResourceFlavor(base.Object):
    """A ResourceFlavor (cluster-scoped; short names ``rf``, ``flavor``)."""

    KIND: ClassVar[str] = "ResourceFlavor"

    spec: ResourceFlavorSpec = pydantic.Field(default_factory=ResourceFlavorSpec)
