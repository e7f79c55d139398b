"""The pure half of the ``batch/v1`` Job integration: a Job becomes a Workload.

One pod set ``main`` whose count is ``parallelism`` (bounded by ``completions``), ``minCount`` from
the ``berth.dev/job-min-parallelism`` annotation (partial admission), the pod template as is, the
queue from the ``berth.dev/queue-name`` label and the priority class from
``berth.dev/priority-class``.
The Workload is named ``job-<job name>-<5 hex chars>`` like Kueue's. Used by the simulator and
by the operator's job handlers, so both build identical Workloads.

The rest of the integration's pure half is here too: the merge patch that starts a Job for an
admission (the flavors' node labels and tolerations injected), the patch that restores the
original template after it was stopped, and reading a Job's status (finished, pods ready, pods
still active). The operator's job controller applies these patches.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from berth.api import base, duration, errors, kinds, workload

QUEUE_LABEL = "berth.dev/queue-name"
PRIORITY_LABEL = "berth.dev/priority-class"
MIN_PARALLELISM = "berth.dev/job-min-parallelism"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
JOB_UID_LABEL = workload.JOB_UID_LABEL
_MAX_NAME = 253
_HASH = 5


def workload_name(job_name: str, job_uid: str, *, kind: str = "Job", group: str = "batch") -> str:
    """The Workload name for a job: ``<kind>-<name>-<hash>``, at most 253 characters.

    Kueue's ``jobframework.GetWorkloadNameForOwnerWithGVK``: the lower-cased kind and the job's
    name, then 5 hex characters of the SHA-1 of kind, group, name and uid.
    """
    digest = hashlib.sha1(  # noqa: S324 - a name suffix, not a security hash
        f"{kind}\n{group}\n{job_name}\n{job_uid}".encode()
    ).hexdigest()
    prefix = f"{kind.lower()}-{job_name}"[: _MAX_NAME - 1 - _HASH]
    return f"{prefix}-{digest[:_HASH]}"


def _label(meta: dict[str, Any], key: str, fallback: str | None, honor_kueue: bool) -> str | None:
    labels = meta.get("labels") or {}
    value = labels.get(key)
    if value is None and honor_kueue and fallback is not None:
        value = labels.get(fallback)
    return None if value is None else str(value)


def queue_name(job: dict[str, Any], *, honor_kueue: bool = False) -> str | None:
    """The LocalQueue a Job names, if any."""
    return _label(job.get("metadata") or {}, QUEUE_LABEL, KUEUE_QUEUE_LABEL, honor_kueue)


def priority_class(job: dict[str, Any], *, honor_kueue: bool = False) -> str | None:
    """The WorkloadPriorityClass a Job names, if any."""
    return _label(job.get("metadata") or {}, PRIORITY_LABEL, KUEUE_PRIORITY_LABEL, honor_kueue)


def pod_count(job: dict[str, Any]) -> int:
    """Pods the Job runs at once: ``parallelism`` (default 1), bounded by ``completions``."""
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    if completions is not None:
        count = min(count, int(completions))
    return count


def to_workload(
    job: dict[str, Any], *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """Build the Workload of a Job, or return the field errors that prevent it."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    problems = spec_problems(spec)
    if problems:
        return None, problems
    count = pod_count(job)
    min_count, problems = _min_count(meta.get("annotations") or {}, count, honor_kueue=honor_kueue)
    if problems:
        return None, problems
    pod_set: dict[str, Any] = {"name": "main", "count": count, "template": spec["template"]}
    if min_count is not None:
        pod_set["minCount"] = min_count
    return build_workload(
        job,
        uid=uid,
        pod_sets=[pod_set],
        honor_kueue=honor_kueue,
        role=lambda _: (None, "spec.template"),
        runtime_limit=deadline(spec),
    )


def deadline(spec: dict[str, Any]) -> float | None:
    """A job's ``activeDeadlineSeconds`` (its controller's hard runtime bound), if positive.

    One longer than any duration (``duration.LONGEST``, about 292 years) bounds nothing a plan
    could use and could not be written as one: the job has none.
    """
    value = spec.get("activeDeadlineSeconds")
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= duration.LONGEST:
        return float(value)
    return None


RolePaths = Callable[[int], tuple[str | None, str]]
"""Where pod set ``i`` lives in its job: the role's path (None: leave other paths as they are)
and its pod template's path. Errors are named in the job's own terms."""


def build_workload(
    job: dict[str, Any],
    *,
    uid: str,
    pod_sets: Sequence[dict[str, Any]],
    honor_kueue: bool,
    role: RolePaths,
    kind: str = "Job",
    group: str = "batch",
    runtime_limit: float | None = None,
    name: str | None = None,
    labels: dict[str, str] | None = None,
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """The Workload of a job of any kind from its pod sets, or the field errors that prevent it.

    Named as Kueue names it (``workload_name``, unless ``name`` is given), owned by nothing yet
    (``core.integrations`` adds the owner), labelled with the job's uid (and ``labels``), in the
    job's LocalQueue. The job's
    ``berth.dev/expected-runtime`` annotation is copied and its hard ``runtime_limit`` written
    as ``berth.dev/runtime-limit``, for the Backfill strategy's estimates.
    """
    meta = job.get("metadata") or {}
    notes: dict[str, str] = {}
    expected = (meta.get("annotations") or {}).get(workload.EXPECTED_RUNTIME_ANNOTATION)
    if expected is not None:
        notes[workload.EXPECTED_RUNTIME_ANNOTATION] = str(expected)
    if runtime_limit is not None:
        notes[workload.RUNTIME_LIMIT_ANNOTATION] = duration.format(runtime_limit)
    doc: dict[str, Any] = {
        "apiVersion": base.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name or workload_name(str(meta.get("name") or ""), uid, kind=kind, group=group),
            "namespace": str(meta.get("namespace") or "default"),
            "labels": {JOB_UID_LABEL: uid, **(labels or {})},
            **({"annotations": notes} if notes else {}),
        },
        "spec": {"podSets": list(pod_sets), "queueName": queue_name(job, honor_kueue=honor_kueue)},
    }
    obj, problems = kinds.try_load(doc)
    if obj is None or problems:
        return None, [errors.FieldError(_job_path(p.path, role), p.message) for p in problems]
    assert isinstance(obj, workload.Workload)  # noqa: S101 - kinds.try_load returns the kind asked for
    return obj, []


def _job_path(path: str, role: RolePaths) -> str:
    """A Workload field path in the job's terms: pod set i is role i, its template the role's."""
    prefix = "spec.podSets["
    if not path.startswith(prefix):
        return path
    index, _, rest = path[len(prefix) :].partition("]")
    if not index.isdigit():
        return path
    role_path, template_path = role(int(index))
    if rest.startswith(".template"):
        return template_path + rest[len(".template") :]
    return path if role_path is None else role_path + rest


def spec_problems(spec: dict[str, Any]) -> list[errors.FieldError]:
    """What keeps a Job spec from making a pod set: bad sizes, no template (paths from spec)."""
    problems: list[errors.FieldError] = []
    for field in ("parallelism", "completions"):
        value = spec.get(field)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            problems.append(errors.FieldError(f"spec.{field}", "must be a non-negative integer"))
    if "template" not in spec:
        problems.append(errors.FieldError("spec.template", "required; give the Job a pod template"))
    return problems


def _min_count(
    annotations: dict[str, Any], count: int, *, honor_kueue: bool
) -> tuple[int | None, list[errors.FieldError]]:
    """The pod set's ``minCount`` from the annotation (None without it), or why it is invalid."""
    raw_min = annotations.get(MIN_PARALLELISM)
    if raw_min is None and honor_kueue:
        raw_min = annotations.get(KUEUE_MIN_PARALLELISM)
    if raw_min is None:
        return None, []
    try:
        min_count = int(str(raw_min))
    except ValueError:
        min_count = -1
    if not 0 < min_count < count:
        path = f"metadata.annotations[{MIN_PARALLELISM}]"
        return None, [
            errors.FieldError(
                path, f"must be an integer greater than 0 and less than parallelism ({count})"
            )
        ]
    return min_count, []


# Running a Job for an admission, stopping it, reading its status -----------------------------

POD_SET_LABEL = "berth.dev/podset"
"""Put on the pod template of a started Job: the pod set its pods belong to."""


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
    current_labels = (template.get("metadata") or {}).get("labels") or {}
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


def _template(job: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = (job.get("spec") or {}).get("template") or {}
    return found


def placed(
    original: dict[str, Any], *, pod_set: str, flavors: list[FlavorPlacement]
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """A pod template's labels, node selector and tolerations once started on ``flavors``.

    The recorded template's own, plus the ``berth.dev/podset`` label, every flavor's node labels
    and every flavor's tolerations (as Kueue's ``podset.Merge``). Shared by every job kind.
    """
    meta = original.get("metadata") or {}
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


def start_patch(
    job: dict[str, Any],
    original: dict[str, Any],
    *,
    pod_set: str,
    count: int,
    flavors: list[FlavorPlacement],
) -> dict[str, Any]:
    """Return the merge patch that starts ``job`` for its admission.

    ``original`` is the pod template the Workload recorded; the started template is that one
    with ``nodeSelector`` += the node labels of every flavor assigned to the pod set,
    ``tolerations`` += those flavors' tolerations, the ``berth.dev/podset`` label, and
    ``parallelism`` set to the admitted count when it was reduced (partial admission).
    """
    labels, selector, tolerations = placed(original, pod_set=pod_set, flavors=flavors)
    patch: dict[str, Any] = {"spec": {"suspend": False}}
    template = template_patch(_template(job), labels, selector, tolerations)
    if template:
        patch["spec"]["template"] = template
    if count != pod_count(job):
        patch["spec"]["parallelism"] = count
    return patch


def restore_patch(
    job: dict[str, Any], original: dict[str, Any], *, count: int
) -> dict[str, Any] | None:
    """Return the merge patch that gives a stopped ``job`` its original template back (or None).

    ``count`` is the pod set's count as the Workload recorded it (the original parallelism).
    """
    meta = original.get("metadata") or {}
    spec = original.get("spec") or {}
    patch: dict[str, Any] = {"spec": {}}
    template = template_patch(
        _template(job),
        dict(meta.get("labels") or {}),
        dict(spec.get("nodeSelector") or {}),
        list(spec.get("tolerations") or []),
    )
    if template:
        patch["spec"]["template"] = template
    if pod_count(job) != count and (job.get("spec") or {}).get("parallelism") is not None:
        patch["spec"]["parallelism"] = count
    return patch if patch["spec"] else None


def is_suspended(job: dict[str, Any]) -> bool:
    """Tell whether the Job is suspended."""
    return bool((job.get("spec") or {}).get("suspend"))


def active_pods(job: dict[str, Any]) -> int:
    """Pods of the Job that run or are still terminating, by the Job's status."""
    status = job.get("status") or {}
    return int(status.get("active") or 0) + int(status.get("terminating") or 0)


def finished(job: dict[str, Any]) -> tuple[bool, bool]:
    """Tell whether the Job finished and, if so, whether it succeeded (Complete vs Failed)."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in {"Complete", "Failed"}:
            return True, c.get("type") == "Complete"
    return False, False


def pods_ready(job: dict[str, Any], count: int) -> bool:
    """Tell whether the admitted ``count`` pods are ready or done (ready + succeeded >= count)."""
    status = job.get("status") or {}
    return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) >= count
