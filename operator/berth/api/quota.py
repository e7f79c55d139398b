"""Quota declarations shared by ClusterQueues and Cohorts: resource groups, flavors, limits.

``ResourceQuota`` stores ``nominalQuota``, ``borrowingLimit`` and ``lendingLimit`` in canonical
integer units of its resource; ``None`` for a limit means unlimited (never a large number).
"""

from __future__ import annotations

from typing import Any

import pydantic

from berth.api import base, names, quantity


class ResourceQuota(base.Model):
    """Quota of one resource in one flavor."""

    name: names.ResourceName
    nominal_quota: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None

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
    resources: list[ResourceQuota] = pydantic.Field(min_length=1, max_length=64)


class ResourceGroup(base.Model):
    """Resources whose flavors are chosen together, and the flavors to try, in order."""

    covered_resources: list[names.ResourceName] = pydantic.Field(min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = pydantic.Field(min_length=1, max_length=64)


class FairSharing(base.Model):
    """Fair-sharing weight of a ClusterQueue, Cohort or LocalQueue, in thousandths (default 1)."""

    weight: int = 1000

    @pydantic.field_validator("weight", mode="before")
    @classmethod
    def _parse_weight(cls, value: object) -> object:
        try:
            return quantity.parse("cpu", value)  # parsed in thousandths, like milli-CPU
        except quantity.QuantityError as err:
            raise ValueError(str(err)) from err

    @pydantic.field_serializer("weight")
    def _print_weight(self, value: int) -> str:
        return quantity.format("cpu", value)


class ResourceUsage(base.Model):
    """Status: how much of one resource is used, and how much of that is borrowed."""

    name: names.ResourceName
    total: int = 0
    borrowed: int = 0

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
    resources: list[ResourceUsage] = pydantic.Field(default_factory=list)


def quota_table(groups: list[ResourceGroup]) -> dict[tuple[str, str], ResourceQuota]:
    """Index a list of resource groups by (flavor, resource); later duplicates are ignored."""
    out: dict[tuple[str, str], ResourceQuota] = {}
    for group in groups:
        for flavor in group.flavors:
            for res in flavor.resources:
                out.setdefault((flavor.name, res.name), res)
    return out


def dump_groups(groups: list[ResourceGroup]) -> list[dict[str, Any]]:
    """Dump resource groups in YAML shape."""
    return [g.to_yaml_dict() for g in groups]
