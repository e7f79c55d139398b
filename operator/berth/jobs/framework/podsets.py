"""A pod set's template placed on its admitted flavors, shared by every job kind.

``placed`` gives a recorded template's labels, node selector and tolerations once started on a
pod set's flavors (Kueue's ``podset.Merge``); ``template_patch`` and ``with_fields`` write them
into a job's template as a merge patch or a copy. Called by every kind's start and restore.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from berth.api import bodies
from berth.api.labels import POD_SET_LABEL


@dataclasses.dataclass(frozen=True, slots=True)
class FlavorPlacement:
    """What a flavor adds to the pods admitted on it: node labels to select, taints to tolerate."""

    node_labels: dict[str, str]
    tolerations: tuple[dict[str, Any], ...] = ()
    pod_labels: tuple[tuple[str, str], ...] = ()
    """Labels the admitted pods get (a topology-aware flavor's: which job placed them)."""


_UNCHANGED = object()


def _map_patch(current: dict[str, Any], target: dict[str, Any]) -> object:
    """A JSON merge patch turning map ``current`` into ``target``.

    ``_UNCHANGED`` when they are equal; None (remove the field) when ``target`` is empty.
    """
    if current == target:
        return _UNCHANGED
    if not target:
        return None
    patch: dict[str, Any] = {k: None for k in current if k not in target}
    patch.update({k: v for k, v in target.items() if current.get(k) != v})
    return patch


def template_patch(
    template: dict[str, Any],
    labels: dict[str, Any],
    node_selector: dict[str, Any],
    tolerations: list[dict[str, Any]],
) -> dict[str, Any]:
    """A JSON merge patch giving a pod template these labels, node selector and tolerations."""
    current_labels = bodies.labels_of(template)
    pod_spec = template.get("spec") or {}
    out: dict[str, Any] = {}
    label_patch = _map_patch(current_labels, labels)
    if label_patch is None and set(template.get("metadata") or {}) <= {"labels"}:
        # The labels were all the metadata: it goes too, so a custom resource (whose templates
        # the API server stores as written) gets back exactly the template it was given.
        out["metadata"] = None
    elif label_patch is not _UNCHANGED:
        out["metadata"] = {"labels": label_patch}
    spec: dict[str, Any] = {}
    selector_patch = _map_patch(pod_spec.get("nodeSelector") or {}, node_selector)
    if selector_patch is not _UNCHANGED:
        spec["nodeSelector"] = selector_patch
    if (pod_spec.get("tolerations") or []) != tolerations:
        spec["tolerations"] = tolerations or None  # none left: the field goes, as before start
    if spec:
        out["spec"] = spec
    return out


def with_fields(
    template: dict[str, Any],
    labels: dict[str, Any],
    selector: dict[str, Any],
    tolerations: list[dict[str, Any]],
) -> dict[str, Any]:
    """A copy of a pod template with these labels, node selector and tolerations.

    For kinds that keep templates in a list (a merge patch replaces a list whole).
    """
    out = copy.deepcopy(template)
    meta = out.setdefault("metadata", {})
    spec = out.setdefault("spec", {})
    for holder, key, value in (
        (meta, "labels", labels),
        (spec, "nodeSelector", selector),
        (spec, "tolerations", tolerations),
    ):
        if value:
            holder[key] = value
        else:
            holder.pop(key, None)
    if not meta:
        del out["metadata"]  # empty metadata means none; a restored template compares equal
    return out


def placed(
    original: dict[str, Any], *, pod_set: str, flavors: list[FlavorPlacement]
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """A pod template's labels, node selector and tolerations once started on ``flavors``.

    The recorded template's own, plus the ``berth.dev/podset`` label, every flavor's node labels
    and every flavor's tolerations (as Kueue's ``podset.Merge``). Shared by every job kind.
    """
    meta = bodies.meta(original)
    spec = original.get("spec") or {}
    labels = dict(meta.get("labels") or {})
    labels[POD_SET_LABEL] = pod_set
    selector = dict(spec.get("nodeSelector") or {})
    tolerations = list(spec.get("tolerations") or [])
    for flavor in flavors:
        selector.update(flavor.node_labels)
        tolerations.extend(t for t in flavor.tolerations if t not in tolerations)
        labels.update(flavor.pod_labels)
    return labels, selector, tolerations
