"""The shared base of every API model: camelCase YAML aliases, frozen values, object metadata.

Every kind in ``berth.api`` derives from ``Model`` (nested values) or ``Object`` (top-level kinds
with ``apiVersion``, ``kind`` and ``metadata``). Field names are snake_case in Python and camelCase
in YAML, exactly Kueue v1beta2's names.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pydantic
from pydantic import alias_generators

GROUP = "berth.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"


class Model(pydantic.BaseModel):
    """A frozen value with camelCase aliases that rejects unknown fields."""

    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
        use_enum_values=False,
        validate_default=False,
        use_attribute_docstrings=True,
    )

    def to_yaml_dict(self) -> dict[str, Any]:
        """Dump to the YAML shape: aliases, and only the fields the input set (a round trip)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)

    def to_full_dict(self) -> dict[str, Any]:
        """Dump to the YAML shape with every default filled in."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class OpenModel(Model):
    """A value that keeps fields Berth does not model (Kubernetes objects owned by others)."""

    model_config = pydantic.ConfigDict(extra="allow")


class ObjectMeta(OpenModel):
    """The parts of Kubernetes ``metadata`` Berth reads; everything else is kept as is."""

    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] = pydantic.Field(default_factory=dict)
    annotations: dict[str, str] = pydantic.Field(default_factory=dict)
    creation_timestamp: str | None = None
    resource_version: str | None = None
    generation: int | None = None


class Object(Model):
    """A top-level Kubernetes object of one of Berth's kinds."""

    KIND: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = False

    api_version: str = API_VERSION
    kind: str = ""
    metadata: ObjectMeta = pydantic.Field(default_factory=ObjectMeta)

    @pydantic.model_validator(mode="after")
    def _fill_kind(self) -> Object:
        # The kind is implied by the class; fill it so a dump always says what it is.
        if not self.kind:
            object.__setattr__(self, "kind", self.KIND)
        return self

    @property
    def name(self) -> str:
        """The object's ``metadata.name``."""
        return self.metadata.name
