"""Conversion of Kueue YAML (``kueue.x-k8s.io`` v1beta1, v1beta2) into Berth's API group.

``convert`` rewrites one document and returns it with human-readable warnings about what changed
meaning or was dropped. Berth's kinds carry Kueue v1beta2's field names, so v1beta2 mostly changes
group; v1beta1 differs as Kueue's own conversion says (``apis/kueue/v1beta1/*_conversion.go``):

- ClusterQueue ``spec.cohort`` is ``spec.cohortName``; flavorFungibility ``Borrow`` and ``Preempt``
  are ``MayStopSearch``; ``admissionChecks`` became ``admissionChecksStrategy`` (Berth has neither);
- Workload ``priorityClassName`` + ``priorityClassSource`` are ``priorityClassRef {group, kind,
  name}``;
- Configuration ``waitForPodsReady.enable`` and ``fairSharing.enable`` are gone: a present section
  means enabled, and v1beta1's defaults (5m timeout, ``blockAdmission`` on) are written out.

v1alpha1 Cohorts (``spec.parent``) are converted too, and so are the items of a ``v1 List``.
Job labels and annotations ``kueue.x-k8s.io/{queue-name, priority-class, job-min-parallelism}``
become ``berth.dev/...`` on Jobs and pod templates; a Workload's ``kueue.x-k8s.io/priority-boost``
(KEP-7990) becomes ``berth.dev/priority-boost``. Fields Berth does not model, ``status`` (the
operator writes it) and server-set metadata are dropped with a warning. Berth documents, Namespaces
and PriorityClasses pass through silently; any other document passes through unchanged with a
warning. Pure: used by ``berth import`` and by the simulator when a scenario holds Kueue documents.
"""

from __future__ import annotations

import copy
from typing import Any

import pydantic

from berth.api import base, configuration, kinds, workload

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_CONFIG_GROUP = "config.kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta1", "v1beta2")

LABELS = {
    f"{KUEUE_GROUP}/queue-name": f"{base.GROUP}/queue-name",
    f"{KUEUE_GROUP}/priority-class": f"{base.GROUP}/priority-class",
    f"{KUEUE_GROUP}/job-min-parallelism": f"{base.GROUP}/job-min-parallelism",
}
"""Kueue labels and annotations Berth reads under its own prefix."""
WORKLOAD_RENAMES = {
    **LABELS,
    workload.KUEUE_PRIORITY_BOOST_ANNOTATION: workload.PRIORITY_BOOST_ANNOTATION,
}
"""On a Workload also KEP-7990's priority boost, which Berth reads from Workloads only."""

PRIORITY_SOURCES = {
    f"{KUEUE_GROUP}/workloadpriorityclass": (base.GROUP, "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
"""v1beta1 ``priorityClassSource`` values and the ``priorityClassRef`` group and kind they mean."""

_FUNGIBILITY = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_V1BETA1_PODS_READY_TIMEOUT = "5m"
_PASS_SILENTLY = {("v1", "Namespace"), ("scheduling.k8s.io/v1", "PriorityClass")}
_JOB = ("batch/v1", "Job")
_LIST = ("v1", "List")

Warnings = list[str]


def is_kueue(doc: dict[str, Any]) -> bool:
    """Tell whether a document is in one of Kueue's API groups."""
    api_version = doc.get("apiVersion")
    if not isinstance(api_version, str):
        return False
    group = api_version.partition("/")[0]
    return group in {KUEUE_GROUP, KUEUE_CONFIG_GROUP}


def convert(doc: dict[str, Any]) -> tuple[dict[str, Any], Warnings]:
    """Convert one document into Berth's API; return it with warnings about what changed."""
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return doc, ["not a Kubernetes object (no apiVersion or kind); left unchanged"]
    group, _, version = api_version.rpartition("/")
    if group == KUEUE_GROUP:
        return _convert_kueue_kind(doc, version, kind)
    if group == KUEUE_CONFIG_GROUP and kind == "Configuration":
        return _convert_configuration(doc, version)
    if (api_version, kind) == _LIST and isinstance(doc.get("items"), list):
        return _convert_list(doc)
    if (api_version, kind) == _JOB:
        out = copy.deepcopy(doc)
        warnings: Warnings = []
        _rename_labels(out.get("metadata"), "metadata", warnings)
        template = (out.get("spec") or {}).get("template")
        if isinstance(template, dict):
            _rename_labels(template.get("metadata"), "spec.template.metadata", warnings)
        return out, _prefixed(out, warnings)
    if api_version == base.API_VERSION or (api_version, kind) in _PASS_SILENTLY:
        return doc, []
    return doc, [f"{api_version} {kind} is not something Berth converts; left unchanged"]


def _convert_list(doc: dict[str, Any]) -> tuple[dict[str, Any], Warnings]:
    """Convert every item of a ``kubectl get -o yaml`` list."""
    out = dict(doc)
    out["items"] = []
    warnings: Warnings = []
    for i, item in enumerate(doc["items"]):
        if isinstance(item, dict):
            converted, notes = convert(item)
        else:
            converted, notes = item, ["not a Kubernetes object; left unchanged"]
        out["items"].append(converted)
        warnings += [f"items[{i}]: {n}" for n in notes]
    return out, warnings


def _convert_kueue_kind(
    doc: dict[str, Any], version: str, kind: str
) -> tuple[dict[str, Any], Warnings]:
    model = kinds.BERTH_KINDS.get(kind)
    cohort_alpha = version == "v1alpha1" and kind == "Cohort"
    if (
        model is None
        or kind not in kinds.CRD_KINDS
        or not (version in KUEUE_VERSIONS or cohort_alpha)
    ):
        return doc, [f"{KUEUE_GROUP}/{version} {kind} has no Berth equivalent; left unchanged"]
    out = copy.deepcopy(doc)
    out["apiVersion"] = base.API_VERSION
    warnings: Warnings = []
    _clean_metadata(out, warnings, WORKLOAD_RENAMES if kind == "Workload" else LABELS)
    if "status" in out:
        del out["status"]
        warnings.append("status: dropped; the operator writes it")
    spec = out.get("spec")
    if isinstance(spec, dict):
        if kind == "ClusterQueue":
            _convert_cluster_queue_spec(spec, warnings)
        elif kind == "Cohort":
            _rename_field(spec, "parent", "parentName", "spec", warnings)
        elif kind == "Workload":
            _convert_workload_spec(spec, warnings)
    _drop_unmodelled(out, model, warnings)
    return out, _prefixed(out, warnings)


def _convert_cluster_queue_spec(spec: dict[str, Any], warnings: Warnings) -> None:
    _rename_field(spec, "cohort", "cohortName", "spec", warnings)
    fungibility = spec.get("flavorFungibility")
    if isinstance(fungibility, dict):
        for field in ("whenCanBorrow", "whenCanPreempt"):
            old = fungibility.get(field)
            if isinstance(old, str) and old in _FUNGIBILITY:
                fungibility[field] = _FUNGIBILITY[old]
                warnings.append(
                    f"spec.flavorFungibility.{field}: {old} is now written {_FUNGIBILITY[old]}"
                )


def _convert_workload_spec(spec: dict[str, Any], warnings: Warnings) -> None:
    name = spec.get("priorityClassName")
    source = spec.pop("priorityClassSource", None)
    if "priorityClassName" in spec and (not name or "priorityClassRef" in spec):
        del spec["priorityClassName"]
        if name:
            warnings.append("spec.priorityClassName: dropped; spec.priorityClassRef is also set")
    elif "priorityClassName" in spec:
        ref = None
        if source in PRIORITY_SOURCES:
            group, kind = PRIORITY_SOURCES[source]
            ref = {"group": group, "kind": kind, "name": name}
        _replace_key(spec, "priorityClassName", "priorityClassRef", ref)
        if ref is None:
            del spec["priorityClassRef"]
            warnings.append(
                f"spec.priorityClassName {name!r} has no priorityClassSource, so it names no "
                "class; dropped (spec.priority is kept)"
            )
    ref = spec.get("priorityClassRef")
    if isinstance(ref, dict) and ref.get("group") == KUEUE_GROUP:
        ref["group"] = base.GROUP
    for i, pod_set in enumerate(spec.get("podSets") or []):
        template = pod_set.get("template") if isinstance(pod_set, dict) else None
        if isinstance(template, dict):
            path = f"spec.podSets[{i}].template.metadata"
            _rename_labels(template.get("metadata"), path, warnings)


def _convert_configuration(doc: dict[str, Any], version: str) -> tuple[dict[str, Any], Warnings]:
    if version not in KUEUE_VERSIONS:
        return doc, [f"{KUEUE_CONFIG_GROUP}/{version} Configuration is not known; left unchanged"]
    out = copy.deepcopy(doc)
    out["apiVersion"] = base.API_VERSION
    warnings: Warnings = []
    if version == "v1beta1":
        _configuration_v1beta1(out, warnings)
    if out.get("namespace") == "kueue-system":
        warnings.append("namespace: kueue-system kept; Berth's own default is berth-system")
    frameworks = (out.get("integrations") or {}).get("frameworks") or []
    known = {f.value for f in configuration.Framework}
    others = [f for f in frameworks if f not in known]
    if others:
        out["integrations"]["frameworks"] = [f for f in frameworks if f in known]
        warnings.append(
            f"integrations.frameworks: Berth does not integrate {others} yet; they are ignored"
        )
    kept = out.get("integrations", {}).get("frameworks") or []
    trainjob, jobset = configuration.Framework.TRAINJOB.value, configuration.Framework.JOBSET.value
    if trainjob in kept and jobset not in kept:
        # Berth checks a TrainJob's JobSet and its Jobs through the JobSet integration.
        out["integrations"]["frameworks"] = [*kept, jobset]
        warnings.append(f"integrations.frameworks: {jobset} added; {trainjob} runs on it")
    _drop_unmodelled(out, configuration.Configuration, warnings)
    return out, [f"Configuration: {w}" for w in warnings]


def _configuration_v1beta1(out: dict[str, Any], warnings: Warnings) -> None:
    wait = out.get("waitForPodsReady")
    if not isinstance(wait, dict) or not wait.pop("enable", False):
        # v1beta1 leaves it off unless enabled; Berth (like v1beta2) turns it on by default.
        out["waitForPodsReady"] = None
        warnings.append("waitForPodsReady: not enabled, written as null to keep it off")
    else:
        wait.setdefault("timeout", _V1BETA1_PODS_READY_TIMEOUT)
        wait.setdefault("blockAdmission", True)
    fair = out.get("fairSharing")
    if isinstance(fair, dict):
        if fair.pop("enable", False):
            if not fair.get("preemptionStrategies"):
                fair.pop("preemptionStrategies", None)  # Berth's default is Kueue's
        else:
            del out["fairSharing"]
            warnings.append("fairSharing: not enabled, dropped")


def _clean_metadata(
    doc: dict[str, Any], warnings: Warnings, renames: dict[str, str] = LABELS
) -> None:
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        return
    dropped = [k for k in _SERVER_METADATA if metadata.pop(k, None) is not None]
    if dropped:
        warnings.append(f"metadata: dropped server-set fields {', '.join(dropped)}")
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict) and annotations.pop(_LAST_APPLIED, None) is not None:
        warnings.append(f"metadata.annotations: dropped {_LAST_APPLIED}")
    finalizers = metadata.get("finalizers")
    if isinstance(finalizers, list):
        kept = [f for f in finalizers if not str(f).startswith(f"{KUEUE_GROUP}/")]
        if len(kept) != len(finalizers):
            warnings.append("metadata.finalizers: dropped Kueue's finalizers")
            if kept:
                metadata["finalizers"] = kept
            else:
                del metadata["finalizers"]
    _rename_labels(metadata, "metadata", warnings, renames)


def _rename_labels(
    metadata: object, path: str, warnings: Warnings, renames: dict[str, str] = LABELS
) -> None:
    """Rename Kueue's labels and annotations Berth reads; warn about the ones it does not."""
    if not isinstance(metadata, dict):
        return
    for section in ("labels", "annotations"):
        values = metadata.get(section)
        if not isinstance(values, dict):
            continue
        for key in list(values):
            if key in renames:
                if renames[key] in values:
                    del values[key]
                    warnings.append(f"{path}.{section}: {key} dropped; {renames[key]} wins")
                else:
                    _replace_key(values, key, renames[key], values[key])
            elif str(key).startswith(f"{KUEUE_GROUP}/"):
                warnings.append(f"{path}.{section}: {key} kept; Berth does not read it")


def _rename_field(node: dict[str, Any], old: str, new: str, path: str, warnings: Warnings) -> None:
    if old not in node:
        return
    if new in node:
        del node[old]
        warnings.append(f"{path}.{old}: dropped; {path}.{new} is also set and wins")
    else:
        _replace_key(node, old, new, node[old])


def _replace_key(node: dict[str, Any], old: str, new: str, value: object) -> None:
    """Replace ``old`` by ``new`` in place, keeping the field's position for a readable diff."""
    items = [(new, value) if key == old else (key, v) for key, v in node.items()]
    node.clear()
    node.update(items)


def _drop_unmodelled(doc: dict[str, Any], model: type[base.Object], warnings: Warnings) -> None:
    """Remove every field the Berth model does not have, with a warning naming it."""
    try:
        model.model_validate(doc)
    except pydantic.ValidationError as exc:
        extra = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
    else:
        return
    for loc in extra:
        if _delete(doc, loc):
            warnings.append(f"{kinds.format_path(loc)}: Berth does not support this field; dropped")


def _delete(node: object, loc: tuple[int | str, ...]) -> bool:
    for step in loc[:-1]:
        in_dict = isinstance(node, dict) and step in node
        in_list = isinstance(node, list) and isinstance(step, int) and step < len(node)
        if not (in_dict or in_list):
            return False
        node = node[step]  # type: ignore[index]  # checked just above
    if isinstance(node, dict) and loc[-1] in node:
        del node[loc[-1]]
        return True
    return False


def _prefixed(doc: dict[str, Any], warnings: Warnings) -> Warnings:
    metadata = doc.get("metadata") or {}
    name = metadata.get("name", "") if isinstance(metadata, dict) else ""
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    who = f"{doc.get('kind')} {namespace}/{name}" if namespace else f"{doc.get('kind')} {name}"
    return [f"{who}: {w}" for w in warnings]
