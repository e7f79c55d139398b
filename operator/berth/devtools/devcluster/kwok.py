"""Fake GPU nodes: node pools, the Node objects kwok manages, and kwok's command line.

kwok keeps whatever capacity a Node is created with (``nvidia.com/gpu: 8``), marks the nodes
Ready, keeps their leases, and walks pods through its "general" stages: Running, then (Job pods
and, by the project's own stage in ``member-pod-stages.yaml``, pod group members only)
Succeeded, each stage after a delay read from the pod's annotations (`pod_timing`). The
launcher creates the nodes and starts kwok; ``berth dev up`` parses ``--pool`` with `parse_pool`.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource the fake nodes offer."""

FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
"""The annotation kwok is told to manage nodes by; real nodes never carry it."""

POOL_LABEL = "berth.dev/node-pool"
"""The label naming a fake node's pool, so flavors and tests can select a pool."""

_STAGES_BEFORE_RUNNING = ("pod-create", "pod-ready")


def pod_timing(runs_for: str, starts_after: str = "0s") -> dict[str, str]:
    """Return pod annotations that make kwok run a pod after ``starts_after`` for ``runs_for``.

    Both are Go durations such as ``"5s"`` or ``"1h"``; only a Job's pods and pod group members
    ever succeed. kwok waits ``delay`` plus a random share of ``jitter-delay - delay``, but only
    ``jitter-delay`` when that is the smaller; the stages default to a 5s jitter, so both are set
    to one value.
    """
    out: dict[str, str] = {}
    for stage in _STAGES_BEFORE_RUNNING:
        out[f"{stage}.stage.kwok.x-k8s.io/delay"] = starts_after
        out[f"{stage}.stage.kwok.x-k8s.io/jitter-delay"] = starts_after
    out["pod-complete.stage.kwok.x-k8s.io/delay"] = runs_for
    out["pod-complete.stage.kwok.x-k8s.io/jitter-delay"] = runs_for
    return out


NODE_LEASE_SECONDS = 40
"""The fake nodes' Lease duration, the kubelet's default; kwok renews each lease well within it."""

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclasses.dataclass(frozen=True, slots=True)
class Taint:
    """A node taint."""

    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, text: str) -> Taint:
        """Parse ``key[=value]:Effect``, as kubectl taint writes it."""
        head, sep, effect = text.rpartition(":")
        if not sep or effect not in _EFFECTS or not head:
            raise ValueError(f"taint {text!r}: want key[=value]:{'|'.join(_EFFECTS)}")
        key, _, value = head.partition("=")
        return cls(key=key, value=value, effect=effect)

    def to_dict(self) -> dict[str, str]:
        """Return the taint as it appears in a Node's spec."""
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class NodePool:
    """A set of identical fake nodes named ``<name>-<i>``."""

    name: str
    nodes: int = 2
    gpus_per_node: int = 8
    cpu: str = "64"
    memory: str = "512Gi"
    pods: int = 110
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or self.nodes < 0 or self.gpus_per_node < 0:
            raise ValueError(f"node pool {self.name!r}: a name and non-negative counts are needed")

    @property
    def gpus(self) -> int:
        """The pool's GPUs in all."""
        return self.nodes * self.gpus_per_node


A100_LABELS: Mapping[str, str] = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
"""The node label GPU Feature Discovery puts on A100 nodes (what A100 flavors select)."""
H100_LABELS: Mapping[str, str] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
"""The same for H100 nodes."""
A100_POOL = NodePool(name="a100", nodes=2, gpus_per_node=8, labels=A100_LABELS)
"""Two 8-GPU A100 nodes: the GPU pool of ``berth up`` and of the e2e cluster."""
H100_POOL = NodePool(name="h100", nodes=2, gpus_per_node=8, labels=H100_LABELS)
"""Two untainted 8-GPU H100 nodes."""


def parse_pool(spec: str) -> NodePool:
    """Parse ``name=a100,nodes=2,gpus=8,label=k=v,taint=k=v:NoSchedule`` (label and taint repeat).

    Other keys: ``cpu``, ``memory``, ``pods``. Only ``name`` is required.
    """
    fields: dict[str, str] = {}
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"pool {spec!r}: {part!r} is not key=value")
        if key == "label":
            label_key, label_sep, label_value = value.partition("=")
            if not label_sep or not label_key:
                raise ValueError(f"pool {spec!r}: label {value!r} is not key=value")
            labels[label_key] = label_value
        elif key == "taint":
            taints.append(Taint.parse(value))
        elif key in ("name", "nodes", "gpus", "cpu", "memory", "pods"):
            fields[key] = value
        else:
            raise ValueError(f"pool {spec!r}: unknown key {key!r}")
    if "name" not in fields:
        raise ValueError(f"pool {spec!r}: name= is required")
    try:
        return NodePool(
            name=fields["name"],
            nodes=int(fields.get("nodes", "2")),
            gpus_per_node=int(fields.get("gpus", "8")),
            cpu=fields.get("cpu", "64"),
            memory=fields.get("memory", "512Gi"),
            pods=int(fields.get("pods", "110")),
            labels=labels,
            taints=tuple(taints),
        )
    except ValueError as e:
        raise ValueError(f"pool {spec!r}: {e}") from e


def node_manifests(pools: Iterable[NodePool]) -> list[dict[str, Any]]:
    """Return the Node objects for ``pools``, capacity in their status as kwok expects."""
    nodes: list[dict[str, Any]] = []
    for pool in pools:
        capacity = {"cpu": pool.cpu, "memory": pool.memory, "pods": str(pool.pods)}
        if pool.gpus_per_node:
            capacity[GPU_RESOURCE] = str(pool.gpus_per_node)
        for index in range(pool.nodes):
            name = f"{pool.name}-{index}"
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                POOL_LABEL: pool.name,
                **pool.labels,
            }
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": labels,
                        "annotations": {
                            FAKE_NODE_ANNOTATION[0]: FAKE_NODE_ANNOTATION[1],
                            "node.alpha.kubernetes.io/ttl": "0",
                        },
                    },
                    "spec": {"taints": [t.to_dict() for t in pool.taints]},
                    "status": {
                        "capacity": capacity,
                        "allocatable": dict(capacity),
                        "phase": "Running",
                        "nodeInfo": {
                            "architecture": "amd64",
                            "operatingSystem": "linux",
                            "kubeletVersion": "fake",
                            "kubeProxyVersion": "fake",
                        },
                    },
                }
            )
    return nodes


MEMBER_STAGES = pathlib.Path(__file__).with_name("member-pod-stages.yaml")
"""The project's own stage: a pod group's members succeed as a Job's pods do."""


def argv(kwok: Path, kubeconfig: Path, pod_stages: Path) -> list[str]:
    """Return kwok's command line: manage only annotated nodes, with the general pod stages."""
    key, value = FAKE_NODE_ANNOTATION
    return [
        str(kwok),
        f"--kubeconfig={kubeconfig}",
        f"--config={pod_stages}",
        f"--config={MEMBER_STAGES}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={key}={value}",
        # Pod IPs come from a range apart from the service range the API server uses.
        "--cidr=10.244.0.1/16",
        "--node-ip=10.244.0.1",
        # Without it kwok renews no node Lease and only posts node status every ten minutes, so
        # kube-controller-manager marks every node NotReady (and taints it) after 40 seconds.
        f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
        # No --server-address and no --node-port: kwok then serves nothing, so it opens no port.
    ]
