"""Quota declarations shared by ClusterQueues and Cohorts: resource groups, flavors, limits.

``ResourceQuota`` stores ``nominalQuota``, ``borrowingLimit`` and ``lendingLimit`` in canonical
integer units of its resource; ``None`` for a limit means unlimited (never a large number).
"""

from __future__ import annotations

from typing import Annotated

import pydantic

from berth.api import base, names, quantity

Quantity = Annotated[int, pydantic.WithJsonSchema(quantity.JSON_SCHEMA)]
"""An amount in canonical units, written in YAML as a Kubernetes quantity (the CRD says so)."""


class ResourceQuota(base.Model):
    """Quota of one resource in one flavor."""

    name: names.ResourceName
    """The resource, e.g. cpu, memory or nvidia.com/gpu."""
    nominal_quota: Quantity
    """How much of the resource this queue may use without borrowing (>= 0); in a cohort, the
    amount it contributes to the shared pool."""
    borrowing_limit: Quantity | None = None
    """The most this queue may borrow from its cohort beyond its nominal quota; unset means no
    limit. Only allowed in a cohort (for a Cohort: only when it has a parent)."""
    lending_limit: Quantity | None = None
    """The most of its quota this queue lends to its cohort; unset means all of it. For a
    ClusterQueue at most nominalQuota; for a Cohort it caps what its whole subtree lends. Only
    allowed in a cohort (for a Cohort: only when it has a parent)."""

    @pydantic.field_validator("nominal_quota", "borrowing_limit", "lending_limit", mode="before")
    @classmethod
    def _parse_quantity(cls, value: object, info: pydantic.ValidationInfo) -> object:
        if value is None:
            return None
        resource = info.data.get("name", "")
        try:
            return quantity.parse(str(resource), value)
        except quantity.QuantityError as err:
            raise ValueError(str(err)) from err

    @pydantic.field_serializer("nominal_quota", "borrowing_limit", "lending_limit")
    def _print_quantity(self, value: int | None) -> str | None:
        return None if value is None else quantity.format(self.name, value)


class FlavorQuotas(base.Model):
    """The quotas of one flavor inside a resource group."""

    name: names.FlavorName
    """A ResourceFlavor name."""
    resources: list[ResourceQuota] = pydantic.Field(min_length=1, max_length=64)
    """Quota of each covered resource, in the order of coveredResources."""


class ResourceGroup(base.Model):
    """Resources whose flavors are chosen together, and the flavors to try, in order."""

    covered_resources: list[names.ResourceName] = pydantic.Field(min_length=1, max_length=64)
    """Resources whose flavor is chosen together; a resource may be in one group only."""
    flavors: list[FlavorQuotas] = pydantic.Field(min_length=1, max_length=64)
    """Flavors to try, in order; a flavor may be in one group only."""


class FairSharing(base.Model):
    """Fair-sharing settings of a ClusterQueue, Cohort or LocalQueue."""

    weight: Quantity = 1000  # in thousandths, like milli-CPU
    """Advantage when competing for unused quota in the cohort (default 1): the share is the
    dominant usage above nominal quota divided by the weight. 0 means an infinite share, always
    at a disadvantage."""

    @pydantic.field_validator("weight", mode="before")
    @classmethod
    def _parse_weight(cls, value: object) -> object:
        try:
            return quantity.parse("cpu", value)  # parsed in thousandths, like milli-CPU
        except quantity.QuantityError as err:
            raise ValueError(
                f"{value!r} is not a weight; use a non-negative quantity such as 1, 0.5 or 2 "
                "(0 means the share is infinite)"
            ) from err

    @pydantic.field_serializer("weight")
    def _print_weight(self, value: int) -> str:
        return quantity.format("cpu", value)


class ResourceUsage(base.Model):
    """Status: how much of one resource is used, and how much of that is borrowed."""

    name: names.ResourceName
    """The resource."""
    total: Quantity = 0
    """Amount in use."""
    borrowed: Quantity = 0
    """Part of the total that is borrowed from the cohort."""

    @pydantic.field_validator("total", "borrowed", mode="before")
    @classmethod
    def _parse_quantity(cls, value: object, info: pydantic.ValidationInfo) -> object:
        try:
            return quantity.parse(str(info.data.get("name", "")), value)
        except quantity.QuantityError as err:
            raise ValueError(str(err)) from err

    @pydantic.field_serializer("total", "borrowed")
    def _print_quantity(self, value: int) -> str:
        return quantity.format(self.name, value)


class FlavorUsage(base.Model):
    """Status: usage of every resource in one flavor."""

    name: names.FlavorName
    """The flavor."""
    resources: list[ResourceUsage] = pydantic.Field(default_factory=list)
    """Usage of each resource in the flavor."""


def quota_table(groups: list[ResourceGroup]) -> dict[tuple[str, str], ResourceQuota]:
    """Index a list of resource groups by (flavor, resource); later duplicates are ignored."""
    out: dict[tuple[str, str], ResourceQuota] = {}
    for group in groups:
        for flavor in group.flavors:
            for res in flavor.resources:
                out.setdefault((flavor.name, res.name), res)
    return out
