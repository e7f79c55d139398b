"""The operator's indexes of Jobs and their Pods: by key, by uid, and a Job's Workload and pods.

``World`` feeds Job, Pod and Workload-owner events in; each intake returns the Job the job
controller must look at again (or None). Read by the job controller (``jobs``, ``pods_left``,
``workload_for_job``), the webhooks and ``berth explain``'s live source (``job_of_uid``).
"""

from __future__ import annotations

from typing import Any

from berth.api import names

Body = dict[str, Any]


def owner_job_uid(body: Body) -> str | None:
    """The uid of the ``batch`` Job that controls an object (a Workload or a Pod), if any."""
    for ref in (body.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
            return str(ref.get("uid"))
    return None


def _meta(body: Body) -> dict[str, Any]:
    meta = body.get("metadata")
    return meta if isinstance(meta, dict) else {}


class JobIndex:
    """Jobs by key and uid, the Workload of each Job, and each Job's unfinished pods."""

    def __init__(self) -> None:
        self.jobs: dict[names.WorkloadKey, Body] = {}
        self.job_of_uid: dict[str, names.WorkloadKey] = {}
        self.workload_of_job: dict[str, names.WorkloadKey] = {}
        """Workload key by the uid of the Job that owns it."""
        self.pods_of_job: dict[str, set[str]] = {}
        """Names of the pods that exist and have not finished, by Job uid."""

    def take_job(self, body: Body, *, deleted: bool) -> names.WorkloadKey | None:
        """Index a Job (or forget it); return it when it must be reconciled."""
        meta = _meta(body)
        key = names.WorkloadKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        uid = str(meta.get("uid") or "")
        if deleted:
            self.jobs.pop(key, None)
            self.job_of_uid.pop(uid, None)
            return None
        self.jobs[key] = body
        self.job_of_uid[uid] = key
        return key

    def take_pod(self, body: Body, *, deleted: bool) -> names.WorkloadKey | None:
        """Count a Job's pod in or out; return its Job (to reconcile), if the Job is known."""
        job_uid = owner_job_uid(body)
        if job_uid is None:
            return None
        name = str(_meta(body).get("name") or "")
        status = body.get("status")
        phase = status.get("phase") if isinstance(status, dict) else None
        pods = self.pods_of_job.setdefault(job_uid, set())
        if deleted or phase in {"Succeeded", "Failed"}:
            pods.discard(name)
        else:
            pods.add(name)
        if not pods:
            self.pods_of_job.pop(job_uid, None)
        return self.job_of_uid.get(job_uid)

    def take_workload(
        self, job_uid: str, key: names.WorkloadKey, *, deleted: bool
    ) -> names.WorkloadKey | None:
        """Link (or unlink) a Job's Workload; return the Job (to reconcile), if known."""
        if deleted:
            self.workload_of_job.pop(job_uid, None)
        else:
            self.workload_of_job[job_uid] = key
        return self.job_of_uid.get(job_uid)

    def pods_left(self, job_uid: str) -> int:
        """Pods of a Job that exist and have not finished."""
        return len(self.pods_of_job.get(job_uid, ()))

    def workload_for_job(self, job: Body) -> names.WorkloadKey | None:
        """The Workload of a Job, if it exists."""
        return self.workload_of_job.get(str(_meta(job).get("uid") or ""))

    def without_workload(self) -> list[names.WorkloadKey]:
        """Jobs that have no Workload (yet), in key order."""
        return sorted(k for k, job in self.jobs.items() if self.workload_for_job(job) is None)
