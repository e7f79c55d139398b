"""Helpers for tests that run the Berth operator against a real control plane.

``OperatorProcess`` runs ``berth run`` as a subprocess (so a test can SIGKILL it), waits until it
leads, and removes its webhook configurations when stopped. The builders return the queue
objects and GPU Jobs the operator tests submit.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

import adversary
from berth.adapters.history import store
from berth.devtools.devcluster import errors, kwok, launcher

ROOT = Path(__file__).resolve().parent.parent
QUEUE_LABEL = "berth.dev/queue-name"


class OperatorProcess:
    """``berth run`` against one control plane, logging into ``log``."""

    def __init__(
        self,
        plane: launcher.ControlPlane,
        log: Path,
        *,
        lease_duration: int = 4,
        config: Path | None = None,
    ) -> None:
        self.plane = plane
        self.log = log
        self.lease_duration = lease_duration
        self.config = config
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        """Start it and wait until it leads and its webhooks answer."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.process = self._spawn(out)
        deadline = time.monotonic() + timeout
        while "primed:" not in self.log.read_text(errors="replace")[offset:]:
            if self.process.poll() is not None or time.monotonic() > deadline:
                msg = f"the operator did not start; see {self.log}"
                raise RuntimeError(msg)
            time.sleep(0.2)

    def _spawn(self, out: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(  # noqa: S603 - argv built here
            [
                str(Path(sys.executable).parent / "berth"),
                "run",
                f"--kubeconfig={self.plane.kubeconfig}",
                f"--lease-duration={self.lease_duration}",
                "--metrics-port=0",
                f"--data-dir={self.data_dir}",
                *([f"--config={self.config}"] if self.config is not None else []),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )

    @property
    def data_dir(self) -> Path:
        """Its data directory (the embedded history store), beside its log."""
        return self.log.parent / "berth-data"

    @property
    def history_url(self) -> str:
        """The history store it records into."""
        return f"sqlite:///{self.data_dir / 'history.db'}"

    def metrics_url(self) -> str:
        """Where the running process serves ``/metrics`` (the last start's, from its log)."""
        found = re.findall(r"metrics served at (http://\S+/metrics)", self.log.read_text())
        if not found:
            msg = f"the operator logged no metrics address; see {self.log}"
            raise RuntimeError(msg)
        return str(found[-1])

    def kill(self) -> None:
        """SIGKILL it, as a crash would."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        """Stop it and remove its webhook configurations."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
        client = self.plane.kubectl()
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            with contextlib.suppress(errors.CommandError):
                client.run("delete", kind, "berth", "--ignore-not-found")


def flavor(
    name: str, labels: Mapping[str, str], tolerations: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": dict(labels)}  # a copy: edits leave shared labels alone
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_queue(
    name: str,
    namespace: str,
    quotas: dict[str, int],
    *,
    cohort: str | None = None,
    preemption: dict[str, str] | None = None,
    borrowing_limit: int | None = None,
) -> dict[str, Any]:
    """A ClusterQueue for ``namespace`` with GPU quota per flavor."""
    flavors = []
    for flavor_name, gpus in quotas.items():
        res: dict[str, Any] = {"name": kwok.GPU_RESOURCE, "nominalQuota": str(gpus)}
        if borrowing_limit is not None:
            res["borrowingLimit"] = str(borrowing_limit)
        flavors.append({"name": flavor_name, "resources": [res]})
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [{"coveredResources": [kwok.GPU_RESOURCE], "flavors": flavors}],
    }
    if cohort is not None:
        spec["cohortName"] = cohort
    if preemption is not None:
        spec["preemption"] = preemption
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue(name: str, namespace: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def gpu_job(
    name: str,
    namespace: str,
    queue: str,
    pods: int,
    *,
    runs_for: str,
    priority: str | None = None,
) -> dict[str, Any]:
    """A queued Job of ``pods`` parallel one-GPU pods that kwok runs for ``runs_for``."""
    labels = {QUEUE_LABEL: queue}
    if priority is not None:
        labels["berth.dev/priority-class"] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": kwok.pod_timing(runs_for)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "registry.invalid/train:never-pulled",
                            "resources": {"limits": {kwok.GPU_RESOURCE: "1"}},
                        }
                    ],
                },
            },
        },
    }


GPU_POOLS = (
    kwok.A100_POOL,
    dataclasses.replace(
        kwok.H100_POOL, taints=(kwok.Taint("berth.dev/flavor", "h100", "NoSchedule"),)
    ),
)
"""The e2e cluster's fake nodes: two pools, the H100 one tainted so only tolerating pods land."""


H100_TOLERATION = {
    "key": "berth.dev/flavor",
    "operator": "Equal",
    "value": "h100",
    "effect": "NoSchedule",
}
"""What the e2e cluster's tainted H100 pool needs."""


def two_pool_queue(ns: str) -> list[dict[str, Any]]:
    """Two flavors in one ClusterQueue that preempts lower priorities, and three classes.

    A100 with 1 GPU of quota and the tainted H100 with 8; LocalQueue ``lq``; classes ``NS-low``,
    ``NS-mid`` and ``NS-high``.
    """
    a100, h100 = f"{ns}-a100", f"{ns}-h100"
    return [
        flavor(a100, dict(kwok.A100_LABELS)),
        flavor(h100, dict(kwok.H100_LABELS), [H100_TOLERATION]),
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": f"{ns}-cq"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": [kwok.GPU_RESOURCE],
                        "flavors": [
                            {
                                "name": a100,
                                "resources": [{"name": kwok.GPU_RESOURCE, "nominalQuota": "1"}],
                            },
                            {
                                "name": h100,
                                "resources": [{"name": kwok.GPU_RESOURCE, "nominalQuota": "8"}],
                            },
                        ],
                    }
                ],
            },
        },
        local_queue("lq", ns, f"{ns}-cq"),
        priority_class(f"{ns}-low", 100),
        priority_class(f"{ns}-mid", 500),
        priority_class(f"{ns}-high", 1000),
    ]


def operator_with_frameworks(
    plane: launcher.ControlPlane, home: Path, frameworks: list[str]
) -> OperatorProcess:
    """``berth run`` on ``plane`` (CRDs installed) with these ``integrations.frameworks``."""
    plane.kubectl().run("apply", "-f", str(ROOT / "crds"))
    plane.kubectl().run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    config = home / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "berth.dev/v1beta1",
                "kind": "Configuration",
                "integrations": {"frameworks": frameworks},
            }
        )
    )
    operator = OperatorProcess(plane, home / "operator.log", config=config)
    operator.start()
    return operator


# Reading the cluster in tests -------------------------------------------------------------------


def get(plane: launcher.ControlPlane, *args: str) -> Any:
    """``kubectl get ARGS -o json``, parsed."""
    return plane.kubectl().json("get", *args)


def workload_of(plane: launcher.ControlPlane, ns: str, job: str) -> dict[str, Any]:
    """The Workload a Job owns, or ``{}`` while there is none."""
    for wl in get(plane, "workloads", "-n", ns)["items"]:
        if any(r.get("name") == job for r in wl["metadata"].get("ownerReferences", [])):
            return wl  # type: ignore[no-any-return]
    return {}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    """An object's status condition of this type, or ``{}``."""
    for c in (obj.get("status") or {}).get("conditions", []):
        if c["type"] == kind:
            return c  # type: ignore[no-any-return]
    return {}


def running_pods(plane: launcher.ControlPlane, ns: str, job: str) -> int:
    """How many of a Job's pods are Running and not being deleted."""
    items = get(plane, "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    return sum(
        1
        for p in items
        if not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") == "Running"
    )


def usage_is_zero(plane: launcher.ControlPlane, cq: str) -> bool:
    """Whether a ClusterQueue holds nothing any more: no workload counted, every total zero."""
    status = get(plane, "clusterqueue", cq).get("status") or {}
    totals = [
        int(r["total"])
        for key in ("flavorsReservation", "flavorsUsage")
        for f in status.get(key) or []
        for r in f["resources"]
    ]
    return (
        status.get("reservingWorkloads") == 0
        and status.get("admittedWorkloads") == 0
        and status.get("pendingWorkloads") == 0
        and all(t == 0 for t in totals)
    )


def history_run(url: str) -> store.RunData:
    """The latest history run the operator recorded in ``url``."""

    async def read() -> store.RunData | None:
        engine = await store.open_store(url)
        try:
            return await store.read_run(engine)
        finally:
            await engine.dispose()

    # On a loop of its own: the e2e tests poll this (through ``transitions``) inside wait_until.
    data = asyncio.run(read())
    assert data is not None, "the operator opened no history run"
    return data


def transitions(url: str, ns: str) -> list[tuple[str, str]]:
    """(kind, reason) of every history row of a namespace's workloads, in time order."""
    rows = sorted((r for r in history_run(url).events if r.namespace == ns), key=lambda r: r.t)
    return [(r.kind.value, r.reason) for r in rows]


def gpu_model_of_node(plane: launcher.ControlPlane) -> dict[str, str]:
    """Each node's ``nvidia.com/gpu.product`` label, by node name."""
    nodes = get(plane, "nodes")["items"]
    return {
        n["metadata"]["name"]: n["metadata"]["labels"].get("nvidia.com/gpu.product", "")
        for n in nodes
    }


def live_pods(plane: launcher.ControlPlane, ns: str, selector: str) -> list[dict[str, Any]]:
    """The pods a label selector finds that are not being deleted."""
    items = get(plane, "pods", "-n", ns, "-l", selector)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Those of ``pods`` that run."""
    return [p for p in pods if p["status"].get("phase") == "Running"]


def roles_on_models(
    plane: launcher.ControlPlane, pods: list[dict[str, Any]], role_label: str
) -> set[tuple[str, str]]:
    """(role, GPU model of its node) of each pod: where each role of a gang landed."""
    models = gpu_model_of_node(plane)
    return {(p["metadata"]["labels"][role_label], models[p["spec"]["nodeName"]]) for p in pods}


# Playing a webhook outage ---------------------------------------------------------------------

_CONFIGURATIONS = ("mutatingwebhookconfiguration", "validatingwebhookconfiguration")


@contextlib.contextmanager
def without_webhooks(
    plane: launcher.ControlPlane, kinds: tuple[str, ...] = _CONFIGURATIONS
) -> Iterator[None]:
    """Berth's webhook configurations of ``kinds`` deleted (as an admin would), then restored."""
    admin = plane.kubectl()
    saved = []
    for kind in kinds:
        obj = admin.json("get", kind, "berth")
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            obj["metadata"].pop(key, None)
        saved.append(obj)
        admin.run("delete", kind, "berth")
    try:
        yield
    finally:
        for obj in saved:
            with contextlib.suppress(errors.CommandError):
                admin.run("create", "-f", "-", stdin=yaml.safe_dump(obj))


def without_validating_webhook(
    plane: launcher.ControlPlane,
) -> contextlib.AbstractContextManager[None]:
    """Berth's validating webhook configuration deleted, then restored."""
    return without_webhooks(plane, ("validatingwebhookconfiguration",))


def event_reasons(plane: launcher.ControlPlane, ns: str, kind: str, name: str) -> set[str]:
    """The reasons of the Events on one object."""
    items = get(
        plane,
        "events",
        "-n",
        ns,
        "--field-selector",
        f"involvedObject.kind={kind},involvedObject.name={name}",
    )["items"]
    return {e["reason"] for e in items}


def team_on_two_pools(
    plane: launcher.ControlPlane, ns: str, directory: Path, rules: tuple[dict[str, Any], ...]
) -> adversary.NamespaceUser:
    """``two_pool_queue(ns)`` applied, and an ordinary user of ``ns`` with these extra rules."""
    plane.kubectl().apply(two_pool_queue(ns))
    return adversary.namespace_user(plane, ns, directory, extra_rules=rules)
