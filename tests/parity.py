"""The operator's tasks driven through a scenario on a fake clock, against the API fake.

``run_operator`` plays a scenario (the documents ``berth simulate`` reads) into ``FakeKube`` at each
document's time. It hands every watch event to ``World``, and runs the leader's tasks at each
instant until nothing changes: the scheduler loop (``Scheduler.step``), the job controller
(``JobController.reconcile`` over its mailbox) and the lifecycle task (``Lifecycle.pass_once``,
first at each round, as its writes let workloads queue again).
Those are the tasks the operator runs, unchanged. Where the simulator's timers stand for the pods,
the driver plays kube-controller-manager, the JobSet controller, the training-operator, KubeRay,
the Kubeflow Trainer and the kubelet for jobs:
- an unsuspended Job has ``status.active`` pods at once, ready after the document's
  ``ready-after``; an unsuspended JobSet has every child Job active, then ready, in
  ``status.replicatedJobsStatus``; an unsuspended training job has every replica active, then
  ``Running``; an unsuspended TrainJob reports its JobSet's child Jobs in ``status.jobsStatus``;
  an unsuspended RayJob is ``Initializing``, then ``Running`` on a ``ready``
  cluster (a RayCluster: its head, then ``ready``);
- it completes after its ``duration`` (a JobSet with its ``Completed`` condition), less the
  work its checkpoints saved: with ``checkpoint-every`` the driver plays the job's own code and
  patches its ``berth.dev/checkpointed-at`` at each (on a Workload document, on the Workload);
- a suspended job's pods are gone at once;
- a pod group's member is made as the Pod webhook leaves it (gated); once the operator ungates
  it, it is bound and runs on its document's timers (ready, then Succeeded); one the operator
  deletes is made again at once, as the simulator assumes whoever made the pods does.

For a Workload document (no job), the driver plays the job's part as Kueue's own tests do
(``FinishEvictionForWorkloads``): its pods are ready after ``ready-after``, it finishes after its
``duration``, and once evicted it gives its quota back at once, with the status the job
controller writes (``jobcontroller.release_status``).

Then the fake clock moves to the next due time: a document, a Job's end or readiness, a
backoff's end, a pods-ready timeout, a backoff the lifecycle task writes, the end of a
preemption protection that keeps a head pending, or a sample of the LocalQueues' usage.

Two settings differ from the real operator, both because the fake has no lag to cover: the job
controller's settle time after suspending a Job (``_STOP_SETTLE``) is zero, and the advisory
``QuotaReserved=False`` conditions (which the simulator does not have either) are not written.

Both runs are read as ``Decision``s: each admission (with its ClusterQueue), preemption and
eviction (with its reason), at its time, by job or Workload name (``simulator_decisions`` for the
simulator's events; the driver reads the operator's Workload writes from the watch feed). Used by
``tests/test_parity.py``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime as dt
import enum
import heapq
import itertools
from typing import Any

import fakeapi
from berth.adapters.kube import client, errors, workloads
from berth.api import conditions, configuration, names, workload_view
from berth.api import workload as api_workload
from berth.jobs import jobset, kubeflow, ray, trainjob
from berth.jobs.framework import merge
from berth.jobs.pod import group as podgroup
from berth.jobs.pod import integration as pod_integration
from berth.jobs.pod import rules as pod_rules
from berth.operator import jobcontroller, lifecycle, scheduler, world
from berth.sim import documents

BASE = 1_800_000_000.0
"""The fake clock's epoch second for the scenario's time 0 (a whole second, as timestamps are)."""
_MAX_ROUNDS = 10_000
_COND = conditions.WorkloadCondition
_UNWATCHED = frozenset({"Event", "Lease"})
"""Kinds the operator writes but does not watch."""


@dataclasses.dataclass(frozen=True, order=True, slots=True)
class Decision:
    """One decision as both drivers report it."""

    t: float
    event: str
    """Admitted, Preempted or Evicted."""
    who: str
    """The Job (``namespace/name``) or, for a Workload document, the Workload."""
    detail: str
    """The ClusterQueue of an admission, the reason of an eviction, empty for a preemption."""


def simulator_decisions(lines: list[dict[str, Any]]) -> list[Decision]:
    """The simulator's events as decisions."""
    out = []
    for line in lines:
        event = line.get("event")
        if event not in {"Admitted", "Preempted", "Evicted"}:
            continue
        detail = str(line.get("clusterQueue", "")) if event == "Admitted" else ""
        if event == "Evicted":
            detail = str(line.get("reason", ""))
        out.append(
            Decision(float(line["t"]), str(event), str(line.get("job") or line["workload"]), detail)
        )
    return out


class _Recorder:
    """Kubernetes Events are not decisions: the scheduler loop's recorder drops them here."""

    def record(
        self,
        involved: dict[str, Any],
        reason: str,
        message: str,
        now: float,
        *,
        warning: bool = False,
    ) -> None:
        """Drop one Event."""
        del involved, reason, message, now, warning


class _Do(enum.Enum):
    """What the cluster does at a due time."""

    APPLY = "apply a document"
    DELETE = "delete a document's object"
    JOB_START = "a Job's pods start"
    JOB_READY = "a Job's pods are ready"
    JOB_FINISH = "a Job completes"
    JOB_STOP = "a suspended Job's pods are gone"
    WORKLOAD_READY = "a job-less Workload's pods are ready"
    WORKLOAD_FINISH = "a job-less Workload finishes"
    WORKLOAD_RELEASE = "an evicted job-less Workload gives its quota back"
    MEMBER_START = "a pod group's member is bound and runs"
    MEMBER_READY = "a member is ready"
    MEMBER_FINISH = "a member succeeds"
    MEMBER_REPLACE = "a deleted member is made again by whoever made it"
    CHECKPOINT = "a running job (or job-less Workload) saves a checkpoint"


_MEMBER_ACTIONS = frozenset(
    {_Do.MEMBER_START, _Do.MEMBER_READY, _Do.MEMBER_FINISH, _Do.MEMBER_REPLACE}
)


_WORKLOAD_ACTIONS = frozenset({_Do.WORKLOAD_READY, _Do.WORKLOAD_FINISH, _Do.WORKLOAD_RELEASE})


@dataclasses.dataclass(order=True)
class _Due:
    at: float
    seq: int
    action: _Do = dataclasses.field(compare=False)
    doc: documents.Document | None = dataclasses.field(default=None, compare=False)
    job: names.WorkloadKey | None = dataclasses.field(default=None, compare=False)
    token: int = dataclasses.field(default=0, compare=False)


class Driver:
    """One scenario through the operator's tasks."""

    def __init__(self, docs: list[documents.Document]) -> None:
        self.config = next(
            (d.obj for d in docs if isinstance(d.obj, configuration.Configuration)),
            configuration.Configuration(),
        )
        self.now = BASE
        self.fake = fakeapi.FakeKube(lambda: self.now)
        kube = self.fake
        self.world = world.World(self.config, lambda: self.now)
        self.scheduler = scheduler.Scheduler(self.world, kube, _Recorder())
        self.jobs = jobcontroller.JobController(self.world, kube)
        self.lifecycle = lifecycle.Lifecycle(self.world, kube)
        self.fake.listen(self._watch)
        self.docs = [d for d in docs if not isinstance(d.obj, configuration.Configuration)]
        self.by_job: dict[names.WorkloadKey, documents.Document] = {}
        """Job and Workload documents by key: their duration and ready-after."""
        self.members: dict[names.WorkloadKey, documents.Document] = {}
        """Pod documents by the pod's key, while the scenario keeps them."""
        self._due: list[_Due] = []
        self._seq = itertools.count()
        self._tokens: dict[names.WorkloadKey, int] = {}
        self._running: set[names.WorkloadKey] = set()
        self._saved: dict[names.WorkloadKey, float] = {}
        """The work each job's checkpoints saved, in seconds of run."""
        self._retry: set[names.JobKey] = set()
        """Jobs whose reconcile failed at this instant: marked again at the next."""
        self.decisions: list[Decision] = []
        self._seen: dict[names.WorkloadKey, workload_view.WorkloadView] = {}
        for doc in self.docs:
            self._at(doc.at, _Do.APPLY, doc=doc)
            if doc.delete_at is not None:
                self._at(doc.delete_at, _Do.DELETE, doc=doc)

    # Time ---------------------------------------------------------------------------------------

    def _at(self, t: float, action: _Do, **fields: Any) -> None:
        heapq.heappush(self._due, _Due(t, next(self._seq), action, **fields))

    def _t(self) -> float:
        return round(self.now - BASE, 6)

    def _next_wakeup(self) -> float | None:
        """The earliest time after now at which a task has something to do by itself."""
        w = self.world
        expiries = (w.queues.next_backoff_expiry(self.now), w.state.next_recheck())
        times = [t for t in expiries if t is not None]
        wfpr = self.config.wait_for_pods_ready
        for key in w.cache.admitted:
            view = w.workloads.get(key)
            if view is None:
                continue
            if (
                wfpr is not None
                and view.is_true(_COND.ADMITTED)
                and not view.is_true(_COND.PODS_READY)
            ):
                since = max(
                    view.transition_time(_COND.ADMITTED), view.transition_time(_COND.PODS_READY)
                )
                times.append(since + wfpr.timeout)
        for key in w.requeue_holds:
            view = w.workloads.get(key)
            if view is not None and view.requeue_at:
                times.append(view.requeue_at)
        if self._retry:
            times.append(self.now + jobcontroller._RETRY)
        later = [t for t in times if t > self.now]
        sample = w.state.usage.next_sample()
        if sample is not None and (later or self._due):
            # As the simulator: a sample only while anything else is still to happen.
            later.append(max(sample, self.now + 1e-6) if sample <= self.now else sample)
        return min(later) if later else None

    async def run(self, until: float | None = None) -> list[Decision]:
        """Play the scenario; return the operator's decisions."""
        while True:
            due_at = self._due[0].at + BASE if self._due else None
            wake = self._next_wakeup()
            candidates = [t for t in (due_at, wake) if t is not None]
            if not candidates:
                break
            at = min(candidates)
            if until is not None and at - BASE > until:
                break
            self.now = at
            for key in sorted(self._retry):
                self.world.mark_job(key)
            self._retry.clear()
            while self._due and self._due[0].at + BASE <= self.now:
                await self._fire(heapq.heappop(self._due))
            await self._settle()
        return self.decisions

    # The cluster's part -------------------------------------------------------------------------

    async def _fire(self, due: _Due) -> None:
        if due.action == _Do.APPLY and due.doc is not None:
            await self._create(due.doc)
        elif due.action == _Do.DELETE and due.doc is not None:
            await self._delete(due.doc)
        elif due.job is not None and self._tokens.get(due.job) == due.token:
            if due.action == _Do.CHECKPOINT:
                await self._checkpoint(due.job, due.token)
            elif due.action in _MEMBER_ACTIONS:
                await self._member_status(due.job, due.action)
            elif due.action in _WORKLOAD_ACTIONS:
                await self._workload_status(due.job, due.action)
            else:
                await self._job_status(due.job, due.action)

    async def _create(self, doc: documents.Document) -> None:
        body = dict(doc.raw)
        meta = dict(body.get("metadata") or {})
        if doc.kind != documents.NAMESPACE and (doc.obj is None or doc.obj.NAMESPACED):
            meta.setdefault("namespace", doc.namespace)
        body["metadata"] = meta
        if doc.kind in documents.COMPOSED:
            self.members[names.WorkloadKey(doc.namespace, doc.name)] = doc
            body = self._made(body)
        elif doc.kind in documents.JOBS or doc.kind[1] == "Workload":
            self.by_job[names.WorkloadKey(doc.namespace, doc.name)] = doc
        if doc.kind in documents.JOBS:
            ns = doc.namespace
            if self.fake.store.get(("Namespace", "", ns)) is None:
                self.fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            if doc.kind not in documents.COMPOSED and self.world.managed(body):
                # the mutating webhook (webhooks.mutate_job)
                body["spec"] = merge.suspended_spec(self.world.integration(body), body)
        key = (doc.kind[1], meta.get("namespace", "") or "", doc.name)
        stored = self.fake.store.get(key)
        if stored is not None:
            # A document applied again replaces the object, as kubectl replace does.
            body["metadata"] = {**meta, "resourceVersion": stored["metadata"]["resourceVersion"]}
            await self.fake.request("PUT", fakeapi.path(doc.kind[1], key[1], doc.name), body=body)
            return
        self.fake.put(body)

    def _made(self, pod: dict[str, Any]) -> dict[str, Any]:
        """A new Pod as the Pod webhook leaves it (``webhooks.mutate_pod``): a member, gated."""
        integ = self.world.integration(pod)
        if not isinstance(integ, pod_integration.PodGroupJob) or podgroup.controlled(pod):
            return pod
        if not self.world.managed(pod):
            return pod
        out = copy.deepcopy(pod)
        for op in pod_rules.webhook_patch(out, honor_kueue=self.config.honor_kueue_labels):
            # Every operation adds, at a path of map keys or at a list's end ("-").
            *parents, last = [
                p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
            ]
            holder: dict[str, Any] | list[Any] = out
            for part in parents:
                assert isinstance(holder, dict), op
                holder = holder[part]
            if last == "-":
                assert isinstance(holder, list), op
                holder.append(op["value"])
            else:
                assert isinstance(holder, dict), op
                holder[last] = op["value"]
        return out

    async def _delete(self, doc: documents.Document) -> None:
        if doc.kind in documents.COMPOSED:
            self.members.pop(names.WorkloadKey(doc.namespace, doc.name), None)  # not made again
        meta = doc.raw.get("metadata") or {}
        ns = doc.namespace if doc.kind != documents.NAMESPACE else ""
        if self.fake.store.get((doc.kind[1], ns or "", doc.name)) is None:
            return
        await self.fake.request(
            "DELETE", fakeapi.path(doc.kind[1], ns or str(meta.get("namespace") or ""), doc.name)
        )

    def _watch(self, event: fakeapi.WatchEvent) -> None:
        if event.kind in _UNWATCHED:
            return
        if event.type == "DELETED":
            self.world.remove(event.kind, event.body)
        else:
            self.world.apply(event.kind, event.body)
        if event.kind == "Workload":
            self._note(event.body, deleted=event.type == "DELETED")
        elif event.kind == "Pod":
            self._member(event.body, deleted=event.type == "DELETED")
        elif event.kind in self.world.integrations and event.type != "DELETED":
            self._kubelet(event.body)

    def _member(self, pod: dict[str, Any], *, deleted: bool) -> None:
        """Play the scheduler and kubelet for a pod group's member, and its maker.

        A member the operator ungated runs on its document's timers; one it deleted is made
        again at once, as the simulator assumes whoever made it does.
        """
        meta = pod.get("metadata") or {}
        key = names.WorkloadKey(str(meta.get("namespace")), str(meta.get("name")))
        doc = self.members.get(key)
        if doc is None or not podgroup.is_member(pod):
            return
        if deleted:
            token = self._tokens[key] = self._tokens.get(key, 0) + 1
            self._at(self._t(), _Do.MEMBER_REPLACE, job=key, token=token)
            return
        spec = pod.get("spec") or {}
        if podgroup.is_gated(pod) or spec.get("nodeName") or meta.get("deletionTimestamp"):
            return
        token = self._tokens[key] = self._tokens.get(key, 0) + 1
        self._at(self._t(), _Do.MEMBER_START, job=key, token=token)
        if doc.ready_after is not None:
            self._at(self._t() + doc.ready_after, _Do.MEMBER_READY, job=key, token=token)
        if doc.duration is not None:
            self._at(self._t() + doc.duration, _Do.MEMBER_FINISH, job=key, token=token)

    async def _member_status(self, key: names.WorkloadKey, action: _Do) -> None:
        doc = self.members.get(key)
        if action == _Do.MEMBER_REPLACE:
            if doc is not None and self.fake.store.get(("Pod", key.namespace, key.name)) is None:
                await self._create(doc)
            return
        if self.fake.store.get(("Pod", key.namespace, key.name)) is None:
            return
        pod_path = fakeapi.path("Pod", key.namespace, key.name)
        if action == _Do.MEMBER_START:
            await self.fake.request(
                "PATCH",
                pod_path,
                body={"spec": {"nodeName": "node-1"}},
                content_type=client.MERGE_PATCH,
            )
            status: dict[str, Any] = {"phase": "Running"}
        elif action == _Do.MEMBER_READY:
            status = {"conditions": [{"type": "Ready", "status": "True"}]}
        else:
            status = {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}
        await self.fake.request(
            "PATCH", pod_path + "/status", body={"status": status}, content_type=client.MERGE_PATCH
        )

    def _run_standalone(self, key: names.WorkloadKey) -> None:
        """A Workload without a job, admitted: its pods are ready and it ends on its timers."""
        token = self._tokens[key] = self._tokens.get(key, 0) + 1
        doc = self.by_job.get(key)
        if doc is not None and doc.ready_after is not None:
            self._at(self._t() + doc.ready_after, _Do.WORKLOAD_READY, job=key, token=token)
        if doc is not None:
            self._run_for(key, doc, token, _Do.WORKLOAD_FINISH)

    def _run_for(
        self, key: names.WorkloadKey, doc: documents.Document, token: int, finish: _Do
    ) -> None:
        """Its end after the work its checkpoints did not save, and its first checkpoint."""
        left = None if doc.duration is None else doc.duration - self._saved.get(key, 0.0)
        if left is not None:
            self._at(self._t() + left, finish, job=key, token=token)
        every = doc.checkpoint_every
        if every is not None and (left is None or every < left):
            self._at(self._t() + every, _Do.CHECKPOINT, job=key, token=token)

    async def _checkpoint(self, key: names.WorkloadKey, token: int) -> None:
        """The job saves a checkpoint and says so on itself (a job-less Workload on itself)."""
        doc = self.by_job[key]
        every = doc.checkpoint_every
        assert every is not None
        saved = self._saved[key] = self._saved.get(key, 0.0) + every
        when = dt.datetime.fromtimestamp(self.now, tz=dt.UTC).isoformat().replace("+00:00", "Z")
        patch = {"metadata": {"annotations": {api_workload.CHECKPOINTED_AT_ANNOTATION: when}}}
        kind = doc.kind[1]
        await self.fake.request(
            "PATCH",
            fakeapi.path(kind, key.namespace, key.name),
            body=patch,
            content_type=client.MERGE_PATCH,
        )
        if doc.duration is None or saved + every < doc.duration:
            self._at(self._t() + every, _Do.CHECKPOINT, job=key, token=token)

    async def _workload_status(self, key: names.WorkloadKey, action: _Do) -> None:
        stored = self.fake.store.get(("Workload", key.namespace, key.name))
        if stored is None:
            return
        view = workload_view.WorkloadView(stored)
        now = self.now
        if action == _Do.WORKLOAD_RELEASE:
            status = jobcontroller.release_status(view, now)
        else:
            kind, reason = (
                (_COND.PODS_READY, "PodsReady")
                if action == _Do.WORKLOAD_READY
                else (_COND.FINISHED, "Succeeded")
            )
            change = workloads.condition(kind, True, reason, reason, now)
            status = {"conditions": workloads.merge_conditions(view.raw_conditions, [change])}
        await workloads.patch_status(self.fake, key, view.resource_version, status)

    def _kubelet(self, job: dict[str, Any]) -> None:
        """Start or stop a job's pods as its controllers would, at once."""
        meta = job.get("metadata") or {}
        key = names.WorkloadKey(str(meta.get("namespace")), str(meta.get("name")))
        integ = self.world.integration(job)
        suspended = integ.is_suspended(job)
        finished, _ = integ.finished(job)
        if finished:
            return
        if not suspended and key not in self._running:
            self._running.add(key)
            token = self._tokens[key] = self._tokens.get(key, 0) + 1
            doc = self.by_job.get(key)
            self._at(self._t(), _Do.JOB_START, job=key, token=token)
            if doc is not None:
                self._run_for(key, doc, token, _Do.JOB_FINISH)
            if doc is not None and doc.ready_after is not None:
                self._at(self._t() + doc.ready_after, _Do.JOB_READY, job=key, token=token)
        elif suspended and key in self._running:
            self._running.discard(key)
            self._tokens[key] = self._tokens.get(key, 0) + 1
            self._at(self._t(), _Do.JOB_STOP, job=key, token=self._tokens[key])

    async def _job_status(self, key: names.WorkloadKey, action: _Do) -> None:
        kind = self.by_job[key].kind[1]
        job = self.fake.store.get((kind, key.namespace, key.name))
        if job is None:
            return
        if kind == jobset.KIND:
            status = _jobset_status(job, action, self._running, key)
        elif kind == trainjob.KIND:
            status = self._trainjob_status(job, action, key)
        elif kind == "Job":
            status = self._batch_status(job, action, key)
        elif job.get("apiVersion", "").startswith(f"{ray.GROUP}/"):
            status = _ray_status(job, action, self._running, key)
        else:
            status = _training_status(job, action, self._running, key)
        await self.fake.request(
            "PATCH",
            fakeapi.path(kind, key.namespace, key.name, "status"),
            body={"status": status},
            content_type=client.MERGE_PATCH,
        )

    def _trainjob_status(
        self, job: dict[str, Any], action: _Do, key: names.WorkloadKey
    ) -> dict[str, Any]:
        """A TrainJob's status as the Trainer reports it: its JobSet's child Jobs."""
        made, _ = trainjob.as_jobset(job, self.world.watched)
        status = _jobset_status(made or {}, action, self._running, key)
        out: dict[str, Any] = {"jobsStatus": status["replicatedJobsStatus"]}
        if action == _Do.JOB_FINISH:
            out["conditions"] = [{"type": "Complete", "status": "True"}]
        return out

    def _batch_status(
        self, job: dict[str, Any], action: _Do, key: names.WorkloadKey
    ) -> dict[str, Any]:
        count = self.world.integration(job).pod_count(job)
        status: dict[str, Any]
        if action == _Do.JOB_START:
            status = {"active": count, "ready": 0}
        elif action == _Do.JOB_READY:
            status = {"ready": count}
        elif action == _Do.JOB_FINISH:
            status = {
                "active": 0,
                "ready": 0,
                "succeeded": count,
                "conditions": [{"type": "Complete", "status": "True"}],
            }
            self._running.discard(key)
        else:
            status = {"active": 0, "ready": 0}
        return status

    # The operator's part ------------------------------------------------------------------------

    async def _settle(self) -> None:
        """Run the leader's tasks until none of them writes anything at this instant."""
        w = self.world
        for _ in range(_MAX_ROUNDS):
            before = self.fake.resource_version
            while self._due and self._due[0].at + BASE <= self.now:
                await self._fire(heapq.heappop(self._due))
            # The lifecycle task first: a workload whose eviction's cause ended at this instant
            # queues once its Requeued condition is written, before the cycles that follow
            # (as the simulator requeues it at the instant, before settling).
            await self.lifecycle.pass_once()
            await self.scheduler.step()
            for key in w.dirty_jobs.take():
                try:
                    await self.jobs.reconcile(key)
                except errors.KubeError:
                    self._retry.add(key)  # as the controller's loop: again after _RETRY
            if (
                self.fake.resource_version == before
                and not len(w.dirty_jobs)
                and not (self._due and self._due[0].at + BASE <= self.now)
            ):
                return
        msg = f"the operator did not settle at t={self._t()}"
        raise RuntimeError(msg)

    def _note(self, body: dict[str, Any], *, deleted: bool) -> None:
        """Record the decisions a Workload change shows."""
        view = workload_view.WorkloadView(body)
        old = self._seen.get(view.key)
        if deleted:
            self._seen.pop(view.key, None)
            return
        self._seen[view.key] = view
        who = self._who(view)
        adm = view.admission
        if (
            adm is not None
            and view.is_true(_COND.QUOTA_RESERVED)
            and (old is None or old.admission is None or not old.is_true(_COND.QUOTA_RESERVED))
        ):
            self.decisions.append(Decision(self._t(), "Admitted", who, str(adm.cluster_queue)))
            if view.owner_job_uid is None:
                self._run_standalone(view.key)
        if (
            view.owner_job_uid is None
            and adm is not None
            and view.is_true(_COND.EVICTED)
            and not (old is not None and old.is_true(_COND.EVICTED) and old.admission is not None)
        ):
            # Its job's part: stop at once and give the quota back (the job controller's
            # release, as Kueue's tests do with FinishEvictionForWorkloads).
            token = self._tokens[view.key] = self._tokens.get(view.key, 0) + 1
            self._at(self._t(), _Do.WORKLOAD_RELEASE, job=view.key, token=token)
        for kind in (_COND.PREEMPTED, _COND.EVICTED):
            now_true = view.is_true(kind)
            was = old is not None and old.is_true(kind)
            if now_true and not was:
                c = view.condition(kind)
                detail = "" if kind == _COND.PREEMPTED or c is None else c.reason
                self.decisions.append(Decision(self._t(), str(kind), who, detail))

    def _who(self, view: workload_view.WorkloadView) -> str:
        uid = view.owner_job_uid
        job = None if uid is None else self.world.job_of_uid.get(uid)
        return str(job.object_key) if job is not None else str(view.key)


def _jobset_status(
    js: dict[str, Any], action: _Do, running: set[names.WorkloadKey], key: names.WorkloadKey
) -> dict[str, Any]:
    """A JobSet's status as its controller reports it: child Jobs per replicated job."""
    counts = {
        _Do.JOB_START: {"active": 1},
        _Do.JOB_READY: {"active": 1, "ready": 1},
        _Do.JOB_FINISH: {"succeeded": 1},
    }.get(action, {})
    roles = (js.get("spec") or {}).get("replicatedJobs") or []
    status: dict[str, Any] = {
        "replicatedJobsStatus": [
            {"name": r["name"], **{k: v * jobset.replicas(r) for k, v in counts.items()}}
            for r in roles
        ]
    }
    if action == _Do.JOB_FINISH:
        status["conditions"] = [{"type": "Completed", "status": "True"}]
        running.discard(key)
    return status


def _training_status(
    job: dict[str, Any], action: _Do, running: set[names.WorkloadKey], key: names.WorkloadKey
) -> dict[str, Any]:
    """A training job's status as the training-operator reports it."""
    spec = next(k for k in kubeflow.KINDS if k.kind == job["kind"])
    counts = {
        _Do.JOB_START: "active",
        _Do.JOB_READY: "active",
        _Do.JOB_FINISH: "succeeded",
    }
    field = counts.get(action)
    status: dict[str, Any] = {
        "replicaStatuses": {
            t: ({field: int(r.get("replicas", 1))} if field else {})
            for t, r in kubeflow.replicas(spec, job)
        },
        "conditions": [],
    }
    if action == _Do.JOB_READY:
        status["conditions"] = [{"type": "Running", "status": "True"}]
    elif action == _Do.JOB_FINISH:
        status["conditions"] = [{"type": "Succeeded", "status": "True"}]
        running.discard(key)
    return status


def _ray_status(
    job: dict[str, Any], action: _Do, running: set[names.WorkloadKey], key: names.WorkloadKey
) -> dict[str, Any]:
    """A RayJob's or RayCluster's status as KubeRay reports it."""
    shape = ray.RAYJOB if job["kind"] == ray.RAYJOB.kind else ray.RAYCLUSTER
    workers = sum(ray.group_count(g) for g in ray.worker_groups(shape, job))
    reported: dict[_Do, dict[str, Any]] = {
        _Do.JOB_START: {"head": {"podName": "head"}, "state": None},
        _Do.JOB_READY: {"state": "ready", "readyWorkerReplicas": workers},
    }
    cluster = reported.get(action)
    if action == _Do.JOB_STOP:
        cluster = {"state": "suspended", "head": None, "readyWorkerReplicas": None}
    if shape is ray.RAYCLUSTER:
        return cluster or {}
    deployment = {
        _Do.JOB_START: "Initializing",
        _Do.JOB_READY: "Running",
        _Do.JOB_FINISH: "Complete",
        _Do.JOB_STOP: "Suspended",
    }.get(action)
    status: dict[str, Any] = {"jobDeploymentStatus": deployment}
    if action == _Do.JOB_FINISH:
        status["jobStatus"] = "SUCCEEDED"
        running.discard(key)
    if action == _Do.JOB_STOP:
        status["rayClusterStatus"] = None
    elif cluster is not None:
        status["rayClusterStatus"] = cluster
    return status


def run_operator(docs: list[documents.Document], until: float | None = None) -> list[Decision]:
    """The operator's decisions on a scenario."""
    saved = jobcontroller._STOP_SETTLE
    jobcontroller._STOP_SETTLE = 0.0
    try:
        # A loop of its own: the synchronous counterpart of ``engine.Simulator(...).run()``.
        return asyncio.run(Driver(docs).run(until))
    finally:
        jobcontroller._STOP_SETTLE = saved
