"""An admission both ways: the core's ``Admission`` to a Workload's ``status.admission`` and back.

The operator writes an admission into the Workload's status and, after a restart, reads it back
to count the workload's usage again; both directions must agree, so they live side by side.
Pure; called by the operator's scheduler loop and its state intake.
"""

from __future__ import annotations

from typing import Any

from berth.api import quantity
from berth.api import workload as api_workload
from berth.core import resources, topology, workload


def to_status(adm: workload.Admission) -> dict[str, Any]:
    """Return ``status.admission`` (YAML shape) for an admission."""
    return {
        "clusterQueue": adm.cluster_queue,
        "podSetAssignments": [_pod_set_status(ps) for ps in adm.pod_sets],
    }


def _pod_set_status(ps: workload.PodSetAdmission) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": ps.name,
        "flavors": dict(sorted(ps.flavors.items())),
        "resourceUsage": quantity.format_list(dict(ps.requests)),
        "count": ps.count,
    }
    if ps.topology is not None:
        out["topologyAssignment"] = topology_status(ps.topology)
    return out


def topology_status(assignment: topology.Assignment) -> dict[str, Any]:
    """A placement in Kueue's ``topologyAssignment`` shape: levels, and pods per domain."""
    return {
        "levels": list(assignment.levels),
        "domains": [{"values": list(d.values), "count": d.count} for d in assignment.domains],
    }


def from_status(info: workload.WorkloadInfo, adm: api_workload.Admission) -> workload.Admission:
    """Rebuild the core's admission of ``info`` from its Workload's ``status.admission``.

    Requests are recomputed from the pod sets' per-pod requests and the admitted counts, so the
    usage counted after a restart is the usage counted when the admission was made.
    """
    by_name = {a.name: a for a in adm.pod_set_assignments}
    pod_sets: list[workload.PodSetAdmission] = []
    usage: resources.FlavorResourceAmounts = {}
    placed: list[topology.Placed] = []
    for ps in info.pod_sets:
        assigned = by_name.get(ps.name)
        if assigned is None:
            continue
        count = ps.count if assigned.count is None else assigned.count
        # What was written is what was counted (it includes ``pods`` when the queue covers it).
        requests = dict(assigned.resource_usage) or ps.total(count)
        flavors = dict(assigned.flavors)
        placement = topology.from_status(assigned.topology_assignment)
        pod_sets.append(workload.PodSetAdmission(ps.name, count, flavors, requests, placement))
        for res, flavor in flavors.items():
            fr = resources.FlavorResource(flavor, res)
            usage[fr] = usage.get(fr, 0) + requests.get(res, 0)
        if placement is not None:
            # A pod set has exactly one topology-aware flavor; the snapshot counts the placement
            # in that one and skips the others (they have no domains).
            placed.extend(
                topology.placed(flavor, placement, ps.per_pod)
                for flavor in sorted(set(flavors.values()))
            )
    return workload.Admission(adm.cluster_queue, tuple(pod_sets), usage, tuple(placed))
