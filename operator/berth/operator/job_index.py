"""The operator's indexes of jobs (every integrated kind) and their Pods.

``World`` feeds job, Pod and Workload-owner events in; each intake returns the job the job
controller must look at again (or None). A child job of an integrated parent (a JobSet's Jobs) is
indexed with its parent, and its pods count as the parent's. Parents chain (a TrainJob's JobSet
has Jobs of its own): a child's news and pods go to the root of its chain, the job that has the
Workload. Read by the job controller
(``jobs``, ``pods_left``, ``workload_for_job``), the webhooks and ``berth explain``'s live source
(``job_of_uid``).
"""

from __future__ import annotations

from collections.abc import Sequence

from berth.api import bodies, job_view, names
from berth.api.bodies import Body
from berth.jobs.framework import protocol


def owner_job_uid(body: Body, composed: Sequence[protocol.Composed] = ()) -> str | None:
    """The uid of the job that controls a Pod, if any.

    Its controller (a Job, a training job), else a ``batch`` Job it names; a member of a
    ``composed`` kind's job (a pod group's) counts for its job.
    """
    for kind in composed:
        if body.get("kind", kind.member_kind) == kind.member_kind:
            key = kind.group_of(body)
            if key is not None:
                return kind.job_uid(key)
    ref = bodies.controller(body)
    if ref is not None and ref.get("uid"):
        return str(ref.get("uid"))
    for ref in bodies.owner_references(body):
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
            return str(ref.get("uid"))
    return None


class JobIndex:
    """Jobs by key and uid, the Workload of each job, and each job's unfinished pods."""

    def __init__(self, composed: Sequence[protocol.Composed] = ()) -> None:
        self.composed = tuple(composed)
        """The composed kinds whose members' pods count for their job (a pod group's)."""
        self.jobs: dict[names.JobKey, Body] = {}
        self.job_of_uid: dict[str, names.JobKey] = {}
        self.workload_of_job: dict[str, names.WorkloadKey] = {}
        """Workload key by the uid of the job that owns it."""
        self.pods_of_job: dict[str, set[str]] = {}
        """Names of the pods that exist and have not finished, by the uid of the job that
        controls them (``pods_left`` adds a parent's children's)."""
        self.parent_of: dict[str, str] = {}
        """The parent's uid by the uid of a child job of an integrated parent. Kept after the
        child is deleted, until its parent is: the garbage collector deletes a child's pods
        after the child (a RayJob's RayCluster), and they still count as the parent's."""
        self.children_of: dict[str, set[str]] = {}
        """The reverse of ``parent_of``: a parent's children, forgotten with it."""

    def take_job(
        self, kind: str, body: Body, *, deleted: bool, parent_uid: str | None = None
    ) -> names.JobKey | None:
        """Index a job (or forget it); return it when it must be reconciled.

        ``parent_uid`` names the integrated job a child Job belongs to: the parent is returned
        instead, since a child's change (its pods stopping, say) is its parent's news.
        """
        view = job_view.JobView(body, kind)
        key, uid = view.key, view.uid
        if deleted:
            self.jobs.pop(key, None)
            self.job_of_uid.pop(uid, None)
            if uid not in self.parent_of:
                # A root is gone: its whole chain is forgotten. A child's links stay until its
                # root goes (its own children's pods still count for the root meanwhile).
                for member in self._family(uid):
                    self.parent_of.pop(member, None)
                    self.children_of.pop(member, None)
            return None if parent_uid is None else self.job_of_uid.get(self.root(parent_uid))
        self.jobs[key] = body
        self.job_of_uid[uid] = key
        if parent_uid is not None:
            self.parent_of[uid] = parent_uid
            self.children_of.setdefault(parent_uid, set()).add(uid)
            return self.job_of_uid.get(self.root(parent_uid))
        return key

    def root(self, uid: str) -> str:
        """The uid at the top of a job's chain of parents (the job's own when it has none)."""
        seen = {uid}
        while uid in self.parent_of:
            uid = self.parent_of[uid]
            if uid in seen:
                break  # owner references that loop (written by hand) end the walk
            seen.add(uid)
        return uid

    def _family(self, uid: str) -> set[str]:
        """A job's uid and its children's, theirs, and so on."""
        out, todo = {uid}, [uid]
        while todo:
            for child in self.children_of.get(todo.pop(), ()):
                if child not in out:
                    out.add(child)
                    todo.append(child)
        return out

    def take_pod(self, body: Body, *, deleted: bool) -> names.JobKey | None:
        """Count a job's pod in or out; return its job (to reconcile), if the job is known."""
        job_uid = owner_job_uid(body, self.composed)
        if job_uid is None:
            return None
        name = bodies.name(body)
        status = body.get("status")
        phase = status.get("phase") if isinstance(status, dict) else None
        pods = self.pods_of_job.setdefault(job_uid, set())
        if deleted or phase in {"Succeeded", "Failed"}:
            pods.discard(name)
        else:
            pods.add(name)
        if not pods:
            self.pods_of_job.pop(job_uid, None)
        return self.job_of_uid.get(self.root(job_uid))

    def take_workload(
        self, job_uid: str, key: names.WorkloadKey, *, deleted: bool
    ) -> names.JobKey | None:
        """Link (or unlink) a job's Workload; return the job (to reconcile), if known."""
        if deleted:
            self.workload_of_job.pop(job_uid, None)
        else:
            self.workload_of_job[job_uid] = key
        return self.job_of_uid.get(job_uid)

    def pods_left(self, job_uid: str) -> int:
        """Pods of a job and its children that exist and have not finished."""
        return sum(len(self.pods_of_job.get(uid, ())) for uid in self._family(job_uid))

    def workload_for_job(self, job: Body) -> names.WorkloadKey | None:
        """The Workload of a job, if it exists."""
        return self.workload_of_job.get(bodies.uid(job))

    def job_of(self, uid: str) -> Body | None:
        """The job of this uid, as last seen."""
        key = self.job_of_uid.get(uid)
        return None if key is None else self.jobs.get(key)

    def without_workload(self) -> list[names.JobKey]:
        """Jobs that have no Workload (yet), in key order."""
        return sorted(k for k, job in self.jobs.items() if self.workload_for_job(job) is None)
