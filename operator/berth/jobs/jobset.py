"""The pure half of the JobSet integration (``x-k8s.io/v1alpha2`` JobSet).

After Kueue's ``pkg/controller/jobs/jobset/jobset_controller.go``:

- **Pod sets**: one per replicated job, in the JobSet's order, named after it; its template is
  the replicated job's pod template and its count ``replicas`` x the pods each child Job runs
  at once (``parallelism``, bounded by ``completions``). No ``minCount``: Kueue admits a JobSet
  whole only, and so does Berth.
- **Start**: ``spec.suspend`` false, and each replicated job's pod template gets its pod set's
  flavor node labels and tolerations (``podsets.placed``). JobSet's own webhook lets exactly
  these fields (labels, annotations, node selector, tolerations, scheduling gates) change while
  the JobSet is suspended; the JobSet controller carries them onto child Jobs it already made.
- **Stop**: ``spec.suspend`` true (the JobSet controller suspends its child Jobs); **restore**:
  each template's labels, node selector and tolerations as the Workload recorded them.
- **Priority class**: the first replicated job whose pod template names one.
- **Status**: finished on a ``Completed`` or ``Failed`` condition; pods ready when every child
  Job is ready or succeeded (``status.replicatedJobsStatus``), as Kueue's ``PodsReady``.

``replicatedJobs`` is a list, so a JSON merge patch replaces it whole: the start and restore
patches carry every replicated job as last read, changed only in those fields. Used through
``jobs.jobset.JobSetJob`` by the simulator and the operator.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from berth.api import bodies, errors, workload
from berth.api.bodies import Body
from berth.jobs.framework import jobspec, labelled, podsets, workload_body
from berth.jobs.framework.protocol import PodSetOriginal, PodSetRun

KIND = "JobSet"
GROUP = "jobset.x-k8s.io"
API_VERSION = f"{GROUP}/v1alpha2"
PLURAL = "jobsets"
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
"""Put by the JobSet controller on every child Job and pod: the JobSet's name."""


def _replicated(js: Body) -> list[Body]:
    rjobs = (js.get("spec") or {}).get("replicatedJobs")
    return [r if isinstance(r, dict) else {} for r in rjobs] if isinstance(rjobs, list) else []


def _mapping(value: Any) -> Body:  # noqa: ANN401 - a JSON value
    return value if isinstance(value, dict) else {}


def _job_spec(rjob: Body) -> Body:
    return _mapping(_mapping(rjob.get("template")).get("spec"))


def replicas(rjob: Body) -> int:
    """A replicated job's ``replicas`` (default 1)."""
    value = rjob.get("replicas")
    return 1 if value is None else int(value)


def pod_set_count(rjob: Body) -> int:
    """Pods a replicated job runs at once: replicas x each child Job's pods at once."""
    return replicas(rjob) * jobspec.pod_count(_job_spec(rjob))


def count_field(js: Body, pod_set: str) -> str:
    """The replicated job of that name (its replicas and its Job's parallelism), for messages."""
    for i, rjob in enumerate(_replicated(js)):
        if str(rjob.get("name")) == pod_set:
            return f"spec.replicatedJobs[{i}]"
    return "spec.replicatedJobs"


def pod_count(js: Body) -> int:
    """Pods the JobSet runs at once, over all its replicated jobs."""
    return sum(pod_set_count(r) for r in _replicated(js))


def priority_class(js: Body) -> str | None:
    """The first replicated job's pod template that names a ``priorityClassName``, if any."""
    for rjob in _replicated(js):
        name = ((_job_spec(rjob).get("template") or {}).get("spec") or {}).get("priorityClassName")
        if name:
            return str(name)
    return None


def child_as_made(js: Body, child: Body) -> Body | str:
    """The child Job as the JobSet controller makes it under the child's name, or why none is.

    The controller names each child ``<jobset>-<replicatedJob>-<index>``, index below the
    replicated job's ``replicas``, and gives it the replicated job's Job spec.
    """
    meta = bodies.meta(child)
    name = str(meta.get("name") or "")
    js_meta = bodies.meta(js)
    js_name = str(js_meta.get("name") or "")
    if str(child.get("kind") or "Job") != "Job":
        return f"kind: the JobSet controller makes Jobs only, not a {child.get('kind')}"
    made = []
    for rjob in _replicated(js):
        prefix = f"{js_name}-{rjob.get('name')}-"
        count = replicas(rjob)
        if count:
            made.append(f"{prefix}0" + (f" to {prefix}{count - 1}" if count > 1 else ""))
        index = name.removeprefix(prefix)
        if name.startswith(prefix) and index.isdigit() and int(index) < replicas(rjob):
            return {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": meta,
                "spec": _job_spec(rjob),
            }
    return (
        f"metadata.name: JobSet {js_meta.get('namespace')}/{js_name} makes the Jobs "
        f"{', '.join(made) or '(none)'}; {name} is none of them"
    )


def problems(js: Body) -> list[errors.FieldError]:
    """What keeps a JobSet's replicated jobs from making pod sets (paths from the JobSet)."""
    rjobs = (js.get("spec") or {}).get("replicatedJobs")
    if not isinstance(rjobs, list) or not rjobs:
        return [errors.FieldError("spec.replicatedJobs", "required; list at least one")]
    out: list[errors.FieldError] = []
    for i, rjob in enumerate(_replicated(js)):
        path = f"spec.replicatedJobs[{i}]"
        if not rjob.get("name"):
            out.append(errors.FieldError(f"{path}.name", "required"))
        value = rjob.get("replicas")
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            out.append(errors.FieldError(f"{path}.replicas", "must be a non-negative integer"))
        out += [
            errors.FieldError(f"{path}.template.{p.path}", p.message)
            for p in jobspec.spec_problems(_job_spec(rjob))
        ]
    return out


def to_workload(
    js: Body, *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """Build the Workload of a JobSet, or return the field errors that prevent it."""
    found = problems(js)
    if found:
        return None, found
    pod_sets = [
        {
            "name": str(rjob["name"]),
            "count": pod_set_count(rjob),
            "template": _job_spec(rjob)["template"],
        }
        for rjob in _replicated(js)
    ]
    return workload_body.build_workload(
        js,
        uid=uid,
        pod_sets=pod_sets,
        honor_kueue=honor_kueue,
        role=_role,
        kind=KIND,
        group=GROUP,
    )


def _role(index: int) -> tuple[str, str]:
    # Pod set i is replicated job i; its template is that job's pod template.
    role = f"spec.replicatedJobs[{index}]"
    return role, f"{role}.template.spec.template"


def _rewritten(js: Body, templates: dict[str, Body]) -> list[Body] | None:
    """The replicated jobs with these pod templates by name (None when nothing changes)."""
    out = []
    changed = False
    for rjob in _replicated(js):
        current = _job_spec(rjob).get("template") or {}
        wanted = templates.get(str(rjob.get("name")), current)
        changed = changed or wanted != current
        new = copy.deepcopy(rjob)
        new.setdefault("template", {}).setdefault("spec", {})["template"] = wanted
        out.append(new)
    return out if changed else None


def start_patch(
    js: Body, originals: dict[str, Body], placements: dict[str, list[podsets.FlavorPlacement]]
) -> Body:
    """The merge patch that starts a JobSet: each pod set on its flavors, unsuspended.

    ``originals`` are the pod templates the Workload recorded, by pod set (replicated job) name;
    ``placements`` each pod set's flavors.
    """
    templates = {}
    for rjob in _replicated(js):
        name = str(rjob.get("name"))
        current: Body = _job_spec(rjob).get("template") or {}
        original = originals.get(name) or current
        labels, selector, tolerations = podsets.placed(
            original, pod_set=name, flavors=placements.get(name, [])
        )
        templates[name] = podsets.with_fields(current, labels, selector, tolerations)
    patch: Body = {"spec": {"suspend": False}}
    rjobs = _rewritten(js, templates)
    if rjobs is not None:
        patch["spec"]["replicatedJobs"] = rjobs
    return patch


def restore_patch(js: Body, originals: dict[str, Body]) -> Body | None:
    """The merge patch giving a stopped JobSet its recorded templates back (None if equal)."""
    templates = {}
    for rjob in _replicated(js):
        name = str(rjob.get("name"))
        current: Body = _job_spec(rjob).get("template") or {}
        original = originals.get(name) or current
        spec = original.get("spec") or {}
        templates[name] = podsets.with_fields(
            current,
            bodies.labels_of(original),
            dict(spec.get("nodeSelector") or {}),
            list(spec.get("tolerations") or []),
        )
    rjobs = _rewritten(js, templates)
    return None if rjobs is None else {"spec": {"replicatedJobs": rjobs}}


def _statuses(js: Body) -> list[Body]:
    found = (js.get("status") or {}).get("replicatedJobsStatus")
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def finished(js: Body) -> tuple[bool, bool]:
    """Tell whether the JobSet finished and, if so, whether it succeeded."""
    for c in (js.get("status") or {}).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in {"Completed", "Failed"}:
            return True, c.get("type") == "Completed"
    return False, False


def pods_ready(js: Body) -> bool:
    """Every child Job is ready or succeeded (their sum equals the replicas of all)."""
    wanted = sum(replicas(r) for r in _replicated(js))
    ready = sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in _statuses(js))
    return ready >= wanted


def active_jobs(js: Body) -> int:
    """Child Jobs that still have active pods, by the JobSet's status."""
    return sum(int(s.get("active") or 0) for s in _statuses(js))


@dataclasses.dataclass(frozen=True, slots=True)
class JobSetJob(labelled.Labelled):
    """The JobSet integration: one pod set per replicated job (``jobs.jobset``)."""

    @property
    def kind(self) -> str:
        """The job's kind."""
        return KIND

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return API_VERSION

    @property
    def plural(self) -> str:
        """``jobsets``."""
        return PLURAL

    @property
    def size_field(self) -> str:
        """The replicated jobs (their replicas and each child Job's parallelism)."""
        return "spec.replicatedJobs"

    def count_field(self, job: Body, pod_set: str) -> str:
        """The replicated job of that name (its replicas and its Job's parallelism)."""
        return count_field(job, pod_set)

    def pod_selector(self, job: Body) -> str:
        """The JobSet controller's label on every child Job and pod: the JobSet's name."""
        return f"{NAME_LABEL}={(job.get('metadata') or {}).get('name')}"

    def child_as_made(self, job: Body, child: Body) -> Body | str:
        """The child Job the JobSet controller makes under the child's name, or why none."""
        return child_as_made(job, child)

    def pod_count(self, job: Body) -> int:
        """Pods over all replicated jobs."""
        return pod_count(job)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first replicated job's pod template that names a ``priorityClassName``."""
        return priority_class(job)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The JobSet's Workload, or the field errors that prevent it."""
        return to_workload(job, uid=uid, honor_kueue=self.honor_kueue_labels)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Unsuspend, each replicated job's template on its pod set's flavors (whole only)."""
        return start_patch(
            job,
            {o.name: o.template for o in originals},
            {r.name: list(r.placements) for r in runs},
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every JobSet
        """Suspend the JobSet (its controller suspends the child Jobs)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:
        """The recorded templates back."""
        if not originals:
            return None
        return restore_patch(job, {o.name: o.template for o in originals})

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return bool((job.get("spec") or {}).get("suspend"))

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Completed`` or ``Failed`` condition."""
        return finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - child Jobs report readiness
        """Every child Job ready or succeeded."""
        return pods_ready(job)

    def active_pods(self, job: Body) -> int:
        """Child Jobs with active pods (the JobSet's status counts Jobs, not pods)."""
        return active_jobs(job)
