"""The Topology kind and a pod set's placement request (Kueue's Topology Aware Scheduling API).

A ``Topology`` lists node labels from the widest domain to the narrowest (block, rack, host); a
ResourceFlavor naming it in ``topologyName`` is placed by topology. A pod set asks for a
placement in ``topologyRequest`` (on a Workload) or by annotations on the job's pod template
(``berth.dev/podset-required-topology`` and its siblings, Kueue's ``kueue.x-k8s.io/podset-*``),
which ``request_from_annotations`` reads. The admission's ``topologyAssignment`` says where the
pods go. Read by the core's placement (``berth.core.placement``), validation and the webhooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pydantic

from berth.api import base, errors

HOSTNAME = "kubernetes.io/hostname"

REQUIRED_ANNOTATION = "berth.dev/podset-required-topology"
PREFERRED_ANNOTATION = "berth.dev/podset-preferred-topology"
UNCONSTRAINED_ANNOTATION = "berth.dev/podset-unconstrained-topology"
SLICE_REQUIRED_ANNOTATION = "berth.dev/podset-slice-required-topology"
SLICE_SIZE_ANNOTATION = "berth.dev/podset-slice-size"

GATE = "berth.dev/topology"
"""Scheduling gate on the pods of a placed pod set until each is pinned to its domain."""
PLACED_LABEL = "berth.dev/tas"
"""On the pods of a pod set placed by topology: the uid of the job whose admission placed them
(the ungater finds their placement through it; other pods count as others' usage on nodes)."""

MAX_LEVELS = 16


class TopologyLevel(base.Model):
    """One level of a topology: the node label whose value names a node's domain there."""

    node_label: str = pydantic.Field(min_length=1, max_length=316)
    """The node label, e.g. cloud.com/topology-rack or kubernetes.io/hostname."""


class TopologySpec(base.Model):
    """The levels of a topology, widest first."""

    levels: list[TopologyLevel] = pydantic.Field(min_length=1, max_length=MAX_LEVELS)
    """Node labels from the widest domain to the narrowest (1 to 16, unique);
    kubernetes.io/hostname may only be the last."""


class Topology(base.Object):
    """How the nodes of topology-aware flavors are grouped (blocks, racks, hosts)."""

    KIND: ClassVar[str] = "Topology"

    spec: TopologySpec
    """The levels."""

    @property
    def level_labels(self) -> tuple[str, ...]:
        """The levels' node labels, widest first."""
        return tuple(level.node_label for level in self.spec.levels)


class PodSetTopologyRequest(base.Model):
    """Where a pod set's pods must or should run together (at most one of the three modes)."""

    required: str | None = None
    """Every pod in one domain of this level (a node label of the flavor's Topology)."""
    preferred: str | None = None
    """As few domains as possible, starting at this level and going up when it does not fit."""
    unconstrained: bool | None = None
    """Anywhere in the flavor's nodes, packing the fullest nodes first."""
    pod_set_slice_required_topology: str | None = None
    """Each slice of podSetSliceSize pods in one domain of this level."""
    pod_set_slice_size: int | None = pydantic.Field(default=None, ge=1)
    """The pods per slice; required with podSetSliceRequiredTopology."""

    @property
    def is_empty(self) -> bool:
        """Tell whether it asks for nothing."""
        return (
            self.required is None
            and self.preferred is None
            and not self.unconstrained
            and self.pod_set_slice_required_topology is None
        )


def request_from_annotations(annotations: Mapping[str, str]) -> PodSetTopologyRequest | None:
    """The request a pod template's annotations make, or None when they make none.

    Lenient: what ``annotation_problems`` reports (the webhook refuses such jobs) is read as
    absent, so an object stored before the check still queues.
    """
    slice_size: int | None = None
    size = annotations.get(SLICE_SIZE_ANNOTATION, "")
    if size.isdigit() and int(size) >= 1:
        slice_size = int(size)
    slice_level = annotations.get(SLICE_REQUIRED_ANNOTATION) or None
    if slice_size is None:
        slice_level = None
    required = annotations.get(REQUIRED_ANNOTATION) or None
    preferred = None if required else annotations.get(PREFERRED_ANNOTATION) or None
    unconstrained = (
        None
        if required or preferred
        else annotations.get(UNCONSTRAINED_ANNOTATION, "").lower() == "true" or None
    )
    request = PodSetTopologyRequest(
        required=required,
        preferred=preferred,
        unconstrained=unconstrained,
        pod_set_slice_required_topology=slice_level,
        pod_set_slice_size=slice_size if slice_level is not None else None,
    )
    return None if request.is_empty else request


def annotation_problems(annotations: Mapping[str, str], path: str) -> list[errors.FieldError]:
    """Every problem of a pod template's placement annotations, each naming the annotation."""
    out = _mode_problems(annotations, path) + _slice_problems(annotations, path)
    for key in (REQUIRED_ANNOTATION, PREFERRED_ANNOTATION, SLICE_REQUIRED_ANNOTATION):
        if key in annotations and not annotations[key]:
            out.append(
                _bad(
                    path, key, "must name a node label of the flavor's Topology, e.g. a rack label"
                )
            )
    return out


def _bad(path: str, key: str, fix: str) -> errors.FieldError:
    return errors.FieldError(f"{path}.annotations[{key}]", fix)


def _mode_problems(annotations: Mapping[str, str], path: str) -> list[errors.FieldError]:
    """Problems of the three modes: at most one, and unconstrained a boolean."""
    out: list[errors.FieldError] = []
    asked = [a for a in (REQUIRED_ANNOTATION, PREFERRED_ANNOTATION) if a in annotations]
    unconstrained = annotations.get(UNCONSTRAINED_ANNOTATION)
    if unconstrained is not None:
        if unconstrained.lower() not in ("true", "false"):
            out.append(_bad(path, UNCONSTRAINED_ANNOTATION, 'must be "true" or "false"'))
        elif unconstrained.lower() == "true":
            asked.append(UNCONSTRAINED_ANNOTATION)
    if len(asked) > 1:
        out.append(_bad(path, asked[1], f"set only one of {', '.join(asked)}; remove the others"))
    return out


def _slice_problems(annotations: Mapping[str, str], path: str) -> list[errors.FieldError]:
    """Problems of slices: a level and a positive size, together."""
    slice_level = annotations.get(SLICE_REQUIRED_ANNOTATION)
    size = annotations.get(SLICE_SIZE_ANNOTATION)
    key = SLICE_SIZE_ANNOTATION
    if slice_level is not None and size is None:
        return [_bad(path, key, f"is required with {SLICE_REQUIRED_ANNOTATION}; add it")]
    if size is None:
        return []
    if slice_level is None:
        return [_bad(path, key, f"is only read with {SLICE_REQUIRED_ANNOTATION}; add it")]
    if not size.isdigit() or int(size) < 1:
        return [_bad(path, key, f"must be a positive whole number of pods (got {size!r})")]
    return []


def request_problems(request: PodSetTopologyRequest, path: str) -> list[errors.FieldError]:
    """Every problem of a Workload pod set's ``topologyRequest``."""
    out: list[errors.FieldError] = []
    modes = [
        name
        for name, on in (
            ("required", request.required is not None),
            ("preferred", request.preferred is not None),
            ("unconstrained", bool(request.unconstrained)),
        )
        if on
    ]
    if len(modes) > 1:
        out.append(
            errors.FieldError(
                f"{path}.{modes[1]}", f"set only one of {', '.join(modes)}; remove the others"
            )
        )
    has_level = request.pod_set_slice_required_topology is not None
    has_size = request.pod_set_slice_size is not None
    if has_level != has_size:
        missing = "podSetSliceSize" if has_level else "podSetSliceRequiredTopology"
        out.append(
            errors.FieldError(
                f"{path}.{missing}",
                "podSetSliceRequiredTopology and podSetSliceSize go together; set both",
            )
        )
    return out


def topology_problems(topo: Topology) -> list[errors.FieldError]:
    """Every problem of a Topology's levels (unique; the hostname only as the last)."""
    out: list[errors.FieldError] = []
    seen: dict[str, int] = {}
    labels = topo.level_labels
    for i, label in enumerate(labels):
        path = f"spec.levels[{i}].nodeLabel"
        if label in seen:
            out.append(
                errors.FieldError(
                    path, f"{label} is already spec.levels[{seen[label]}]; list each label once"
                )
            )
        seen.setdefault(label, i)
        if label == HOSTNAME and i != len(labels) - 1:
            out.append(
                errors.FieldError(
                    path, f"{HOSTNAME} may only be the last (narrowest) level; move it last"
                )
            )
    return out
