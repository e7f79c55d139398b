"""Small scenarios for the observability tests, written out as YAML text."""

from __future__ import annotations

import textwrap


def cluster_queue(
    *,
    flavor: str = "a100",
    strategy: str = "BestEffortFIFO",
    selector: str = "{}",
    within: str = "LowerPriority",
) -> str:
    """One ClusterQueue with 4 GPUs of ``flavor``."""
    return textwrap.dedent(f"""\
        apiVersion: berth.dev/v1beta1
        kind: ClusterQueue
        metadata:
          name: gpu-cq
        spec:
          namespaceSelector: {selector}
          queueingStrategy: {strategy}
          preemption:
            withinClusterQueue: {within}
          resourceGroups:
          - coveredResources: [nvidia.com/gpu]
            flavors:
            - name: {flavor}
              resources:
              - name: nvidia.com/gpu
                nominalQuota: 4
        """)


FLAVOR = """\
apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata:
  name: a100
"""

LOCAL_QUEUE = """\
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata:
  name: training
  namespace: ml
spec:
  clusterQueue: gpu-cq
"""


def workload(name: str, gpus: int, *, at: str = "0s", duration: str | None = None) -> str:
    """A Workload in ml/training asking for ``gpus`` GPUs (one pod each)."""
    runs = f"\n    sim.berth.dev/duration: {duration}" if duration else ""
    return (
        textwrap.dedent(f"""\
        apiVersion: berth.dev/v1beta1
        kind: Workload
        metadata:
          name: {name}
          namespace: ml
          annotations:
            sim.berth.dev/at: {at}""")
        + runs
        + textwrap.dedent(f"""
        spec:
          queueName: training
          podSets:
          - name: main
            count: {gpus}
            template:
              spec:
                containers:
                - name: c
                  image: busybox
                  resources:
                    requests:
                      nvidia.com/gpu: 1
        """)
    )


def stream(*docs: str) -> str:
    """Join documents into one YAML stream."""
    return "---\n".join(docs)
