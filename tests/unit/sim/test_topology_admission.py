"""Topology-aware admission end to end in the simulator: placement, fragmentation, preemption.

Scenarios are built here (nodes of 2 blocks x 2 racks x 4 hosts of 8 GPUs, one topology-aware
flavor) and run through ``berth simulate``; the Admitted events carry each pod set's
``topologyAssignment``. Rules: Kueue's TAS (``pkg/scheduler/flavorassigner/flavorassigner.go``
after quota: a failed placement makes the pod set Preempt, and NoFit with
``TopologyPlacementFailed`` when it fails even on an empty cluster;
``pkg/scheduler/preemption/preemption.go`` ``workloadFits`` checks the placement with the
victims gone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from berth.entry import cli

RACK = "example.com/rack"
REQUIRED = "berth.dev/podset-required-topology"
PREFERRED = "berth.dev/podset-preferred-topology"

HEAD = """\
apiVersion: berth.dev/v1beta1
kind: Topology
metadata: {name: dc}
spec:
  levels:
  - nodeLabel: example.com/block
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {gpu: h100}
  topologyName: dc
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: QUOTA}
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: ml}
spec: {clusterQueue: cq}
---
apiVersion: berth.dev/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
"""


def _nodes(blocks: int = 2, racks: int = 2, hosts: int = 4) -> str:
    out = []
    for b in range(1, blocks + 1):
        for r in range(1, racks + 1):
            for h in range(1, hosts + 1):
                name = f"b{b}-r{r}-h{h}"
                out.append(
                    f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{gpu: h100, example.com/block: b{b}, {RACK}: b{b}-r{r}, kubernetes.io/hostname: {name}}}
status:
  allocatable: {{nvidia.com/gpu: "8", cpu: "64"}}
"""
                )
    return "".join(out)


def _job(
    name: str,
    pods: int,
    at: int,
    *,
    annotations: dict[str, str] | None = None,
    host: str | None = None,
    priority: str | None = None,
) -> str:
    meta = json.dumps({"annotations": annotations or {}})
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
    }
    if host is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": host}
    labels = {"berth.dev/queue-name": "q"}
    if priority is not None:
        labels["berth.dev/priority-class"] = priority
    return f"""---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: ml
  labels: {json.dumps(labels)}
  annotations: {{sim.berth.dev/at: "{at}", sim.berth.dev/duration: "1000"}}
spec:
  parallelism: {pods}
  completions: {pods}
  template:
    metadata: {meta}
    spec: {json.dumps(spec)}
"""


def _simulate(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    result = CliRunner().invoke(cli.main, ["simulate", str(path)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _hosts(event: dict[str, Any]) -> list[str]:
    (pod_set,) = event["podSets"]
    assignment = pod_set["topologyAssignment"]
    assert assignment["levels"] == ["kubernetes.io/hostname"]
    return [d["values"][0] for d in assignment["domains"] for _ in range(d["count"])]


def _first(events: list[dict[str, Any]], event: str, job: str) -> dict[str, Any]:
    return next(e for e in events if e["event"] == event and e.get("job") == f"ml/{job}")


def test_gangs_are_placed_packed_and_inside_the_level_they_require(tmp_path: Path) -> None:
    """Packing, a rack-bound gang, one too big for any rack, and a preferred spread.

    Unconstrained pods pack the fullest hosts first; a rack-bound gang lands in one rack; one
    too big for any rack never fits (even though quota does); a preferred one spreads over as
    few racks as it can.
    """
    events = _simulate(
        tmp_path,
        HEAD.replace("QUOTA", "128")
        + _nodes()
        + _job("fill", 5, 1)
        + _job("gang", 4, 2, annotations={REQUIRED: RACK})
        + _job("big", 5, 3, annotations={REQUIRED: RACK})
        + _job("spread", 5, 4, annotations={PREFERRED: RACK}),
    )
    fill = _hosts(_first(events, "Admitted", "fill"))
    assert fill == ["b1-r1-h1", "b1-r1-h2", "b1-r1-h3", "b1-r1-h4", "b1-r2-h1"]
    gang = _hosts(_first(events, "Admitted", "gang"))
    assert {h.rsplit("-", 1)[0] for h in gang} == {"b2-r1"}
    assert len(set(gang)) == 4
    big = _first(events, "Pending", "big")
    assert big["reason"] == "TopologyPlacementFailed"
    assert "allows to fit only 4 out of 5 pod(s) at level example.com/rack" in big["message"]
    assert not [e for e in events if e["event"] == "Admitted" and e["job"] == "ml/big"]
    spread = _hosts(_first(events, "Admitted", "spread"))
    assert sorted(spread) == ["b1-r2-h2", "b1-r2-h3", "b1-r2-h4", "b2-r2-h1", "b2-r2-h2"]
    every = fill + gang + spread
    assert len(every) == len(set(every)), "a host got more pods than it has GPUs for"


def test_a_gang_waits_for_a_domain_although_quota_fits(tmp_path: Path) -> None:
    """Quota but no whole rack: the rack-bound gang waits until one rack is free.

    Pods pinned to one host in each rack leave quota free; the gang's reason is WaitingForQuota
    and its message names the level.
    """
    events = _simulate(
        tmp_path,
        HEAD.replace("QUOTA", "32")
        + _nodes(blocks=1, racks=2, hosts=2)
        + _job("left", 1, 1, host="b1-r1-h1")
        + _job("right", 1, 2, host="b1-r2-h2").replace('duration: "1000"', 'duration: "50"')
        + _job("gang", 2, 3, annotations={REQUIRED: RACK}),
    )
    pending = _first(events, "Pending", "gang")
    assert pending["reason"] == "WaitingForQuota"
    assert "at level example.com/rack" in pending["message"]
    admitted = _first(events, "Admitted", "gang")
    assert admitted["t"] == 52.0
    assert _hosts(admitted) == ["b1-r2-h1", "b1-r2-h2"]


def test_a_higher_priority_gang_preempts_to_free_one_domain(tmp_path: Path) -> None:
    """Quota fits but no rack is whole: a high-priority gang preempts to free one rack.

    One pinned low-priority pod is enough to free a rack; the gang then lands in that rack.
    """
    events = _simulate(
        tmp_path,
        HEAD.replace("QUOTA", "32")
        + _nodes(blocks=1, racks=2, hosts=2)
        + _job("left", 1, 1, host="b1-r1-h1")
        + _job("right", 1, 2, host="b1-r2-h2")
        + _job("urgent", 2, 3, annotations={REQUIRED: RACK}, priority="high"),
    )
    preempted = [e for e in events if e["event"] == "Preempted"]
    assert len(preempted) == 1
    victim = preempted[0]["job"].removeprefix("ml/")
    admitted = _first(events, "Admitted", "urgent")
    rack = "b1-r1" if victim == "left" else "b1-r2"
    assert _hosts(admitted) == [f"{rack}-h1", f"{rack}-h2"]


def test_a_job_with_a_bad_placement_annotation_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(
        HEAD.replace("QUOTA", "8")
        + _nodes(blocks=1, racks=1, hosts=1)
        + _job("odd", 1, 1, annotations={REQUIRED: RACK, "berth.dev/podset-slice-size": "0"})
    )
    result = CliRunner().invoke(cli.main, ["simulate", str(path)])
    assert result.exit_code != 0
    assert "annotations[berth.dev/podset-slice-size]" in result.output
    assert "Traceback" not in result.output


def test_explain_names_the_level_and_the_closest_domain(tmp_path: Path) -> None:
    """``berth explain`` on a gang no rack can hold says which rack came closest."""
    path = tmp_path / "scenario.yaml"
    path.write_text(
        HEAD.replace("QUOTA", "128")
        + _nodes()
        + _job("fill", 5, 1)
        + _job("big", 5, 3, annotations={REQUIRED: RACK})
    )
    result = CliRunner().invoke(
        cli.main, ["explain", "--scenario", str(path), "--at", "5", "-n", "ml", "job/big"]
    )
    assert result.exit_code == 0, result.output
    assert "TopologyPlacementFailed" in result.output
    assert "at level example.com/rack (the largest domain, b1/b1-r1, has room for 4 pod(s))" in (
        result.output
    )
