"""The job controller: keeps each managed job and its Workload in step (leader only).

Every integrated kind (``jobs.registry``: the ``batch/v1`` Job, JobSet, the training-operator's
kinds, TrainJob, RayJob and RayCluster, pod groups) goes through the same steps, reading and
patching the job through its integration and its capabilities (``jobs.framework.protocol``).
For every job a handler marked dirty, in Kueue's reconciler order
(``jobframework/reconciler.go``):

1. no Workload yet: create one (owner reference, one pod set per role, priority resolved);
2. the Job finished: mark the Workload ``Finished`` (its quota is released when that is seen);
3. the Workload is being evicted: suspend the Job, wait until none of its pods is active,
   restore the original template, and only then clear the admission (which releases quota),
   setting ``Requeued`` as Kueue does (True only after a preemption);
4. the Workload is admitted and the Job suspended: start it with the flavors' node labels and
   tolerations (the integration's start patch); once running, keep it at its admitted shape
   (``jobs.rules.job_sync.divergences``: held at its count, or evicted with ``JobChanged`` and
   queued again at its new shape) and ``PodsReady`` current, with Kueue's reasons
   (``pods_ready_condition``: waiting to start, or to recover after a pod was lost);
5. the Job runs but its Workload is not admitted: suspend it.

Before those steps, a Workload follows its job's priority-class label (Kueue's) and its
``berth.dev/checkpointed-at`` annotation (Berth's, for the order of preemption victims).

Handlers only mark Jobs; all writes happen here, through the ``KubeRequests`` port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from berth.adapters import wakeup
from berth.adapters.kube import client, errors, events, jobs, workloads
from berth.api import bodies, conditions, kinds, names, workload_view
from berth.api import workload as api_workload
from berth.jobs.framework import protocol, workload_body
from berth.jobs.framework.protocol import Integration
from berth.jobs.rules import job_sync
from berth.operator import ports, workload_machine
from berth.operator.webhooks import configurations

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_RETRY = 1.0
_OWN_REFUSALS_FOR = 30.0
"""Seconds a start refused by Berth's own webhooks (or failing to reach them) is tried again,
about ``_RETRY`` apart, before it counts as refused for good: a replica serving the webhook may
not have seen the admission yet, but a start it refuses for longer never succeeds, and its
Workload would hold the quota for ever."""
_STOP_SETTLE = 1.0
"""Seconds a stopped Job's suspension must be old before its quota is released: far above
kube-controller-manager's reaction time, so a pod it creates for a start it saw late is seen."""
_REQUEUED_AT_ONCE = {conditions.EvictionReason.PREEMPTED, conditions.EvictionReason.JOB_CHANGED}
"""Evictions after which the Workload queues again as soon as its quota is released."""
START_FAILED = "StartFailed"
"""Reason on a Workload whose Job the API server refused to start for good."""
UNSUPPORTED_OWNER = "UnsupportedOwner"
"""Reason on a Workload whose Job is controlled by a kind Berth does not integrate yet."""


class JobController:
    """Reconciles dirty Jobs one at a time."""

    def __init__(self, world: ports.JobWorld, kube: client.KubeRequests) -> None:
        self.world = world
        self.kube = kube
        self._own_refusals: dict[str, float] = {}
        """When Berth's own webhooks first refused a Job's start in a row, by Job uid."""
        self._suspended_at: dict[str, float] = {}
        """When this process suspended an evicted Job, by Job uid (see ``_pods_gone``)."""

    async def run(self) -> None:
        """Reconcile until cancelled."""
        w = self.world
        while True:
            w.wake.jobs.clear()
            retry = False
            for key in w.dirty_jobs.take():
                try:
                    await self.reconcile(key)
                except errors.KubeError as e:
                    log.warning("job %s: %s", key, e)
                    w.dirty_jobs.keep(key)  # after _RETRY, not at once
                    retry = True
            if w.dirty_jobs and not retry:
                continue
            await wakeup.woken(w.wake.jobs, _RETRY if retry else None)

    async def reconcile(self, key: names.JobKey) -> None:
        """Bring one job and its Workload in step."""
        w = self.world
        job = w.jobs.get(key)
        integ = w.integrations.get(key.kind)
        if job is None or integ is None:
            return
        wl_key = w.workload_for_job(job)
        wl = None if wl_key is None else w.workloads.get(wl_key)
        unfinished = wl is not None and not wl.is_true(_COND.FINISHED)
        # A Job that still has an unfinished Workload stays managed whatever its labels say now:
        # otherwise dropping its queue label would let it be started outside any quota.
        if not (w.managed(job) or unfinished):
            return
        owner = job_sync.foreign_owner(job, w.integrations) if key.kind == "Job" else None
        if isinstance(integ, protocol.ComposedIntegration) and await self._members(integ, job, wl):
            return  # the members' events bring the job back
        if wl_key is None:
            if integ.finished(job)[0]:
                return
            if isinstance(integ, protocol.Composed) and not integ.whole(job):
                return  # not whole yet: its Workload is made when its last member comes
            if not integ.is_suspended(job):
                # Running before Berth managed it (a queue label added past the webhook): stop it
                # first, so it can only run again through an admission Berth starts.
                await self._patch(integ, job, integ.stop_patch(job))
                return
            await self._create_workload(integ, job, foreign_owner=owner)
            return
        if (
            wl is not None
            and unfinished
            and not await self._follow_priority(integ, job, wl)
            and not await self._follow_checkpoint(job, wl)
        ):
            await self._step(integ, job, wl_key, wl, owner)

    async def _patch(self, integ: Integration, job: dict[str, Any], patch: dict[str, Any]) -> None:
        """Merge-patch a job and take in what the API server stored.

        A composed job's patch (a pod group's) is one per member: a strategic merge patch, or
        None to delete the member.
        """
        meta = job["metadata"]
        if isinstance(integ, protocol.Composed):
            for name, member_patch in sorted(integ.member_patches(patch).items()):
                if member_patch is None:
                    await jobs.delete(self.kube, integ, meta["namespace"], name)
                    continue
                with contextlib.suppress(errors.NotFoundError):  # gone meanwhile: nothing to do
                    stored = await jobs.patch_strategic(
                        self.kube, integ, meta["namespace"], name, member_patch
                    )
                    self.world.apply(integ.kind, stored)
            return
        stored = await jobs.patch(self.kube, integ, meta["namespace"], meta["name"], patch)
        self.world.apply(integ.kind, stored)

    async def _members(
        self,
        integ: protocol.ComposedIntegration,
        group: dict[str, Any],
        wl: workload_view.WorkloadView | None,
    ) -> bool:
        """Keep a composed job's members (a pod group's), and its Workload owned by every one.

        Excess members are deleted and finalizers come off those that may go; every member owns
        the Workload (Kueue's ``EnsureWorkloadOwnedByAllMembers``).

        Returns whether it wrote.
        """
        done = integ.finished(group)[0]
        finished = (wl is not None and wl.is_true(_COND.FINISHED)) or (wl is None and done)
        upkeep = integ.upkeep_patch(group, finished_workload=finished)
        if integ.member_patches(upkeep):
            await self._patch(integ, group, upkeep)
            return True
        if wl is None or finished:
            return False
        owners = integ.owners(group, wl.metadata.get("ownerReferences"))
        if owners is None:
            return False
        stored = await workloads.patch_metadata(
            self.kube, wl.key, wl.resource_version, {"ownerReferences": owners}
        )
        self.world.apply("Workload", stored)
        return True

    async def _follow_priority(
        self, integ: Integration, job: dict[str, Any], wl: workload_view.WorkloadView
    ) -> bool:
        """Give the Workload the WorkloadPriorityClass the Job's label names now, if it changed.

        As Kueue's job reconciler updates the Workload's priority when the job's priority-class
        label changes (``jobs.rules.job_sync.class_named_anew``, which the simulator replays too).
        Returns whether it wrote.
        """
        w = self.world
        wanted = job_sync.class_named_anew(job, wl.priority_class_ref, integ)
        if wanted is None:
            return False
        value = w.classes().workload_classes.get(wanted)
        if value is None:
            return False  # an unknown class: the Workload keeps its priority
        ref = {"group": "berth.dev", "kind": "WorkloadPriorityClass", "name": wanted}
        stored = await workloads.patch_spec(
            self.kube, wl.key, wl.resource_version, {"priorityClassRef": ref, "priority": value}
        )
        w.apply("Workload", stored)
        log.info("workload %s takes priority class %s (%d) from its job", wl.key, wanted, value)
        return True

    async def _follow_checkpoint(self, job: dict[str, Any], wl: workload_view.WorkloadView) -> bool:
        """Copy the job's ``berth.dev/checkpointed-at`` to its Workload when it changed.

        The job (its own code, through the API) says when it last saved a checkpoint; the
        scheduler reads it from the Workload to order preemption victims. The webhook refused an
        invalid value. Returns whether it wrote.
        """
        name = api_workload.CHECKPOINTED_AT_ANNOTATION
        wanted = (bodies.meta(job).get("annotations") or {}).get(name)
        if wanted is None or wl.annotations.get(name) == wanted:
            return False
        stored = await workloads.patch_metadata(
            self.kube, wl.key, wl.resource_version, {"annotations": {name: str(wanted)}}
        )
        self.world.apply("Workload", stored)
        return True

    async def _step(
        self,
        integ: Integration,
        job: dict[str, Any],
        wl_key: names.WorkloadKey,
        wl: workload_view.WorkloadView,
        owner: str | None,
    ) -> None:
        """The one write that brings a job and its unfinished Workload closer (reconciler order)."""
        done, succeeded = integ.finished(job)
        if done:
            await self._finish(wl_key, wl, succeeded=succeeded)
            return
        has_admission = wl.admission is not None
        if has_admission and wl.is_true(_COND.EVICTED):
            await self._stop(integ, job, wl_key, wl)
        elif owner is None and has_admission and wl.is_true(_COND.ADMITTED):
            if integ.is_suspended(job):
                await self._start(integ, job, wl_key, wl)
            elif not await self._keep_admitted_shape(integ, job, wl):
                await self._track_ready(integ, job, wl_key, wl)
        elif not integ.is_suspended(job):
            await self._patch(integ, job, integ.stop_patch(job))
        elif not has_admission and owner is None:
            await self._follow(integ, job, wl_key, wl)

    async def _event(
        self, involved: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        """Post an Event on the Job or Workload; best effort (a failure loses only the Event).

        A composed job's Events (a pod group's) go on its first member: the job is no object of
        its own.
        """
        integ = self.world.integrations.get(str(involved.get("kind") or ""))
        if isinstance(integ, protocol.Composed) and integ.is_assembled(involved):
            members = integ.members(involved)
            if not members:
                return
            involved = members[0]
        with contextlib.suppress(errors.KubeError):
            await events.emit(
                self.kube, involved, reason, message, self.world.clock(), warning=warning
            )

    async def _create_workload(
        self, integ: Integration, job: dict[str, Any], *, foreign_owner: str | None
    ) -> None:
        w = self.world
        meta = job["metadata"]
        new, problems = workload_body.new_workload(integ, job, w.classes(), uid=meta["uid"])
        if new is None:
            message = "; ".join(str(p) for p in problems)
            await self._event(
                job, "CreatedWorkload", f"Cannot create Workload: {message}", warning=True
            )
            return
        # A foreign owner's child is never admitted: the World does not queue it.
        body = new.body(job, integ, foreign_owner)
        try:
            stored = await workloads.create(self.kube, body)
        except errors.ConflictError:
            return  # created by an earlier attempt; its event is on its way
        w.apply("Workload", stored)
        if foreign_owner is not None:
            await self._unsupported(job, workload_view.WorkloadView(stored), foreign_owner)
            return
        await self._event(
            job,
            "CreatedWorkload",
            f"Created Workload: {meta['namespace']}/{stored['metadata']['name']}",
        )

    async def _unsupported(
        self, job: dict[str, Any], wl: workload_view.WorkloadView, owner: str
    ) -> None:
        """Say on the Workload and the Job why a child Job of another kind is never admitted."""
        w = self.world
        kind = owner.split("/", maxsplit=1)[0]
        message = (
            f"The Job is controlled by {owner}: Berth does not integrate {kind} yet, so its "
            "Jobs stay suspended (admitting each one alone would start part of the gang)"
        )
        key = wl.key
        change = workloads.condition(
            _COND.QUOTA_RESERVED, False, UNSUPPORTED_OWNER, message, w.clock()
        )
        stored = await self._set_condition(key, wl, change)
        for involved in (job, stored):
            await self._event(involved, UNSUPPORTED_OWNER, message, warning=True)

    async def _keep_admitted_shape(
        self, integ: Integration, job: dict[str, Any], wl: workload_view.WorkloadView
    ) -> bool:
        """Hold or stop a running job that left its admitted shape (``job_sync.divergences``).

        The webhooks refuse those changes; this holds when one got past them (webhook down or
        bypassed). Returns whether it wrote.
        """
        if isinstance(integ, protocol.Composed):
            return False  # members keep their own specs; extra ones are deleted (_members)
        w = self.world
        adm = wl.admission
        uid = str(job["metadata"].get("uid") or "")
        runs = workload_body.runs(adm, w.cache.flavors, integ.pod_count(job), job_uid=uid)
        found = job_sync.divergences(job, workload_body.originals(wl.pod_sets), runs, integ)
        if not found:
            return False
        meta = job["metadata"]
        what = "; ".join(d.message for d in found)
        if isinstance(integ, protocol.HeldAtCount) and all(
            d.remedy is job_sync.Remedy.HOLD for d in found
        ):
            count = sum(r.count for r in runs)
            await self._patch(integ, job, integ.hold_patch(job, count))
            message = (
                f"{integ.size_field} was raised past the admission ({what}): held at "
                f"{count}; resubmit the {integ.kind} at its new size"
            )
            log.warning("job %s/%s: %s", meta["namespace"], meta["name"], message)
            await self._event(job, "ExceedsAdmission", message, warning=True)
            return True
        message = (
            f"The {integ.kind} changed while it ran, past Berth's webhooks ({what}): it is "
            "stopped and queued again at its new shape"
        )
        change = workloads.condition(
            _COND.EVICTED, True, conditions.EvictionReason.JOB_CHANGED, message, w.clock()
        )
        try:
            await self._set_condition(wl.key, wl, change)
        except errors.ConflictError:
            return True  # a newer Workload is on its way; decided again on it
        log.warning("job %s/%s: %s", meta["namespace"], meta["name"], message)
        await self._event(job, conditions.EvictionReason.JOB_CHANGED, message, warning=True)
        return True

    async def _follow(
        self,
        integ: Integration,
        job: dict[str, Any],
        key: names.WorkloadKey,
        wl: workload_view.WorkloadView,
    ) -> None:
        """A suspended job whose Workload holds no quota: make the Workload follow the job."""
        w = self.world
        obj, _problems = kinds.try_load(workload_machine.without_status(wl.body))
        if not isinstance(obj, api_workload.Workload):
            return
        change, queue = job_sync.drift(job, obj, integ)
        meta = job["metadata"]
        if change is job_sync.Drift.QUEUE:
            stored = await workloads.patch_spec(
                self.kube, key, wl.resource_version, {"queueName": queue}
            )
            w.apply("Workload", stored)
            log.info(
                "workload %s follows job %s/%s to queue %s",
                key,
                meta["namespace"],
                meta["name"],
                queue,
            )
        elif change is job_sync.Drift.POD_SETS:
            # Made again from the Job once the deletion is seen (reconcile's first step).
            with contextlib.suppress(errors.NotFoundError):
                await workloads.delete(self.kube, key, wl.uid)
            log.info(
                "workload %s replaced: job %s/%s changed", key, meta["namespace"], meta["name"]
            )
            await self._event(
                job,
                "UpdatedWorkload",
                f"The Job changed while queued: its Workload {key.name} is made again",
            )

    async def _finish(
        self, key: names.WorkloadKey, wl: workload_view.WorkloadView, *, succeeded: bool
    ) -> None:
        w = self.world
        reason = conditions.FinishReason.SUCCEEDED if succeeded else conditions.FinishReason.FAILED
        message = "Job finished successfully" if succeeded else "Job failed"
        change = workloads.condition(_COND.FINISHED, True, reason.value, message, w.clock())
        stored = await self._set_condition(key, wl, change)
        log.info("finished %s (%s)", key, reason.value)
        await self._event(stored, "Finished", message)

    async def _pods_gone(
        self, integ: Integration, job: dict[str, Any], key: names.WorkloadKey
    ) -> bool:
        """Tell whether a suspended Job's pods are gone for good, so its quota may be released.

        The Job's status and the pods this process has seen both lag kube-controller-manager: a
        Job started and stopped again within milliseconds (admitted, then preempted at once) can
        get its pods created after both said "none". So the suspension must be at least
        ``_STOP_SETTLE`` old, and a list of the Job's pods from the API server must find none.
        """
        w = self.world
        meta = job["metadata"]
        job_key = _job_key(integ, job)
        if integ.active_pods(job) > 0 or w.pods_left(meta["uid"]) > 0:
            return False  # the pod and job events bring us back
        waited = w.clock() - self._suspended_at.get(meta["uid"], 0.0)
        if waited < _STOP_SETTLE:
            asyncio.get_running_loop().call_later(_STOP_SETTLE - waited, w.mark_job, job_key)
            return False
        listed = await self.kube.request(
            "GET",
            f"/api/v1/namespaces/{meta['namespace']}/pods",
            query={"labelSelector": integ.pod_selector(job)},
        )
        alive = [
            p
            for p in listed.get("items") or []
            if (p.get("status") or {}).get("phase") not in {"Succeeded", "Failed"}
        ]
        if alive:
            log.info("%s: %d pod(s) of its Job still exist; the quota stays", key, len(alive))
            asyncio.get_running_loop().call_later(_STOP_SETTLE, w.mark_job, job_key)
            return False
        self._suspended_at.pop(meta["uid"], None)
        return True

    async def _start(
        self,
        integ: Integration,
        job: dict[str, Any],
        key: names.WorkloadKey,
        wl: workload_view.WorkloadView,
    ) -> None:
        uid = str(job["metadata"].get("uid") or "")
        try:
            await self._start_job(integ, job, wl)
        except (errors.ConflictError, errors.NotFoundError):
            raise  # a stale read or a deleted Job: the next event brings it back
        except errors.KubeError as e:
            own = _refused_by_own_webhook(e)
            if not own and not isinstance(e, errors.PermanentError):
                raise  # the API server or the network: the next attempt may pass
            first = self._own_refusals.setdefault(uid, self.world.clock())
            if own and self.world.clock() - first < _OWN_REFUSALS_FOR:
                # Berth's own webhook, served by a replica whose watch has not seen the
                # admission yet (after an API server restart, say): ask again shortly.
                msg = f"start of {key}: refused by Berth's own webhook so far ({e})"
                raise errors.TransientError(msg) from e
            self._own_refusals.pop(uid, None)
            await self._start_failed(job, key, wl, e)
        else:
            self._own_refusals.pop(uid, None)

    async def _start_failed(
        self,
        job: dict[str, Any],
        key: names.WorkloadKey,
        wl: workload_view.WorkloadView,
        error: errors.KubeError,
    ) -> None:
        """A start the API server refuses for good: give the quota back and deactivate.

        Retrying the same patch would hold the quota for ever (a Job that once ran has an
        immutable template). Kueue has no rule for it; Berth deactivates the Workload so it is
        not admitted again in a loop, and says why on both objects (docs/scheduling.md).
        """
        w = self.world
        message = f"The Job cannot be started: {error}"
        now = w.clock()
        current = wl.raw_conditions
        changes = [
            workloads.condition(_COND.QUOTA_RESERVED, False, START_FAILED, message, now),
            workloads.condition(_COND.ADMITTED, False, START_FAILED, message, now),
        ]
        stored = await workloads.patch_spec(self.kube, key, wl.resource_version, {"active": False})
        for _attempt in range(3):
            # The lifecycle task may evict the now inactive Workload meanwhile (a conflict): the
            # admission is still cleared here, from a fresh read, so the reason stays StartFailed.
            current = (stored.get("status") or {}).get("conditions") or current
            try:
                stored = await workloads.patch_status(
                    self.kube,
                    key,
                    stored["metadata"]["resourceVersion"],
                    {"admission": None, "conditions": workloads.merge_conditions(current, changes)},
                )
                break
            except errors.ConflictError:
                stored = await self.kube.request("GET", workloads.path(key.namespace, key.name))
        w.apply("Workload", stored)
        log.warning("released %s: %s", key, message)
        for involved in (job, stored):
            await self._event(involved, START_FAILED, message, warning=True)

    async def _start_job(
        self, integ: Integration, job: dict[str, Any], wl: workload_view.WorkloadView
    ) -> None:
        w = self.world
        adm = wl.admission
        uid = str(job["metadata"].get("uid") or "")
        runs = workload_body.runs(adm, w.cache.flavors, integ.pod_count(job), job_uid=uid)
        await self._patch(
            integ, job, integ.start_patch(job, workload_body.originals(wl.pod_sets), runs)
        )
        meta = job["metadata"]
        log.info("started %s %s/%s", integ.kind, meta["namespace"], meta["name"])
        psa_cq = None if adm is None else adm.cluster_queue
        await self._event(job, "Started", f"Admitted by ClusterQueue {psa_cq}")

    async def _track_ready(
        self,
        integ: Integration,
        job: dict[str, Any],
        key: names.WorkloadKey,
        wl: workload_view.WorkloadView,
    ) -> None:
        w = self.world
        adm = wl.admission
        counts = [] if adm is None else [a.count or 0 for a in adm.pod_set_assignments]
        count = sum(counts) or integ.pod_count(job)
        ready = integ.pods_ready(job, count)
        reason, message = pods_ready_condition(ready, wl.condition(_COND.PODS_READY))
        if reason is None:
            return
        change = workloads.condition(_COND.PODS_READY, ready, reason, message, w.clock())
        await self._set_condition(key, wl, change)

    async def _set_condition(
        self, key: names.WorkloadKey, wl: workload_view.WorkloadView, change: dict[str, Any]
    ) -> dict[str, Any]:
        """Merge one condition into the Workload's status (from the body it was read in)."""
        current = wl.raw_conditions
        stored = await workloads.patch_status(
            self.kube,
            key,
            wl.resource_version,
            {"conditions": workloads.merge_conditions(current, [change])},
        )
        self.world.apply("Workload", stored)
        return stored

    async def _stop(
        self,
        integ: Integration,
        job: dict[str, Any],
        key: names.WorkloadKey,
        wl: workload_view.WorkloadView,
    ) -> None:
        w = self.world
        meta = job["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if isinstance(integ, protocol.Composed):
            # Members are not suspended: the started ones are deleted, and the quota goes once
            # none is left on a node (the members still gated wait for the next admission).
            stop = integ.stop_patch(job)
            if integ.member_patches(stop):
                await self._patch(integ, job, stop)
                await self._event(job, "Stopped", "The workload is evicted; its pods are deleted")
                return
            if integ.active_pods(job) > 0:
                return  # the members' deletions bring the group back
        elif not integ.is_suspended(job):
            await self._patch(integ, job, integ.stop_patch(job))
            self._suspended_at[meta["uid"]] = w.clock()
            message = f"The workload is evicted; the {integ.kind} is suspended"
            await self._event(job, "Stopped", message)
            return
        elif not await self._pods_gone(integ, job, key):
            return
        originals = workload_body.originals(wl.pod_sets)
        restore = (
            integ.restore_patch(job, originals) if isinstance(integ, protocol.Restorable) else None
        )
        if restore is not None:
            before = (
                integ.before_restore(job) if isinstance(integ, protocol.RestoresStatus) else None
            )
            if before is not None:
                await jobs.patch_status(self.kube, integ, ns, name, before)
            await self._patch(integ, job, restore)
            return
        # The Job is stopped and restored: release the quota.
        stored = await workloads.patch_status(
            self.kube, key, wl.resource_version, release_status(wl, w.clock())
        )
        w.apply("Workload", stored)
        evicted = wl.condition(_COND.EVICTED)
        log.info("released %s after eviction (%s)", key, evicted.reason if evicted else "?")


def _refused_by_own_webhook(error: errors.KubeError) -> bool:
    """Tell whether Berth's own webhooks refused a write, or the API server failed to ask them.

    The API server names the webhook in both (``admission webhook "vjob.berth.dev" denied the
    request``, ``failed calling webhook "vjob.berth.dev"``).
    """
    return f'"{configurations.JOB_WEBHOOK}"' in str(error)


def _job_key(integ: Integration, job: dict[str, Any]) -> names.JobKey:
    meta = bodies.meta(job)
    return names.JobKey(integ.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def release_status(wl: workload_view.WorkloadView, now: float) -> dict[str, Any]:
    """The status that releases an evicted Workload's quota once its job has stopped.

    As Kueue's job reconciler: the admission goes, QuotaReserved, Admitted and PodsReady turn
    False, and Requeued says why it was evicted. Used by ``_stop`` and by whoever plays a job's
    part for a Workload without one.
    """
    evicted = wl.condition(_COND.EVICTED)
    reason = (evicted.reason if evicted is not None else "") or "Evicted"
    evicted_message = (evicted.message if evicted is not None else "") or "Evicted"
    current = wl.raw_conditions
    changes = [
        workloads.condition(_COND.QUOTA_RESERVED, False, "Pending", evicted_message, now),
        workloads.condition(
            _COND.ADMITTED, False, "NoReservation", "The workload has no reservation", now
        ),
        # Not ready since no admission: after the next one the pods wait to start, not recover.
        workloads.condition(
            _COND.PODS_READY,
            False,
            conditions.PodsReadyReason.WAIT_FOR_START,
            "The workload is not admitted",
            now,
        ),
        # As Kueue's job reconciler: Evicted stays True until the next admission, and only
        # a preemption requeues at once; a pods-ready timeout waits for BackoffFinished, a
        # stopped queue for its restart, a deactivation for reactivation.
        workloads.condition(
            _COND.REQUEUED,
            reason in _REQUEUED_AT_ONCE,
            reason,
            evicted_message,
            now,
        ),
    ]
    return {"admission": None, "conditions": workloads.merge_conditions(current, changes)}


_PODS = conditions.PodsReadyReason


def pods_ready_condition(
    ready: bool, current: workload_view.Condition | None
) -> tuple[_PODS, str] | tuple[None, str]:
    """The ``PodsReady`` condition to write now (reason None: the current one stands).

    Kueue's ``generatePodsReadyCondition``: ready is ``Started``, or ``Recovered`` after a
    recovery; not ready is ``WaitForStart`` before the pods were ever ready, ``WaitForRecovery``
    once they were (the recovery timeout runs from it), and a False condition keeps its reason.
    """
    if ready:
        if current is not None and current.status:
            return None, ""
        recovered = current is not None and current.reason in (
            _PODS.WAIT_FOR_RECOVERY,
            _PODS.RECOVERED,
        )
        if recovered:
            return _PODS.RECOVERED, "All pods reached readiness again"
        return _PODS.STARTED, "All pods reached readiness and the workload is running"
    if current is None:
        return _PODS.WAIT_FOR_START, "Not all pods are ready or succeeded"
    if current.status:
        return _PODS.WAIT_FOR_RECOVERY, "At least one pod is not ready, waiting for recovery"
    return None, ""
