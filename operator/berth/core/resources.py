"""Flavor-resource keys and request arithmetic shared by the whole core.

A ``FlavorResource`` names one cell of quota: a resource counted in one flavor. Amounts are plain
``int`` in the canonical units of ``berth.api.quantity``.
"""

from __future__ import annotations

from typing import NamedTuple

from berth.api import names, quantity


class FlavorResource(NamedTuple):
    """One cell of quota: ``resource`` in ``flavor``."""

    flavor: names.FlavorName
    resource: names.ResourceName


Requests = dict[names.ResourceName, int]
"""Amounts per resource (one pod, or a whole pod set)."""

FlavorResourceAmounts = dict[FlavorResource, int]
"""Amounts per flavor and resource (a workload's usage, a node's quota)."""


def add_into(target: FlavorResourceAmounts, other: FlavorResourceAmounts) -> None:
    """Add ``other`` into ``target`` in place."""
    for fr, amount in other.items():
        target[fr] = target.get(fr, 0) + amount


def fmt(resource: str, amount: int) -> str:
    """Print an amount of a resource as a Kubernetes quantity."""
    return quantity.format(resource, amount)
