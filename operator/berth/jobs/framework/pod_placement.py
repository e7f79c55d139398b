"""The pod side of topology placement: pods held at Berth's gate, then pinned to their domains.

A placed pod set's pods are created behind Berth's scheduling gate (``gate_patch``, added by the
pod webhook); once the Workload is admitted, ``pin`` gives each waiting pod the node selector of
a domain of its ``core.topology.Assignment`` with room left, as Kueue's topology ungater does
(``pkg/controller/tas/topology_ungater.go``). Called by the operator's pod webhook, its ungater
and placed-pods index, and the pod-group integration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from berth.api import topology as api_topology
from berth.core import topology


def pin(
    assignment: topology.Assignment,
    pinned: Iterable[Mapping[str, str]],
    waiting: Iterable[str],
) -> dict[str, dict[str, str]]:
    """The node selector of each waiting pod that has a domain with room left (Kueue's ungater).

    ``pinned``: the node selectors of the pod set's pods already pinned and still active; each
    takes one place in the domain it names. Waiting pods, in the order given (their completion
    index, then name), fill the domains in the assignment's order, so neighbouring ranks share a
    domain. Pods beyond the assignment's counts stay waiting (a replacement waits for a place).
    """
    left = {d.values: d.count for d in assignment.domains}
    selectors = {d.values: assignment.node_selector(d) for d in assignment.domains}
    for selector in pinned:
        for values, wanted in selectors.items():
            if all(selector.get(k) == v for k, v in wanted.items()):
                left[values] -= 1
                break
    out: dict[str, dict[str, str]] = {}
    queue = iter(waiting)
    for d in assignment.domains:
        for _ in range(max(0, left[d.values])):
            name = next(queue, None)
            if name is None:
                return out
            out[name] = dict(selectors[d.values])
    return out


def gate_patch(pod: Mapping[str, object]) -> list[dict[str, object]]:
    """The JSON patch that holds a new placed pod at Berth's topology gate (none if it has it)."""
    spec = pod.get("spec")
    gates = spec.get("schedulingGates") if isinstance(spec, dict) else None
    gate = {"name": api_topology.GATE}
    if not isinstance(gates, list) or not gates:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [gate]}]
    if any(isinstance(g, dict) and g.get("name") == api_topology.GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": gate}]


def is_gated(pod: Mapping[str, object]) -> bool:
    """Tell whether a pod waits at Berth's topology gate."""
    spec = pod.get("spec")
    gates = spec.get("schedulingGates") if isinstance(spec, dict) else None
    return isinstance(gates, list) and any(
        isinstance(g, dict) and g.get("name") == api_topology.GATE for g in gates
    )
