"""A public trace replayed on a topology, packed or spread: GPUs stranded by fragmentation.

The cluster, as ``docs/benchmarks.md`` states it: the trace's capacity (``tracebench``) as nodes
of 8 GPUs, 4 hosts to a rack and 4 racks to a block; one topology-aware ResourceFlavor over all
of them and one ClusterQueue holding the whole capacity (BestEffortFIFO, no teams: the placement
is what is compared, not the quota; ``reclaimWithinCohort: Any`` as the trace benchmark's
queues, so a gang waiting for a domain holds no quota back from smaller jobs). Each job is one
Workload of pods of at most 8 GPUs (``tracebench.pod_shape``): one pod is placed anywhere
(implied: every flavor is topology-aware); a gang of up to a rack's GPUs requires one rack, up
to a block's one block, and a larger one prefers blocks.

The same jobs are replayed under two ``topologyProfile`` values: ``Mixed`` (packing: small pods
fill the fullest hosts, gangs take the tightest domain) and ``MostFreeCapacity`` (spreading).

**Stranded GPUs**: at each sample (every ``sample`` seconds of virtual time while jobs arrive),
the free GPUs that no waiting job could use: a free GPU counts as usable when it lies on a host
with room for a pod of some waiting job, inside a domain (at the level that job requires) with
room for all of that job's pods. The figure is their average over the samples, as GPUs and as a
share of the capacity; with nothing waiting, nothing is stranded. Host usage is rebuilt from the
replay's events (each admission's ``topologyAssignment``, released at its finish or eviction).
Used by ``berth bench topology``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

from berth.api import base, configuration, names
from berth.devtools import tracebench
from berth.sim import documents, engine

HOSTS_PER_RACK = 4
RACKS_PER_BLOCK = 4
BLOCK = "example.com/block"
RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"
PROFILES = (configuration.TopologyProfile.MIXED, configuration.TopologyProfile.MOST_FREE_CAPACITY)


@dataclasses.dataclass(frozen=True, slots=True)
class Host:
    """A node: its name and the domains it is in."""

    name: str
    rack: str
    block: str


def hosts(capacity: int) -> list[Host]:
    """Nodes of 8 GPUs for ``capacity`` GPUs, 4 to a rack, 4 racks to a block."""
    out = []
    for i in range(math.ceil(capacity / tracebench.GPUS_PER_NODE)):
        rack, block = i // HOSTS_PER_RACK, i // (HOSTS_PER_RACK * RACKS_PER_BLOCK)
        out.append(Host(f"h{i:04d}", f"r{rack:03d}", f"b{block:02d}"))
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    """What a job asks of the topology: pods, GPUs per pod, and the level all must share."""

    pods: int
    per_pod: int
    level: str | None
    """RACK or BLOCK when required; None when any hosts do."""


def shape(gpus: int) -> Shape:
    """A trace job's placement: one pod anywhere; a gang inside a rack, else a block."""
    pods, per_pod = tracebench.pod_shape(gpus)
    if pods == 1:
        return Shape(pods, per_pod, None)
    rack = HOSTS_PER_RACK * tracebench.GPUS_PER_NODE
    if gpus <= rack:
        return Shape(pods, per_pod, RACK)
    if gpus <= rack * RACKS_PER_BLOCK:
        return Shape(pods, per_pod, BLOCK)
    return Shape(pods, per_pod, None)  # larger than a block: it prefers blocks, may spread


def _annotations(s: Shape, gpus: int) -> dict[str, str]:
    if s.level is not None:
        return {"berth.dev/podset-required-topology": s.level}
    if s.pods > 1 and gpus > HOSTS_PER_RACK * RACKS_PER_BLOCK * tracebench.GPUS_PER_NODE:
        return {"berth.dev/podset-preferred-topology": BLOCK}
    return {}


def scenario(
    jobs: Sequence[tracebench.TraceJob], capacity: int, profile: configuration.TopologyProfile
) -> list[documents.Document]:
    """The replay's documents: Configuration, Topology, nodes and queue at t=0, then the jobs."""
    gpu = tracebench.RESOURCE
    nodes = hosts(capacity)
    raws: list[dict[str, Any]] = [
        {
            "apiVersion": base.API_VERSION,
            "kind": "Configuration",
            "metadata": {"name": "config"},
            "topologyProfile": profile.value,
            "waitForPodsReady": None,
        },
        {
            "apiVersion": base.API_VERSION,
            "kind": "Topology",
            "metadata": {"name": "dc"},
            "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
        {
            "apiVersion": base.API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": tracebench.FLAVOR},
            "spec": {"nodeLabels": {"pool": "gpu"}, "topologyName": "dc"},
        },
        {
            "apiVersion": base.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": "all"},
            "spec": {
                "namespaceSelector": {},
                # As the trace benchmark's queues: a gang that waits holds no quota back.
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
                "resourceGroups": [
                    {
                        "coveredResources": [gpu],
                        "flavors": [
                            {
                                "name": tracebench.FLAVOR,
                                "resources": [
                                    {"name": gpu, "nominalQuota": len(nodes) * 8},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": base.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "trace"},
            "spec": {"clusterQueue": "all"},
        },
    ]
    raws += [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": h.name,
                "labels": {"pool": "gpu", BLOCK: h.block, RACK: h.rack, HOST: h.name},
            },
            "status": {"allocatable": {gpu: str(tracebench.GPUS_PER_NODE), "pods": "110"}},
        }
        for h in nodes
    ]
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for i, job in enumerate(jobs):
        s = shape(job.gpus)
        raw = {
            "apiVersion": base.API_VERSION,
            "kind": "Workload",
            "metadata": {"name": f"job-{i}", "namespace": "trace"},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": s.pods,
                        "template": {
                            "metadata": {"annotations": _annotations(s, job.gpus)},
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {gpu: s.per_pod}}}
                                ]
                            },
                        },
                    }
                ],
            },
        }
        docs.append(documents.generated(raw, len(docs), at=job.arrival, run_for=job.duration))
    return docs


@dataclasses.dataclass(frozen=True, slots=True)
class Figures:
    """What one replay on the topology measured."""

    profile: configuration.TopologyProfile
    stranded: float
    """Average GPUs free but usable by no waiting job, over the samples."""
    capacity: int
    utilisation: float
    mean_wait: dict[str, float]
    """Mean time queued by gang-size bucket."""
    cpu_seconds: float

    @property
    def stranded_share(self) -> float:
        """Stranded GPUs as a share of the capacity."""
        return self.stranded / self.capacity if self.capacity else 0.0


def replay(
    jobs: Sequence[tracebench.TraceJob],
    capacity: int,
    profile: configuration.TopologyProfile,
    *,
    sample: float = 600.0,
) -> Figures:
    """Replay ``jobs`` on the topology under ``profile`` and measure fragmentation."""
    nodes = hosts(capacity)
    real = len(nodes) * tracebench.GPUS_PER_NODE
    sim = engine.Simulator(scenario(jobs, real, profile))
    started = time.process_time()
    events = sim.run()
    cpu = time.process_time() - started
    waits: dict[str, list[float]] = {b.name: [] for b in tracebench.BUCKETS}
    for i, job in enumerate(jobs):
        wl = sim.workloads.get(names.WorkloadKey("trace", f"job-{i}"))
        if wl is not None and wl.waited:
            waits[tracebench.bucket_of(job.gpus).name].append(sum(wl.waited))
    window = max((j.arrival for j in jobs), default=0.0)
    gpus = {f"trace/job-{i}": j.gpus for i, j in enumerate(jobs)}
    held, _, _ = tracebench.gpu_seconds(events, gpus, window)
    return Figures(
        profile=profile,
        stranded=stranded(events, jobs, nodes, sample=sample),
        capacity=real,
        utilisation=held / (real * window) if window > 0 else 0.0,
        mean_wait={k: statistics.fmean(v) if v else 0.0 for k, v in waits.items()},
        cpu_seconds=cpu,
    )


def stranded(
    events: Sequence[dict[str, Any]],
    jobs: Sequence[tracebench.TraceJob],
    nodes: Sequence[Host],
    *,
    sample: float,
) -> float:
    """Average free GPUs usable by no waiting job, sampled every ``sample`` seconds."""
    window = max((j.arrival for j in jobs), default=0.0)
    if window <= 0:
        return 0.0
    used = {h.name: 0 for h in nodes}
    held: dict[str, list[tuple[str, int]]] = {}
    waiting: dict[str, Shape] = {}
    shapes = {f"trace/job-{i}": shape(j.gpus) for i, j in enumerate(jobs)}
    arrivals = sorted((j.arrival, f"trace/job-{i}") for i, j in enumerate(jobs))
    timeline = sorted(
        (float(e["t"]), n, e)
        for n, e in enumerate(events)
        if e["event"] in {"Admitted", "Finished", "Evicted", "Requeued"}
    )
    samples: list[int] = []
    a = t_i = 0
    at = 0.0
    while at <= window:
        while a < len(arrivals) and arrivals[a][0] <= at:
            waiting[arrivals[a][1]] = shapes[arrivals[a][1]]
            a += 1
        while t_i < len(timeline) and timeline[t_i][0] <= at:
            _apply(timeline[t_i][2], used, held, waiting, shapes)
            t_i += 1
        samples.append(_stranded_now(nodes, used, set(waiting.values())))
        at += sample
    return statistics.fmean(samples) if samples else 0.0


def _apply(
    e: dict[str, Any],
    used: dict[str, int],
    held: dict[str, list[tuple[str, int]]],
    waiting: dict[str, Shape],
    shapes: dict[str, Shape],
) -> None:
    name = str(e.get("workload"))
    if e["event"] == "Admitted":
        waiting.pop(name, None)
        s = shapes.get(name)
        per_pod = s.per_pod if s else 0
        places = [
            (str(d["values"][-1]), int(d["count"]) * per_pod)
            for ps in e.get("podSets") or []
            for d in (ps.get("topologyAssignment") or {}).get("domains") or []
        ]
        for host, gpus in places:
            used[host] = used.get(host, 0) + gpus
        held[name] = places
    elif e["event"] in {"Finished", "Evicted"}:
        for host, gpus in held.pop(name, []):
            used[host] -= gpus
    elif e["event"] == "Requeued" and name in shapes:
        waiting[name] = shapes[name]


def _stranded_now(nodes: Sequence[Host], used: dict[str, int], shapes: set[Shape]) -> int:
    free = {h.name: tracebench.GPUS_PER_NODE - used.get(h.name, 0) for h in nodes}
    total = sum(free.values())
    if not shapes or not total:
        return 0
    usable: set[str] = set()
    for s in shapes:
        fits = {h.name for h in nodes if free[h.name] >= s.per_pod}
        if s.level is None:
            usable |= fits
            continue
        room: dict[str, int] = {}
        for h in nodes:
            if h.name in fits:
                key = h.rack if s.level == RACK else h.block
                room[key] = room.get(key, 0) + free[h.name] // s.per_pod
        for h in nodes:
            key = h.rack if s.level == RACK else h.block
            if h.name in fits and room.get(key, 0) >= s.pods:
                usable.add(h.name)
    return total - sum(free[h] for h in usable)
