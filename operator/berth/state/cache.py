"""The scheduler cache: queue, cohort and flavor objects, namespaces, and admitted workloads.

Fed by events (``upsert_*``/``delete_*``), it keeps one ``core.snapshot.Snapshot`` current: the
quota tree is rebuilt when queues, cohorts, flavors, Topologies or nodes change (with the domains
of each topology-aware flavor, ``berth.core.topology``), and admitted usage is added or
removed as workloads are assumed, forgotten, evicted or finished. ``assume`` records an admission
before it is written anywhere, so a failed write can be undone with ``forget``. Used by the
operator's scheduler loop and the simulator alike; no I/O, no clock.
"""

from __future__ import annotations

import dataclasses

from berth.api import clusterqueue, cohort, conditions, localqueue, names, resourceflavor
from berth.api import node as api_node
from berth.api import quota as api_quota
from berth.api import topology as api_topology
from berth.core import quota, resources, topology, workload
from berth.core import snapshot as core_snapshot

_ACTIVE = conditions.QueueActiveReason


@dataclasses.dataclass(frozen=True, slots=True)
class QueueBlocker:
    """Why a workload cannot be considered at all, before any quota is looked at."""

    reason: str
    message: str


def _quota_table(
    groups: list[api_quota.ResourceGroup],
) -> dict[resources.FlavorResource, quota.Quota]:
    out: dict[resources.FlavorResource, quota.Quota] = {}
    for (flavor, res), q in api_quota.quota_table(groups).items():
        out[resources.FlavorResource(names.FlavorName(flavor), names.ResourceName(res))] = (
            quota.Quota(q.nominal_quota, q.borrowing_limit, q.lending_limit)
        )
    return out


class Cache:
    """Objects and admitted workloads, with a live snapshot for the core."""

    def __init__(self) -> None:
        self.flavors: dict[names.FlavorName, resourceflavor.ResourceFlavor] = {}
        self.cluster_queues: dict[names.ClusterQueueName, clusterqueue.ClusterQueue] = {}
        self.cohorts: dict[names.CohortName, cohort.Cohort] = {}
        self.local_queues: dict[tuple[str, str], localqueue.LocalQueue] = {}
        self.topologies: dict[str, api_topology.Topology] = {}
        self.nodes: dict[str, topology.Node] = {}
        self.other_usage: dict[str, resources.Requests] = {}
        """Per node: what pods Berth does not place by topology request there."""
        self.admitted: dict[names.WorkloadKey, core_snapshot.AdmittedWorkload] = {}
        self._snapshot = core_snapshot.Snapshot()
        self._stale = False
        self.invalid_cluster_queues: dict[names.ClusterQueueName, str] = {}
        """ClusterQueues the validators refuse, with their field errors (kept inactive)."""
        self.refused: dict[tuple[str, str], str] = {}
        """ResourceFlavors and Topologies stored past the webhook that the validators refuse,
        by (kind, name), with their field errors: not applied, and the ClusterQueues naming
        them say why they are inactive."""
        self.generations: dict[str, int] = {}
        """A counter per root of the quota tree, bumped whenever usage or quota there changes."""
        self.revision = 0
        """Bumped by the other changes a Backfill plan depends on: a workload marked evicted (it
        ends now), an admitted workload's info, a namespace's labels."""

    # Objects ----------------------------------------------------------------------------------

    def upsert_flavor(self, obj: resourceflavor.ResourceFlavor) -> None:
        """Add or replace a ResourceFlavor."""
        self.flavors[names.FlavorName(obj.name)] = obj
        self._stale = True

    def delete_flavor(self, name: str) -> None:
        """Remove a ResourceFlavor."""
        self.flavors.pop(names.FlavorName(name), None)
        self._stale = True

    def upsert_topology(self, obj: api_topology.Topology) -> None:
        """Add or replace a Topology."""
        self.topologies[obj.name] = obj
        self._stale = True

    def delete_topology(self, name: str) -> None:
        """Remove a Topology."""
        self.topologies.pop(name, None)
        self._stale = True

    def upsert_node(self, node: topology.Node) -> bool:
        """Add or replace a node (its labels, allocatable, taints, readiness); True if changed."""
        if self.nodes.get(node.name) == node:
            return False  # a heartbeat: nothing placement reads
        self.nodes[node.name] = node
        self._stale = True
        return True

    def delete_node(self, name: str) -> bool:
        """Remove a node; True if it was known."""
        if self.nodes.pop(name, None) is None:
            return False
        self._stale = True
        return True

    def set_other_usage(self, node: str, requests: resources.Requests) -> bool:
        """Record what pods not placed by Berth request on a node.

        The room of the node's domain changes in place (pods come and go far more often than
        nodes or queues, so no rebuild). Returns whether the node is in a topology-aware flavor.
        """
        old = self.other_usage.get(node, {})
        if old == requests:
            return False
        if requests:
            self.other_usage[node] = dict(requests)
        else:
            self.other_usage.pop(node, None)
        if self._stale:
            # The rebuild reads the new usage; whether the node is placed is known only then.
            return bool(self.topologies) and node in self.nodes
        placed = False
        for fp in self._snapshot.placements.values():
            leaf = fp.tree.leaf_of_node.get(node)
            if leaf is None:
                continue
            placed = True
            free = fp.tree.free[leaf]
            for res in {*old, *requests}:
                free[res] = free.get(res, 0) + old.get(res, 0) - requests.get(res, 0)
        return placed

    def upsert_cluster_queue(
        self, obj: clusterqueue.ClusterQueue, *, invalid: str | None = None
    ) -> None:
        """Add or replace a ClusterQueue; ``invalid``: the field errors that make it unusable.

        An invalid ClusterQueue is kept by name with none of its spec (no quota, no cohort,
        nothing half-applied) and inactive with ``invalid`` as the message of its condition.
        """
        name = names.ClusterQueueName(obj.name)
        if invalid is None:
            self.invalid_cluster_queues.pop(name, None)
            self.cluster_queues[name] = obj
        else:
            self.invalid_cluster_queues[name] = invalid
            self.cluster_queues[name] = clusterqueue.ClusterQueue(metadata=obj.metadata)
        self._stale = True

    def delete_cluster_queue(self, name: str) -> None:
        """Remove a ClusterQueue."""
        self.cluster_queues.pop(names.ClusterQueueName(name), None)
        self.invalid_cluster_queues.pop(names.ClusterQueueName(name), None)
        self._stale = True

    def upsert_cohort(self, obj: cohort.Cohort) -> None:
        """Add or replace a Cohort."""
        self.cohorts[names.CohortName(obj.name)] = obj
        self._stale = True

    def delete_cohort(self, name: str) -> None:
        """Remove a Cohort (it lives on implicitly while queues name it)."""
        self.cohorts.pop(names.CohortName(name), None)
        self._stale = True

    def upsert_local_queue(self, obj: localqueue.LocalQueue) -> None:
        """Add or replace a LocalQueue."""
        self.local_queues[(obj.metadata.namespace or "default", obj.name)] = obj

    def delete_local_queue(self, namespace: str, name: str) -> None:
        """Remove a LocalQueue."""
        self.local_queues.pop((namespace, name), None)

    def upsert_namespace(self, name: str, labels: dict[str, str]) -> None:
        """Add or relabel a namespace."""
        merged = dict(labels)
        merged.setdefault("kubernetes.io/metadata.name", name)
        # The snapshot shares this mapping, so a namespace change needs no rebuild.
        self._snapshot.namespaces[name] = merged
        self.revision += 1

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        """A namespace's labels, or None if it does not exist."""
        return self._snapshot.namespaces.get(name)

    def delete_namespace(self, name: str) -> None:
        """Remove a namespace."""
        self._snapshot.namespaces.pop(name, None)
        self.revision += 1

    def upsert(self, obj: object) -> bool:
        """Add or replace a queue object of any kind the cache holds; False for other kinds.

        A LocalQueue's namespace exists from then on (with no labels until it is seen).
        """
        if isinstance(obj, resourceflavor.ResourceFlavor):
            self.upsert_flavor(obj)
        elif isinstance(obj, cohort.Cohort):
            self.upsert_cohort(obj)
        elif isinstance(obj, api_topology.Topology):
            self.upsert_topology(obj)
        elif isinstance(obj, api_node.Node):
            self.upsert_node(topology.node_of(obj))
        elif isinstance(obj, clusterqueue.ClusterQueue):
            self.upsert_cluster_queue(obj)
        elif isinstance(obj, localqueue.LocalQueue):
            namespace = obj.metadata.namespace or "default"
            if self.namespace_labels(namespace) is None:
                self.upsert_namespace(namespace, {})
            self.upsert_local_queue(obj)
        else:
            return False
        return True

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        """Remove a queue object by kind and name; False for kinds the cache does not hold."""
        if kind == "ResourceFlavor":
            self.delete_flavor(name)
        elif kind == "Cohort":
            self.delete_cohort(name)
        elif kind == "Topology":
            self.delete_topology(name)
        elif kind == api_node.KIND:
            self.delete_node(name)
        elif kind == "ClusterQueue":
            self.delete_cluster_queue(name)
        elif kind == "LocalQueue":
            self.delete_local_queue(namespace or "default", name)
        else:
            return False
        return True

    # Queue resolution -------------------------------------------------------------------------

    def local_queue(self, namespace: str, name: str | None) -> localqueue.LocalQueue | None:
        """Return the LocalQueue a workload names, if it exists."""
        if name is None:
            return None
        return self.local_queues.get((namespace, name))

    def cluster_queue_for(self, info: workload.WorkloadInfo) -> names.ClusterQueueName | None:
        """Return the ClusterQueue a workload's LocalQueue points at, if the LocalQueue exists."""
        lq = self.local_queue(info.key.namespace, info.local_queue)
        return None if lq is None else lq.spec.cluster_queue

    def blocker(self, info: workload.WorkloadInfo) -> QueueBlocker | None:
        """Say why a pending workload cannot enter its ClusterQueue's queue now, if it cannot."""
        pending = conditions.PendingReason
        lq = self.local_queue(info.key.namespace, info.local_queue)
        if lq is None:
            return QueueBlocker(
                pending.MISCONFIGURED, f"LocalQueue {info.local_queue} doesn't exist"
            )
        if lq.spec.stop_policy != clusterqueue.StopPolicy.NONE:
            return QueueBlocker(pending.SUSPENDED, f"LocalQueue {info.local_queue} is stopped")
        cq_name = lq.spec.cluster_queue
        cq = self.cluster_queues.get(cq_name)
        if cq is None:
            return QueueBlocker(pending.MISCONFIGURED, f"ClusterQueue {cq_name} doesn't exist")
        if cq.spec.stop_policy != clusterqueue.StopPolicy.NONE:
            return QueueBlocker(pending.SUSPENDED, f"ClusterQueue {cq_name} is stopped")
        info_cq = self.snapshot.cluster_queues.get(cq_name)
        if info_cq is None or not info_cq.active:
            return QueueBlocker(pending.SUSPENDED, f"ClusterQueue {cq_name} is inactive")
        return None

    def drained(self) -> list[tuple[names.WorkloadKey, conditions.EvictionReason]]:
        """Admitted workloads a ``HoldAndDrain`` stop policy evicts, with the reason, by key.

        The LocalQueue's policy comes first: a workload of a stopped LocalQueue is evicted with
        ``LocalQueueStopped`` even when its ClusterQueue is stopped too.
        """
        drain = clusterqueue.StopPolicy.HOLD_AND_DRAIN
        out: list[tuple[names.WorkloadKey, conditions.EvictionReason]] = []
        for key in sorted(self.admitted):
            adm = self.admitted[key]
            lq = self.local_queue(key.namespace, adm.info.local_queue)
            cq = self.cluster_queues.get(adm.cluster_queue)
            if lq is not None and lq.spec.stop_policy == drain:
                out.append((key, conditions.EvictionReason.LOCAL_QUEUE_STOPPED))
            elif cq is not None and cq.spec.stop_policy == drain:
                out.append((key, conditions.EvictionReason.CLUSTER_QUEUE_STOPPED))
        return out

    # Admitted workloads ------------------------------------------------------------------------

    def assume(self, info: workload.WorkloadInfo, admission: workload.Admission, at: float) -> None:
        """Count an admission before it is written anywhere."""
        adm = core_snapshot.AdmittedWorkload(info, admission, at)
        self.admitted[info.key] = adm
        self.snapshot.add_workload(adm)
        self.snapshot.commit()
        self._bump(admission.cluster_queue)

    def forget(self, key: names.WorkloadKey) -> core_snapshot.AdmittedWorkload | None:
        """Stop counting a workload's admission (finished, evicted and stopped, or write failed)."""
        adm = self.admitted.pop(key, None)
        if adm is None:
            return None
        self.snapshot.remove_workload(key, adm.cluster_queue)
        self.snapshot.commit()
        self._bump(adm.cluster_queue)
        return adm

    def mark_evicted(self, key: names.WorkloadKey) -> None:
        """Note that an admitted workload is being evicted; its quota stays until it stops."""
        adm = self.admitted.get(key)
        if adm is not None and not adm.evicted:
            adm = dataclasses.replace(adm, evicted=True)
            self.admitted[key] = adm
            self.snapshot.replace_workload(adm)
            self.revision += 1

    def update_info(self, info: workload.WorkloadInfo) -> None:
        """Replace what is known of an admitted workload (its priority or checkpoint changed).

        A new checkpoint only reorders victims: what the revision keys (runtime estimates, the
        flavors a head tried) stays valid.
        """
        adm = self.admitted.get(info.key)
        if adm is not None:
            only_checkpoint = (
                dataclasses.replace(adm.info, checkpointed_at=info.checkpointed_at) == info
            )
            adm = dataclasses.replace(adm, info=info)
            self.admitted[info.key] = adm
            self.snapshot.replace_workload(adm)
            if not only_checkpoint:
                self.revision += 1

    def generation(self, cq: names.ClusterQueueName) -> int:
        """The change counter of the quota tree ``cq`` belongs to."""
        node = self.snapshot.cq_nodes.get(cq)
        root = cq if node is None else node.root().name
        return self.generations.get(root, 0)

    def _bump(self, cq: names.ClusterQueueName) -> None:
        node = self.snapshot.cq_nodes.get(cq)
        root = cq if node is None else node.root().name
        self.generations[root] = self.generations.get(root, 0) + 1

    def root_of(self, cq: names.ClusterQueueName) -> str:
        """The name of the root of the quota tree ``cq`` belongs to (itself without a cohort)."""
        node = self.snapshot.cq_nodes.get(cq)
        return cq if node is None else node.root().name

    # Snapshot building -------------------------------------------------------------------------

    @property
    def snapshot(self) -> core_snapshot.Snapshot:
        """The live snapshot, rebuilt first if queues, cohorts or flavors changed since."""
        if self._stale:
            self.rebuild()
        return self._snapshot

    def rebuild(self) -> None:
        """Rebuild the quota tree and queue settings after objects changed.

        Changes only mark the snapshot stale, so a burst of them (a thousand ClusterQueues
        applied at start) costs one rebuild, on the next read.
        """
        self._stale = False
        snap = core_snapshot.Snapshot()
        snap.namespaces = self._snapshot.namespaces
        snap.flavors = {
            name: core_snapshot.FlavorInfo(
                name=name,
                node_labels=dict(rf.spec.node_labels),
                node_taints=tuple(rf.spec.node_taints),
                tolerations=tuple(rf.spec.tolerations),
                topology_name=rf.spec.topology_name,
            )
            for name, rf in self.flavors.items()
        }
        snap.placements = self._placements(snap)
        cycles = self._add_cohort_nodes(snap)
        self._add_queue_nodes(snap, cycles)
        for node in list(snap.cohort_nodes.values()) + list(snap.cq_nodes.values()):
            if node.parent is None:
                quota.build_subtree_quota(node)
        self._add_admitted(snap)
        snap.commit()
        self._snapshot = snap
        for root in {self.root_of(n) for n in snap.cq_nodes}:
            self.generations[root] = self.generations.get(root, 0) + 1

    def _cohort_parents(self) -> dict[names.CohortName, names.CohortName | None]:
        """Every cohort named by a queue or a cohort, with its parent (None for a root)."""
        parents: dict[names.CohortName, names.CohortName | None] = {}
        for cq in self.cluster_queues.values():
            if cq.spec.cohort_name is not None:
                parents.setdefault(cq.spec.cohort_name, None)
        for name, co in self.cohorts.items():
            parents[name] = co.spec.parent_name
            if co.spec.parent_name is not None:
                parents.setdefault(co.spec.parent_name, None)
        return parents

    def _add_cohort_nodes(self, snap: core_snapshot.Snapshot) -> set[names.CohortName]:
        """Add a node per cohort, linked to its parent; return the cohorts caught in cycles.

        A cohort on or below a cycle of parent references stays unlinked.
        """
        parents = self._cohort_parents()
        cycles = quota.find_cycles(parents)
        for name in sorted(parents):
            co = self.cohorts.get(name)
            groups = co.spec.resource_groups if co is not None else []
            snap.cohort_nodes[name] = quota.QuotaNode(
                name, is_cohort=True, quotas=_quota_table(groups), journal=snap.journal
            )
            weight = (
                co.spec.fair_sharing.weight if co is not None and co.spec.fair_sharing else 1000
            )
            snap.cohort_weights[name] = weight
            if co is not None and co.spec.preemption_budget is not None:
                snap.cohort_budgets[name] = co.spec.preemption_budget
            scope = None if co is None else co.spec.admission_scope
            if scope is not None and scope.admission_mode == clusterqueue.AdmissionMode.USAGE_BASED:
                snap.usage_based_cohorts.add(name)
        for name in sorted(parents):
            parent = parents[name]
            if parent is not None and name not in cycles:
                child_node = snap.cohort_nodes[name]
                child_node.parent = snap.cohort_nodes[parent]
                snap.cohort_nodes[parent].children.append(child_node)
        return cycles

    def _add_queue_nodes(self, snap: core_snapshot.Snapshot, cycles: set[names.CohortName]) -> None:
        """Add a node and the settings of every ClusterQueue, under its cohort unless in a cycle."""
        for name in sorted(self.cluster_queues):
            cq = self.cluster_queues[name]
            node = quota.QuotaNode(
                name,
                is_cohort=False,
                quotas=_quota_table(cq.spec.resource_groups),
                journal=snap.journal,
            )
            cohort_name = cq.spec.cohort_name
            if cohort_name is not None and cohort_name not in cycles:
                node.parent = snap.cohort_nodes[cohort_name]
                snap.cohort_nodes[cohort_name].children.append(node)
            snap.cq_nodes[name] = node
            snap.cluster_queues[name] = self._cq_info(cq, cycles)

    def _placements(
        self, snap: core_snapshot.Snapshot
    ) -> dict[names.FlavorName, core_snapshot.FlavorPlacement]:
        """The domains of every topology-aware flavor whose Topology exists."""
        out: dict[names.FlavorName, core_snapshot.FlavorPlacement] = {}
        for name, rf in sorted(self.flavors.items()):
            topo = self.topologies.get(rf.spec.topology_name or "")
            if topo is None:
                continue
            levels = topo.level_labels
            labels = rf.spec.node_labels
            nodes = [
                n for n in self.nodes.values() if topology.node_matches_flavor(n, labels, levels)
            ]
            tree = topology.Tree(topo.name, levels, nodes, self.other_usage)
            out[name] = core_snapshot.FlavorPlacement(tree, topology.Usage(snap.journal))
        return out

    def _add_admitted(self, snap: core_snapshot.Snapshot) -> None:
        """Put every admitted workload, and its usage, back into the new tree."""
        for key in sorted(self.admitted):
            adm = self.admitted[key]
            snap.admitted.setdefault(adm.cluster_queue, {})[key] = adm
            snap.add_admission(adm.admission)

    def _why_missing(self, kind: str, name: str) -> str:
        """A missing flavor's or topology's name, and the field errors it was refused for."""
        refused = self.refused.get((kind, name))
        return name if refused is None else f"{name} (stored invalid, not applied: {refused})"

    def _cq_info(
        self, cq: clusterqueue.ClusterQueue, cycles: set[names.CohortName]
    ) -> core_snapshot.ClusterQueueInfo:
        spec = cq.spec
        groups = tuple(
            core_snapshot.ResourceGroupInfo(
                covered=tuple(g.covered_resources), flavors=tuple(f.name for f in g.flavors)
            )
            for g in spec.resource_groups
        )
        by_resource = {res: g for g in groups for res in g.covered}
        missing = [
            self._why_missing("ResourceFlavor", f)
            for f in sorted({f for g in groups for f in g.flavors if f not in self.flavors})
        ]
        used = [self.flavors[f] for g in groups for f in g.flavors if f in self.flavors]
        no_topology = [
            self._why_missing("Topology", t)
            for t in sorted(
                {
                    rf.spec.topology_name
                    for rf in used
                    if rf.spec.topology_name is not None
                    and rf.spec.topology_name not in self.topologies
                }
            )
        ]
        reason: str | None = None
        message = "Can admit new workloads"
        invalid = self.invalid_cluster_queues.get(names.ClusterQueueName(cq.name))
        if invalid is not None:
            reason, message = _ACTIVE.INVALID_SPEC, f"Can't admit new workloads: {invalid}"
        elif (cq.metadata.model_extra or {}).get("deletionTimestamp"):
            reason = _ACTIVE.TERMINATING
            message = (
                "Can't admit new workloads: the ClusterQueue is being deleted, which completes "
                "once no admitted workload reserves its quota"
            )
        elif spec.stop_policy != clusterqueue.StopPolicy.NONE:
            reason, message = _ACTIVE.STOPPED, "ClusterQueue is stopped"
        elif missing:
            reason = _ACTIVE.FLAVOR_NOT_FOUND
            message = (
                "Can't admit new workloads: references missing ResourceFlavor(s): "
                f"{', '.join(missing)}"
            )
        elif no_topology:
            reason = _ACTIVE.TOPOLOGY_NOT_FOUND
            message = (
                "Can't admit new workloads: references missing Topology(s): "
                f"{', '.join(no_topology)}"
            )
        elif spec.cohort_name is not None and spec.cohort_name in cycles:
            reason, message = "CohortCycle", f"Cohort {spec.cohort_name} is part of a cycle"
        weight = spec.fair_sharing.weight if spec.fair_sharing is not None else 1000
        return core_snapshot.ClusterQueueInfo(
            name=names.ClusterQueueName(cq.name),
            cohort=spec.cohort_name,
            groups=groups,
            group_by_resource=by_resource,
            strategy=spec.queueing_strategy,
            namespace_selector=spec.namespace_selector,
            fungibility=spec.flavor_fungibility,
            preemption=spec.preemption,
            protection=spec.preemption_protection,
            budget=spec.preemption_budget,
            stop_policy=spec.stop_policy,
            fair_weight=weight,
            usage_based=(
                spec.admission_scope is not None
                and spec.admission_scope.admission_mode == clusterqueue.AdmissionMode.USAGE_BASED
            ),
            topology_only=bool(used) and all(rf.spec.topology_name for rf in used),
            backfill=(
                (spec.backfill or clusterqueue.Backfill())
                if spec.queueing_strategy == clusterqueue.QueueingStrategy.BACKFILL
                else None
            ),
            inactive_reason=reason,
            inactive_message=message,
        )
