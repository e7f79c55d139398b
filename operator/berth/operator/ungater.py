"""The ungater: pins each pod placed by topology to its domain, then lets it be scheduled (leader).

A pod set admitted with a ``topologyAssignment`` starts with the ``berth.dev/tas`` label on its
pods; the pod webhook holds each new one at the ``berth.dev/topology`` scheduling gate. For every
job whose placed pods wait (``World.to_pin``), this task reads the admission of its Workload
and, pod set by pod set, gives each waiting pod the node labels of a domain that still has room
(``core.pod_placement.pin``: pods already pinned take their places first; waiting pods in completion
index order fill the domains in order) and removes the gate, in one strategic merge patch, as
Kueue's topology ungater (``pkg/controller/tas/topology_ungater.go``) does. kube-scheduler then
places the pod inside the domain admission counted it in.

Pods of a Workload not admitted (evicted meanwhile) stay gated: the job is being stopped. Writes
go through ``berth.adapters.kube``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

from berth.adapters import wakeup
from berth.adapters.kube import client, errors, jobs
from berth.api import bodies, conditions, topology
from berth.api.bodies import Body
from berth.api.labels import POD_SET_LABEL
from berth.core import topology as core_topology
from berth.jobs.framework import pod_placement
from berth.operator import ports

log = logging.getLogger(__name__)
_COND = conditions.WorkloadCondition
_RETRY = 1.0
_INDEX = "batch.kubernetes.io/job-completion-index"
_DONE = frozenset({"Succeeded", "Failed"})


@dataclasses.dataclass(frozen=True, slots=True)
class _Pods:
    """Where pods live in the API (the core group)."""

    api_version: str = "v1"
    plural: str = "pods"


PODS = _Pods()


class Ungater:
    """Pins waiting placed pods, job by job."""

    def __init__(self, world: ports.UngaterWorld, kube: client.KubeRequests) -> None:
        self.world = world
        self.kube = kube

    async def run(self) -> None:
        """Pin until cancelled."""
        w = self.world
        while True:
            w.wake.ungate.clear()
            retry = False
            for job_uid in w.to_pin.take():
                try:
                    await self.pin(job_uid)
                except errors.KubeError as e:
                    log.warning("pinning the pods of job %s: %s", job_uid, e)
                    w.to_pin.keep(job_uid)
                    retry = True
            if w.to_pin and not retry:
                continue
            await wakeup.woken(w.wake.ungate, _RETRY if retry else None)

    async def pin(self, job_uid: str) -> None:
        """Pin the waiting pods of one job to domains of its admission."""
        w = self.world
        job_key = w.job_of_uid.get(job_uid)
        job = None if job_key is None else w.jobs.get(job_key)
        wl_key = None if job is None else w.workload_for_job(job)
        view = None if wl_key is None else w.workloads.get(wl_key)
        adm = None if view is None or view.is_true(_COND.EVICTED) else view.admission
        if adm is None:
            return  # not (or no longer) admitted: the job is held or being stopped
        pods = list(w.placed_pods.by_job.get(job_uid, {}).values())
        for psa in adm.pod_set_assignments:
            assignment = core_topology.from_status(psa.topology_assignment)
            if assignment is None:
                continue
            mine = [p for p in pods if bodies.labels_of(p).get(POD_SET_LABEL) == psa.name]
            for name, selector in pinned_now(assignment, mine).items():
                await self._pin(name, selector)

    async def _pin(self, pod: str, selector: dict[str, str]) -> None:
        namespace, name = pod.split("/", 1)
        patch = {
            "spec": {
                "nodeSelector": selector,
                "schedulingGates": [{"$patch": "delete", "name": topology.GATE}],
            }
        }
        with contextlib.suppress(errors.NotFoundError):  # gone meanwhile: nothing to pin
            stored = await jobs.patch_strategic(self.kube, PODS, namespace, name, patch)
            self.world.apply("Pod", stored)
            log.info("pinned pod %s to %s", pod, selector)


def pinned_now(assignment: core_topology.Assignment, pods: list[Body]) -> dict[str, dict[str, str]]:
    """The node selector of each waiting pod that gets a place now, by namespace/name."""
    active = [p for p in pods if _phase(p) not in _DONE and not _deleting(p)]
    pinned = [_selector(p) for p in active if not pod_placement.is_gated(p)]
    waiting = sorted((p for p in active if pod_placement.is_gated(p)), key=_rank)
    return pod_placement.pin(assignment, pinned, [bodies.namespaced_name(p) for p in waiting])


def _rank(pod: Body) -> tuple[int, str]:
    """Completion index first (neighbouring ranks share a domain), then name."""
    meta = bodies.meta(pod)
    raw = (meta.get("labels") or {}).get(_INDEX) or (meta.get("annotations") or {}).get(_INDEX)
    index = str(raw or "")
    return (int(index) if index.isdigit() else 1 << 31), bodies.namespaced_name(pod)


def _phase(pod: Body) -> str | None:
    status = pod.get("status")
    return status.get("phase") if isinstance(status, dict) else None


def _deleting(pod: Body) -> bool:
    return bodies.deleting(pod)


def _selector(pod: Body) -> dict[str, str]:
    spec = pod.get("spec")
    return dict((spec.get("nodeSelector") if isinstance(spec, dict) else None) or {})
