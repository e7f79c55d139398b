"""The registry of kinds Berth reads, and loading a raw YAML document into its model.

``load`` turns a mapping into the model of its ``apiVersion``/``kind`` and reports every problem as
a ``FieldError`` with a YAML path, combining schema errors (types, enums, quantities, unknown
fields) with the semantic checks of ``berth.api.validation``. Used by the CLI, the simulator's
scenario loader, the webhooks and the CRD generator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pydantic

from berth.api import (
    base,
    clusterqueue,
    cohort,
    configuration,
    errors,
    localqueue,
    priorityclass,
    resourceflavor,
    topology,
    validation,
    workload,
)

if TYPE_CHECKING:
    import pydantic_core

BERTH_KINDS: dict[str, type[base.Object]] = {
    "ResourceFlavor": resourceflavor.ResourceFlavor,
    "ClusterQueue": clusterqueue.ClusterQueue,
    "Cohort": cohort.Cohort,
    "LocalQueue": localqueue.LocalQueue,
    "WorkloadPriorityClass": priorityclass.WorkloadPriorityClass,
    "Workload": workload.Workload,
    "Topology": topology.Topology,
    "Configuration": configuration.Configuration,
}
"""Kinds of ``berth.dev/v1beta1``, by kind name."""

CRD_KINDS = (
    "ResourceFlavor",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "WorkloadPriorityClass",
    "Workload",
    "Topology",
)
"""Kinds served by the API server as custom resources (Configuration is a file, not a CRD)."""


def format_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic location as a YAML path: ``spec.podSets[0].count``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


_RENAMED = {
    "cohort": "cohortName",
    "priorityClassName": "priorityClassRef (with priority)",
    "priorityClassSource": "priorityClassRef.group and priorityClassRef.kind",
    "flavorUsage": "flavorsUsage",
}
"""Fields renamed between Kueue v1beta1 and v1beta2, for the hint on an unknown field."""

_SWITCHES = {"waitForPodsReady", "fairSharing"}
"""Configuration sections that Kueue v1beta1 turned on with ``enable``; v1beta2 has no switch."""


def _message(err: pydantic_core.ErrorDetails) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required field is missing; add it"
    if kind == "extra_forbidden":
        field = err["loc"][-1] if err["loc"] else ""
        if field == "enable" and len(err["loc"]) == 2 and err["loc"][0] in _SWITCHES:
            section = err["loc"][0]
            off = f"{section}: null" if section == "waitForPodsReady" else "no section at all"
            return (
                f"unknown field; Kueue v1beta1's switch, remove it: a present {section} is on, "
                f"and {off} turns it off"
            )
        if field in _RENAMED:
            return (
                f"unknown field; this is Kueue v1beta1's name, write {_RENAMED[field]} instead "
                "(berth import converts Kueue YAML)"
            )
        return (
            "unknown field; remove it or check its spelling (Berth uses Kueue v1beta2 field names)"
        )
    if kind == "value_error":
        ctx = err.get("ctx")
        return str(ctx["error"]) if ctx and "error" in ctx else str(err["msg"])
    msg = str(err["msg"])
    if "input" in err and not isinstance(err["input"], dict | list):
        msg += f" (got {errors.shorten(err['input'])})"
    return msg


def errors_from_pydantic(
    exc: pydantic.ValidationError, prefix: str = ""
) -> list[errors.FieldError]:
    """Convert a pydantic ValidationError into FieldErrors with YAML paths."""
    out = []
    for err in exc.errors():
        # Pydantic appends the name of the failing validator function to some locations.
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = format_path(loc)
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        out.append(errors.FieldError(path, _message(err)))
    return out


def model_for(api_version: str, kind: str) -> type[base.Object] | None:
    """Return the model class for a Berth ``apiVersion``/``kind``, or None if not Berth's."""
    if api_version == base.API_VERSION:
        return BERTH_KINDS.get(kind)
    if api_version == "scheduling.k8s.io/v1" and kind == "PriorityClass":
        return priorityclass.PriorityClass
    return None


def load(doc: dict[str, Any]) -> base.Object:
    """Load one Berth document, raising ``ApiError`` with every field error found."""
    obj, problems = try_load(doc)
    if obj is None or problems:
        raise errors.ApiError(problems)
    return obj


def try_load(doc: dict[str, Any]) -> tuple[base.Object | None, list[errors.FieldError]]:
    """Load one Berth document, returning the model (if it parsed) and every field error."""
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None, [errors.FieldError("kind", "every document needs apiVersion and kind")]
    model = model_for(api_version, kind)
    if model is None:
        known = ", ".join(sorted(BERTH_KINDS))
        return None, [
            errors.FieldError(
                "kind",
                f"{api_version} {kind} is not a Berth kind; expected {base.API_VERSION} "
                f"with one of: {known}",
            )
        ]
    try:
        obj = model.model_validate(doc)
    except pydantic.ValidationError as exc:
        return None, errors_from_pydantic(exc)
    return obj, validation.validate(obj)
