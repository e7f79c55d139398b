"""Cases through real Kueue: minimalkueue v0.19.2 on the project's own etcd and kube-apiserver.

A `Session` starts a control plane (``devcluster.launcher``, etcd and kube-apiserver only),
installs Kueue's CRDs from the build cache (``scripts/build-control-plane``), starts
minimalkueue (Kueue's scheduler, queue manager, cache and core controllers; no webhooks, an
empty Configuration) against it, and keeps one watch on every Workload. ``Session.run`` plays one
case, its names prefixed, so many cases run at once on one server without meeting: separate
cohort trees share nothing Kueue decides with.

As Kueue's own harness does (``test/performance/scheduler/runner/controller``), Workloads are
created directly and the harness plays the jobs' part:
- a Workload seen evicted still holding quota gets its quota cleared, as the runner's
  ``UnsetQuotaReservationWithCondition(wl, "Pending", ...)`` through ``PatchAdmissionStatus``
  (server-side apply as ``kueue-admission``, with the admission-managed conditions);
- a finish step sets ``Finished=True`` as ``SetConditionAndUpdate`` does (field manager
  ``kueue-job-controller-Finished``).

A step is applied only once the previous one is quiescent: no write of the harness in flight,
no evicted Workload still holding quota, and no decision (an admission, a condition's status)
changed for ``quiet`` seconds, longer than Kueue's 1 s batch before it requeues inadmissible
workloads (``pkg/cache/queue/inadmissible_workloads.go`` ``requeueBatchPeriod``). Pending
messages rewritten with nothing decided do not count (`_decision`). Arrivals are at least
1.05 s apart, so no two Workloads share a ``creationTimestamp`` (whole seconds): Kueue breaks
such ties by UID (``cluster_queue.go`` ``baseCompareFunc``), which is random, while Berth's
simulator orders arrivals by their step. Called by ``campaign``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import yaml

from berth.devtools.devcluster import binaries, launcher
from berth.devtools.differential import case, observation
from berth.devtools.differential.berth_run import GENERIC_REASONS
from berth.devtools.harness import api as api_mod

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
_APIS = f"/apis/{GROUP}/{VERSION}"
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_APPLY = "application/apply-patch+yaml"
_ADMISSION_MANAGED = (
    "QuotaReserved",
    "BlockedOnPreemptionGates",
    "Evicted",
    "Admitted",
    "Preempted",
    "Requeued",
    "DeactivationTarget",
    "Finished",
    "PodsReady",
)
"""``pkg/workload/patching/patching.go`` ``admissionManagedConditions``: what an admission
status patch carries."""
_PREEMPTOR_UID = re.compile(r"UID: ([0-9a-f-]+)")
_ARRIVAL_GAP = 1.05
RUNNER_MESSAGE = "Evicted by the test runner"
"""The message of the harness's own ``QuotaReserved=False``: no scheduling attempt's."""
_PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Cohort": "cohorts",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "Workload": "workloads",
}


class KueueError(RuntimeError):
    """The control plane or minimalkueue did not start, or a case could not be set up."""


def _condition(body: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (body.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def _true(body: dict[str, Any], kind: str) -> bool:
    c = _condition(body, kind)
    return c is not None and c.get("status") == "True"


def _decision(body: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a Workload's status says was decided: its admission and its conditions' statuses.

    A pending workload's message is left out: Kueue rewrites it at every attempt, and with
    ``FlavorFungibilityPreserveScanProgress`` (beta, on in v0.19.2) successive attempts of a
    workload with two pod sets start from alternate pod sets and write alternating messages,
    each write requeueing it for the next, for ever, without deciding anything new.
    """
    status = body.get("status") or {}
    conditions = tuple(
        sorted((str(c.get("type")), str(c.get("status"))) for c in status.get("conditions") or [])
    )
    return json.dumps(status.get("admission"), sort_keys=True), conditions


def _now() -> str:
    return dt.datetime.now(tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set(
    conditions: list[dict[str, Any]],
    kind: str,
    *,
    status: bool,
    reason: str,
    message: str,
    generation: int,
) -> None:
    """``apimeta.SetStatusCondition``: the time moves only when the status changes."""
    new = {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
        "observedGeneration": generation,
    }
    for i, old in enumerate(conditions):
        if old.get("type") == kind:
            if old.get("status") == new["status"]:
                new["lastTransitionTime"] = old.get("lastTransitionTime", new["lastTransitionTime"])
            conditions[i] = new
            return
    conditions.append(new)


@dataclasses.dataclass(slots=True)
class _Tracked:
    """What the harness knows of one running case."""

    prefix: str
    bodies: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    uids: dict[str, str] = dataclasses.field(default_factory=dict)
    preemptions: list[observation.Preemption] = dataclasses.field(default_factory=list)
    last_change: float = dataclasses.field(default_factory=time.monotonic)
    writing: int = 0
    clearing: set[str] = dataclasses.field(default_factory=set)

    def name(self, prefixed: str) -> str:
        return prefixed.removeprefix(self.prefix)

    def holding_after_eviction(self) -> bool:
        return any(self._must_clear(b) for b in self.bodies.values())

    @staticmethod
    def _must_clear(body: dict[str, Any]) -> bool:
        return (
            _true(body, "Evicted") and _true(body, "QuotaReserved") and not _true(body, "Finished")
        )


def _start_minimalkueue(binary: Path, kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(  # noqa: S603 - our own cached binary, fixed arguments
            [str(binary)],
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _crd_documents(folder: Path) -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(folder.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


class Session:
    """One control plane with minimalkueue; ``run`` plays a case on it."""

    def __init__(self, work: Path, *, quiet: float = 2.0, step_timeout: float = 60.0) -> None:
        self.work = work
        self.quiet = quiet
        self.step_timeout = step_timeout
        self.plane: launcher.ControlPlane | None = None
        self.api: api_mod.Api | None = None
        self.kueue: subprocess.Popen[bytes] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._cases: dict[str, _Tracked] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # Start and stop -----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            await self._start()
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    async def _start(self) -> None:
        cache = binaries.BinaryCache.default()
        minimal = cache.find("minimalkueue")
        crds = cache.kueue_crds()
        self.work.mkdir(parents=True, exist_ok=True)
        plane = launcher.ControlPlane(launcher.ControlPlaneConfig(self.work / "control-plane"))
        self.plane = plane
        await asyncio.to_thread(plane.start)
        self.api = await api_mod.Api.open(str(plane.kubeconfig))
        await self._install_crds(crds)
        self.kueue = await asyncio.to_thread(
            _start_minimalkueue, minimal, plane.kubeconfig, self.work / "minimalkueue.log"
        )
        self._watch = asyncio.create_task(self._watch_workloads())

    async def _install_crds(self, folder: Path, within: float = 60.0) -> None:
        assert self.api is not None  # noqa: S101 - started
        names = []
        for doc in await asyncio.to_thread(_crd_documents, folder):
            await self.api.create(_CRDS, doc, exist_ok=True)
            names.append(doc["metadata"]["name"])
        deadline = time.monotonic() + within
        for name in names:
            while True:
                got = await self.api.request("GET", f"{_CRDS}/{name}")
                conditions = (got.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise KueueError(f"CRD {name} not Established in {within:.0f}s")
                await asyncio.sleep(0.2)

    async def _stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch
        for task in list(self._tasks):
            task.cancel()
        if self.kueue is not None and self.kueue.poll() is None:
            self.kueue.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.kueue.wait, 15)
            except subprocess.TimeoutExpired:
                self.kueue.kill()
                await asyncio.to_thread(self.kueue.wait, 10)
        if self.api is not None:
            await self.api.close()
        if self.plane is not None:
            await asyncio.to_thread(self.plane.stop)

    # The watch ----------------------------------------------------------------------------------

    async def _watch_workloads(self) -> None:
        assert self.api is not None  # noqa: S101 - started
        while True:
            try:
                listing = await self.api.request("GET", f"{_APIS}/workloads")
                for item in listing.get("items") or []:
                    self._seen(item)
                rv = listing["metadata"]["resourceVersion"]
                async for event in self.api.watch(f"{_APIS}/workloads", rv):
                    if event.get("type") == "ERROR":
                        break
                    obj = event.get("object") or {}
                    if event.get("type") in {"ADDED", "MODIFIED"}:
                        self._seen(obj)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a broken watch is listed and watched again
                await asyncio.sleep(0.2)

    def _seen(self, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        tracked = self._cases.get(str(meta.get("namespace")))
        if tracked is None:
            return
        name = tracked.name(str(meta.get("name")))
        old = tracked.bodies.get(name)
        if old is not None and int(meta.get("resourceVersion") or 0) <= int(
            (old.get("metadata") or {}).get("resourceVersion") or 0
        ):
            return
        tracked.bodies[name] = body
        tracked.uids[str(meta.get("uid"))] = name
        if old is None or _decision(old) != _decision(body):
            tracked.last_change = time.monotonic()
        if _true(body, "Evicted") and (old is None or not _true(old, "Evicted")):
            tracked.preemptions.append(self._preemption(tracked, name, body))
        if tracked._must_clear(body) and name not in tracked.clearing:  # noqa: SLF001 - own class
            tracked.clearing.add(name)
            task = asyncio.create_task(self._clear(tracked, name))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    def _preemption(tracked: _Tracked, name: str, body: dict[str, Any]) -> observation.Preemption:
        evicted = _condition(body, "Evicted") or {}
        preempted = _condition(body, "Preempted")
        if evicted.get("reason") != "Preempted" or preempted is None:
            return observation.Preemption(name, f"Evicted:{evicted.get('reason')}", "")
        found = _PREEMPTOR_UID.search(str(preempted.get("message") or ""))
        by = tracked.uids.get(found.group(1), found.group(1)) if found else "?"
        return observation.Preemption(name, str(preempted.get("reason")), by)

    # The harness's writes -----------------------------------------------------------------------

    def _path(self, tracked: _Tracked, name: str) -> str:
        return (
            f"{_APIS}/namespaces/{tracked.prefix}{case.NAMESPACE}/workloads/{tracked.prefix}{name}"
        )

    async def _apply_status(
        self,
        tracked: _Tracked,
        name: str,
        manager: str,
        status_of: Callable[[dict[str, Any]], dict[str, Any] | None],
    ) -> None:
        """Apply ``status_of(body)`` to the latest body, again on a conflict."""
        assert self.api is not None  # noqa: S101 - started
        tracked.writing += 1
        try:
            for _ in range(50):
                body = tracked.bodies[name]
                status = status_of(body)
                if status is None:
                    return
                meta = body["metadata"]
                patch = {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": "Workload",
                    "metadata": {
                        "name": meta["name"],
                        "namespace": meta["namespace"],
                        "uid": meta["uid"],
                        "resourceVersion": meta["resourceVersion"],
                    },
                    "status": status,
                }
                try:
                    got = await self.api.request(
                        "PATCH",
                        f"{self._path(tracked, name)}/status?fieldManager={manager}&force=true",
                        patch,
                        content_type=_APPLY,
                    )
                except api_mod.Conflict:
                    await asyncio.sleep(0.05)
                    continue
                self._seen(got)
                return
        finally:
            tracked.writing -= 1
            tracked.last_change = time.monotonic()

    async def _clear(self, tracked: _Tracked, name: str) -> None:
        """The runner's end of an eviction: quota released, ``QuotaReserved=False``."""

        def status_of(body: dict[str, Any]) -> dict[str, Any] | None:
            if not tracked._must_clear(body):  # noqa: SLF001 - own class
                return None
            generation = int(body["metadata"].get("generation") or 1)
            conditions = [
                dict(c)
                for c in (body.get("status") or {}).get("conditions") or []
                if c.get("type") in _ADMISSION_MANAGED
            ]
            _set(
                conditions,
                "QuotaReserved",
                status=False,
                reason="Pending",
                message=RUNNER_MESSAGE,
                generation=generation,
            )
            if any(c["type"] == "Admitted" for c in conditions):
                _set(
                    conditions,
                    "Admitted",
                    status=False,
                    reason="NoReservation",
                    message="The workload has no reservation",
                    generation=generation,
                )
            status: dict[str, Any] = {"conditions": conditions}
            old = body.get("status") or {}
            for key in ("resourceRequests", "schedulingStats", "requeueState"):
                if old.get(key):
                    status[key] = old[key]
            return status

        try:
            await self._apply_status(tracked, name, "kueue-admission", status_of)
        finally:
            tracked.clearing.discard(name)

    async def _finish(self, tracked: _Tracked, name: str) -> None:
        def status_of(body: dict[str, Any]) -> dict[str, Any] | None:
            if _true(body, "Finished"):
                return None
            conditions: list[dict[str, Any]] = []
            _set(
                conditions,
                "Finished",
                status=True,
                reason="ByTest",
                message="By test runner",
                generation=int(body["metadata"].get("generation") or 1),
            )
            return {"conditions": conditions}

        await self._apply_status(tracked, name, "kueue-job-controller-Finished", status_of)

    async def _finish_all(self, tracked: _Tracked) -> None:
        """Finish what is left of a case, so Kueue stops looking at it."""
        await asyncio.gather(
            *(
                self._finish(tracked, name)
                for name, body in list(tracked.bodies.items())
                if not _true(body, "Finished")
            )
        )

    # One case -----------------------------------------------------------------------------------

    async def _create(self, doc: dict[str, Any]) -> dict[str, Any]:
        assert self.api is not None  # noqa: S101 - started
        kind = doc["kind"]
        if kind == "Namespace":
            return await self.api.request("POST", "/api/v1/namespaces", doc)
        plural = _PLURALS[kind]
        ns = doc["metadata"].get("namespace")
        where = f"{_APIS}/namespaces/{ns}/{plural}" if ns else f"{_APIS}/{plural}"
        return await self.api.request("POST", where, doc)

    async def _wait_active(self, names: list[str], within: float = 60.0) -> None:
        assert self.api is not None  # noqa: S101 - started
        deadline = time.monotonic() + within
        for name in names:
            while True:
                got = await self.api.request("GET", f"{_APIS}/clusterqueues/{name}")
                if _true(got, "Active"):
                    break
                if time.monotonic() > deadline:
                    message = (_condition(got, "Active") or {}).get("message")
                    raise KueueError(f"ClusterQueue {name} not Active: {message}")
                await asyncio.sleep(0.2)

    async def _settle(self, tracked: _Tracked) -> bool:
        deadline = time.monotonic() + self.step_timeout
        while True:
            await asyncio.sleep(0.1)
            now = time.monotonic()
            if (
                tracked.writing == 0
                and not tracked.holding_after_eviction()
                and now - tracked.last_change >= self.quiet
            ):
                return True
            if now > deadline:
                return False

    def _point(self, c: case.Case, tracked: _Tracked, step: int) -> observation.Point:
        arrived = {s.workload for s in c.steps[:step] if s.kind == case.StepKind.ARRIVE}
        admitted: dict[str, observation.Admission] = {}
        reasons: dict[str, str] = {}
        messages: dict[str, str] = {}
        for name, body in tracked.bodies.items():
            if name not in arrived or _true(body, "Finished"):
                continue
            admission = (body.get("status") or {}).get("admission")
            if admission and _true(body, "QuotaReserved"):
                admitted[name] = observation.Admission(
                    tracked.name(str(admission["clusterQueue"])),
                    tuple(
                        (
                            str(ps["name"]),
                            int(ps.get("count") or 0),
                            tuple(
                                sorted(
                                    (r, tracked.name(f))
                                    for r, f in (ps.get("flavors") or {}).items()
                                )
                            ),
                        )
                        for ps in admission.get("podSetAssignments") or []
                    ),
                )
                continue
            reserved = _condition(body, "QuotaReserved")
            if reserved is not None and reserved.get("reason") not in GENERIC_REASONS:
                reasons[name] = str(reserved.get("reason"))
            message = str((reserved or {}).get("message") or "")
            if message and message != RUNNER_MESSAGE:
                messages[name] = message.replace(tracked.prefix, "")
        preemptions = tuple(sorted(tracked.preemptions))
        tracked.preemptions.clear()
        return observation.Point(admitted, preemptions, reasons, messages)

    async def run(self, c: case.Case, prefix: str) -> observation.Trace:
        """Play one case with its names prefixed; an error is a trace that says so."""
        tracked = _Tracked(prefix)
        self._cases[prefix + case.NAMESPACE] = tracked
        points: list[observation.Point] = []
        try:
            setup = case.setup_documents(c, prefix)
            for doc in setup:
                await self._create(doc)
            await self._wait_active([prefix + q.name for q in c.queues])
            points.append(self._point(c, tracked, 0))
            last_arrival = 0.0
            for k, step in enumerate(c.steps, start=1):
                if step.kind == case.StepKind.ARRIVE:
                    await asyncio.sleep(max(0.0, last_arrival + _ARRIVAL_GAP - time.monotonic()))
                    last_arrival = time.monotonic()
                    self._seen(await self._create(case.workload_document(c, step.workload, prefix)))
                else:
                    await self._finish(tracked, step.workload)
                if not await self._settle(tracked):
                    return observation.Trace(
                        tuple(points), error=f"step {k} did not settle in {self.step_timeout:.0f}s"
                    )
                points.append(self._point(c, tracked, k))
            await self._finish_all(tracked)
        except (api_mod.ApiError, KueueError, OSError, KeyError) as e:
            return observation.Trace(tuple(points), error=f"{type(e).__name__}: {e}"[:500])
        finally:
            del self._cases[prefix + case.NAMESPACE]
        return observation.Trace(tuple(points))

    def dump(self) -> str:
        """Every tracked body, for debugging a case."""
        return json.dumps({k: v.bodies for k, v in self._cases.items()}, indent=1)[:10000]
