"""Which children of an integrated parent may run: the ones its controller makes, no larger.

A child of an integrated parent (a JobSet's Jobs; a RayJob's RayCluster and submitter Job; a
TrainJob's JobSet) is never queued: it runs on its parent's admission. An object that only claims
the parent as its controller (an owner reference anyone may write) must therefore not run pods
that admission never counted. ``refusal`` says why a child is not one the parent's controller
makes, or None when it is: its name is one the controller gives (each integration's
``child_as_made``: ``jobset.child_as_made``, ``ray.child_as_made``, ``trainjob.child_as_made``),
and each of its pod sets stands for a pod set of the child as the controller makes it with

1. no more pods,
2. no larger request per pod, resource by resource (none the role does not request), and
3. every node selector entry of that pod set kept: the admitted flavor's node labels are there
   once the parent runs, so a child that drops them could land on another flavor's nodes.

Pure; called by the operator's job webhooks (``operator.webhooks``) before a child Job or
RayCluster of an admitted parent may run.
"""

from __future__ import annotations

from berth.api import quantity, workload
from berth.api.bodies import Body
from berth.jobs.framework import protocol
from berth.jobs.framework.protocol import Integration


def refusal(
    parent: Body, child: Body, child_kind: Integration, parent_kind: Integration
) -> str | None:
    """Why ``child`` is not a child ``parent``'s controller makes, no larger (None: it is)."""
    expected = (
        parent_kind.child_as_made(parent, child)
        if isinstance(parent_kind, protocol.Parent)
        else protocol.makes_no_children(parent)
    )
    if isinstance(expected, str):
        return expected
    wanted, _ = child_kind.to_workload(expected, uid="as-made")
    got, problems = child_kind.to_workload(child, uid="child")
    if got is None or wanted is None:
        return "; ".join(str(p) for p in problems) or "its pod sets cannot be read"
    roles = {ps.name: ps for ps in wanted.spec.pod_sets}
    found = []
    for pod_set in got.spec.pod_sets:
        role = roles.get(pod_set.name)
        if role is None:
            found.append(f"pod set {pod_set.name}: its controller makes no such pod set")
        else:
            found += _larger(pod_set, role)
    return "; ".join(found) or None


def _larger(pod_set: workload.PodSet, role: workload.PodSet) -> list[str]:
    where = f"pod set {pod_set.name}"
    found = []
    if pod_set.count > role.count:
        found.append(f"{where}: {pod_set.count} pods at once, more than the {role.count} made")
    allowed = role.template.spec.pod_requests()
    for resource, amount in sorted(pod_set.template.spec.pod_requests().items()):
        made = allowed.get(resource, 0)
        if amount > made:
            found.append(
                f"{where}: requests {resource} {quantity.format(resource, amount)} per pod, "
                f"more than the {quantity.format(resource, made)} made"
            )
    selector = pod_set.template.spec.node_selector
    for key, value in sorted(role.template.spec.node_selector.items()):
        if selector.get(key) != value:
            found.append(f"{where}: spec.template.spec.nodeSelector must keep {key}: {value}")
    return found
