"""Kubernetes JSON as Berth reads it: the one ``Body`` type, typed metadata and safe readers.

Objects arrive as the API server (or a watch, an admission review, a scenario file) sends them:
JSON decoded into dicts, which may lack any field or hold the wrong type in it. ``Body`` is that
shape, named once. ``ObjectMeta`` and ``OwnerReference`` type the metadata every object shares
(after kopf's ``structs/bodies``); the readers return a field or its empty value, never raise on
a missing or malformed one, and are the one place that knows where each field lives. Kind
specific fields stay with their kind (``jobs``); a Workload is read through
``api.workload_view``, a job's identity through ``api.job_view``. Used by every layer above.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast

Body = dict[str, Any]
"""A Kubernetes object (or any JSON object) as decoded."""


class OwnerReference(TypedDict, total=False):
    """One entry of ``metadata.ownerReferences``."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    """``metadata``, the fields Berth reads or writes."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]


def meta(body: Mapping[str, Any]) -> ObjectMeta:
    """The object's metadata (empty if it has none, or not an object)."""
    found = body.get("metadata")
    # A decoded JSON object: its fields are read through the readers below, each checked.
    return cast("ObjectMeta", found) if isinstance(found, dict) else ObjectMeta()


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def name(body: Mapping[str, Any]) -> str:
    """``metadata.name`` ("" if missing)."""
    return _text(meta(body).get("name"))


def namespace(body: Mapping[str, Any], default: str = "") -> str:
    """``metadata.namespace``, or ``default`` when it is missing or empty."""
    return _text(meta(body).get("namespace")) or default


def namespaced_name(body: Mapping[str, Any]) -> str:
    """``namespace/name``, as messages and logs name an object."""
    return f"{namespace(body)}/{name(body)}"


def uid(body: Mapping[str, Any]) -> str:
    """``metadata.uid`` ("" if missing: not stored yet)."""
    return _text(meta(body).get("uid"))


def resource_version(body: Mapping[str, Any]) -> str:
    """``metadata.resourceVersion`` ("" if missing)."""
    return _text(meta(body).get("resourceVersion"))


def _strings(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}


def labels_of(body: Mapping[str, Any]) -> dict[str, str]:
    """A copy of ``metadata.labels`` (empty if none)."""
    return _strings(meta(body).get("labels"))


def annotations_of(body: Mapping[str, Any]) -> dict[str, str]:
    """A copy of ``metadata.annotations`` (empty if none)."""
    return _strings(meta(body).get("annotations"))


def owner_references(body: Mapping[str, Any]) -> list[OwnerReference]:
    """``metadata.ownerReferences``, the entries that are objects."""
    refs = meta(body).get("ownerReferences")
    if not isinstance(refs, list):
        return []
    return [r for r in refs if isinstance(r, dict)]


def controller(body: Mapping[str, Any]) -> OwnerReference | None:
    """The owner reference marked ``controller: true`` (None: no controller)."""
    return next((r for r in owner_references(body) if r.get("controller") is True), None)


def deleting(body: Mapping[str, Any]) -> bool:
    """Tell whether the object is being deleted (``metadata.deletionTimestamp`` is set)."""
    return bool(meta(body).get("deletionTimestamp"))


def kind(body: Mapping[str, Any]) -> str:
    """``kind`` ("" if missing)."""
    return _text(body.get("kind"))


def api_version(body: Mapping[str, Any]) -> str:
    """``apiVersion`` ("" if missing)."""
    return _text(body.get("apiVersion"))
