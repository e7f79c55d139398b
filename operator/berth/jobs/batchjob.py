"""The ``batch/v1`` Job integration: a Job becomes a Workload, and ``BatchJob`` reads and runs it.

One pod set ``main`` whose count is ``parallelism`` (bounded by ``completions``), ``minCount`` from
the ``berth.dev/job-min-parallelism`` annotation (partial admission), the pod template as is, the
queue from the ``berth.dev/queue-name`` label and the priority class from
``berth.dev/priority-class``.
The Workload is named ``job-<job name>-<5 hex chars>`` like Kueue's (``framework.workload_body``).
Used by the simulator and by the operator's job handlers, so both build identical Workloads.

Here too: the merge patch that starts a Job for an admission (the flavors' node labels and
tolerations injected, ``framework.podsets``), the patch that restores the original template
after it was stopped, and reading a Job's status (finished, pods ready, pods still active). The
operator's job controller applies these patches.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from berth.api import bodies, errors, workload
from berth.api.bodies import Body
from berth.api.labels import KUEUE_MIN_PARALLELISM, MIN_PARALLELISM
from berth.jobs.framework import jobspec, labelled, podsets, workload_body
from berth.jobs.framework.protocol import PodSetOriginal, PodSetRun


def pod_count(job: dict[str, Any]) -> int:
    """Pods the Job runs at once: ``parallelism`` (default 1), bounded by ``completions``."""
    return jobspec.pod_count(job.get("spec") or {})


def to_workload(
    job: dict[str, Any], *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """Build the Workload of a Job, or return the field errors that prevent it."""
    meta = bodies.meta(job)
    spec = job.get("spec") or {}
    problems = jobspec.spec_problems(spec)
    if problems:
        return None, problems
    count = pod_count(job)
    min_count, problems = _min_count(meta.get("annotations") or {}, count, honor_kueue=honor_kueue)
    if problems:
        return None, problems
    pod_set: dict[str, Any] = {"name": "main", "count": count, "template": spec["template"]}
    if min_count is not None:
        pod_set["minCount"] = min_count
    return workload_body.build_workload(
        job,
        uid=uid,
        pod_sets=[pod_set],
        honor_kueue=honor_kueue,
        role=lambda _: (None, "spec.template"),
        runtime_limit=workload_body.deadline(spec),
    )


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


def _template(job: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = (job.get("spec") or {}).get("template") or {}
    return found


def start_patch(
    job: dict[str, Any],
    original: dict[str, Any],
    *,
    pod_set: str,
    count: int,
    flavors: list[podsets.FlavorPlacement],
) -> dict[str, Any]:
    """Return the merge patch that starts ``job`` for its admission.

    ``original`` is the pod template the Workload recorded; the started template is that one
    with ``nodeSelector`` += the node labels of every flavor assigned to the pod set,
    ``tolerations`` += those flavors' tolerations, the ``berth.dev/podset`` label, and
    ``parallelism`` set to the admitted count when it was reduced (partial admission).
    """
    labels, selector, tolerations = podsets.placed(original, pod_set=pod_set, flavors=flavors)
    patch: dict[str, Any] = {"spec": {"suspend": False}}
    template = podsets.template_patch(_template(job), labels, selector, tolerations)
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
    meta = bodies.meta(original)
    spec = original.get("spec") or {}
    patch: dict[str, Any] = {"spec": {}}
    template = podsets.template_patch(
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


@dataclasses.dataclass(frozen=True, slots=True)
class BatchJob(labelled.Labelled):
    """The ``batch/v1`` Job integration: one pod set ``main`` (``jobs.batchjob``)."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return "Job"

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return "batch/v1"

    @property
    def plural(self) -> str:
        """``jobs``."""
        return "jobs"

    @property
    def size_field(self) -> str:
        """``spec.parallelism``."""
        return "spec.parallelism"

    def count_field(self, job: Body, pod_set: str) -> str:  # noqa: ARG002 - one pod set
        """``spec.parallelism``."""
        return "spec.parallelism"

    def pod_selector(self, job: Body) -> str:
        """The Job controller's label on its pods: the Job's uid."""
        return f"batch.kubernetes.io/controller-uid={(job.get('metadata') or {}).get('uid')}"

    def before_restore(self, job: Body) -> Body | None:
        """A Job that started keeps an immutable template until its ``startTime`` is cleared."""
        if (job.get("status") or {}).get("startTime"):
            return {"status": {"startTime": None}}
        return None

    def pod_count(self, job: Body) -> int:
        """``parallelism`` bounded by ``completions``."""
        return pod_count(job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The pod template's ``priorityClassName``."""
        template = (job.get("spec") or {}).get("template") or {}
        return (template.get("spec") or {}).get("priorityClassName") or None

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The Job's Workload, or the field errors that prevent it."""
        return to_workload(job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Unsuspend with the flavors' node labels and tolerations, at the admitted count."""
        original = originals[0] if originals else PodSetOriginal("main", {}, self.pod_count(job))
        run = next((r for r in runs if r.name == original.name), None)
        if run is None:
            run = runs[0] if runs else PodSetRun(original.name, self.pod_count(job))
        return start_patch(
            job,
            original.template,
            pod_set=original.name,
            count=run.count,
            flavors=list(run.placements),
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every Job
        """Suspend the Job (its controller then deletes the pods)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded template and parallelism back."""
        if not originals:
            return None
        return restore_patch(job, originals[0].template, count=originals[0].count)

    def hold_patch(self, job: Body, count: int) -> Body:  # noqa: ARG002 - any Job is held alike
        """``spec.parallelism`` back to the admitted count."""
        return {"spec": {"parallelism": count}}

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return is_suspended(job)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Complete`` or ``Failed`` condition."""
        return finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:
        """Ready + succeeded >= count."""
        return pods_ready(job, count)

    def active_pods(self, job: Body) -> int:
        """Active + terminating."""
        return active_pods(job)
