"""Label selectors (``matchLabels`` and ``matchExpressions``) and how they match labels.

Used by ClusterQueue ``namespaceSelector`` and the Configuration's managed-namespace selector.
"""

from __future__ import annotations

import enum

import pydantic

from berth.api import base


class SelectorOperator(enum.StrEnum):
    """Operators of a label selector expression."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class LabelSelectorRequirement(base.Model):
    """One expression of a label selector."""

    key: str
    """The label key."""
    operator: SelectorOperator
    """How the key relates to the values."""
    values: list[str] = pydantic.Field(default_factory=list)
    """Values for In and NotIn (at least one); empty for Exists and DoesNotExist."""

    def matches(self, labels: dict[str, str]) -> bool:
        """Tell whether ``labels`` satisfy this expression."""
        present = self.key in labels
        if self.operator == SelectorOperator.EXISTS:
            return present
        if self.operator == SelectorOperator.DOES_NOT_EXIST:
            return not present
        if self.operator == SelectorOperator.IN:
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


class LabelSelector(base.Model):
    """A Kubernetes label selector; the empty selector matches everything."""

    match_labels: dict[str, str] = pydantic.Field(default_factory=dict)
    """Labels that must all be present with these values."""
    match_expressions: list[LabelSelectorRequirement] = pydantic.Field(default_factory=list)
    """Expressions that must all hold."""

    def matches(self, labels: dict[str, str]) -> bool:
        """Tell whether ``labels`` satisfy every requirement of the selector."""
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        return all(req.matches(labels) for req in self.match_expressions)
