"""Fluent builders for every kind tests use: Berth kinds, batch/v1 Jobs, Namespaces.

A builder holds the YAML document it will produce. ``raw()`` returns that document (a fresh copy,
so a test may break it on purpose); ``obj()`` loads it through ``berth.api.kinds.load``, so a
builder only ever yields a model that passed schema and semantic validation. ``set(path, value)``
and ``remove(path)`` edit any field by its YAML path (``spec.resourceGroups[0].flavors[1].name``)
for tests that need an input no fluent method produces.

Quantities are passed as YAML would hold them: ``4``, ``"500m"``, ``"16Gi"``.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from berth.api import (
    base,
    clusterqueue,
    cohort,
    configuration,
    kinds,
    localqueue,
    priorityclass,
    resourceflavor,
    workload,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

API_VERSION = base.API_VERSION
QUEUE_LABEL = "berth.dev/queue-name"
PRIORITY_CLASS_LABEL = "berth.dev/priority-class"
MIN_PARALLELISM_ANNOTATION = "berth.dev/job-min-parallelism"
SIM_AT = "sim.berth.dev/at"
SIM_DURATION = "sim.berth.dev/duration"

Quantity = int | float | str
QuotaSpec = Quantity | tuple[Quantity | None, ...]
"""A quota: ``nominal``, ``(nominal, borrowingLimit)`` or ``(nominal, borrowing, lending)``."""

M = TypeVar("M", bound=base.Object)

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    return [int(index) if index else key for key, index in _STEP.findall(path)]


def _walk(doc: Any, steps: list[str | int]) -> Any:
    node = doc
    for i, step in enumerate(steps):
        if isinstance(step, int):
            node = node[step]
        else:
            nxt = steps[i + 1] if i + 1 < len(steps) else None
            node = node.setdefault(step, [] if isinstance(nxt, int) else {})
    return node


class _Builder:
    """A YAML document under construction, with generic field editing."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self._doc = doc

    def raw(self) -> dict[str, Any]:
        """Return the document as YAML would hold it (a copy)."""
        return copy.deepcopy(self._doc)

    def set(self, path: str, value: Any) -> Self:
        """Set the field at a YAML path, creating parents as needed."""
        steps = _steps(path)
        parent = _walk(self._doc, steps[:-1])
        parent[steps[-1]] = value
        return self

    def remove(self, path: str) -> Self:
        """Delete the field at a YAML path."""
        steps = _steps(path)
        del _walk(self._doc, steps[:-1])[steps[-1]]
        return self

    def mutate(self, change: Callable[[dict[str, Any]], None]) -> Self:
        """Apply an arbitrary change to the document."""
        change(self._doc)
        return self

    def label(self, key: str, value: str) -> Self:
        """Set one label."""
        self._doc.setdefault("metadata", {}).setdefault("labels", {})[key] = value
        return self

    def annotations(self, values: Mapping[str, str]) -> Self:
        """Set annotations (keys such as ``sim.berth.dev/at`` contain slashes)."""
        self._doc.setdefault("metadata", {}).setdefault("annotations", {}).update(values)
        return self

    def sim(self, at: str | None = None, duration: str | None = None) -> Self:
        """Set the simulator's ``sim.berth.dev/at`` and ``sim.berth.dev/duration`` annotations."""
        if at is not None:
            self.annotations({SIM_AT: at})
        if duration is not None:
            self.annotations({SIM_DURATION: duration})
        return self

    def created_at(self, when: str | dt.datetime) -> Self:
        """Set ``metadata.creationTimestamp`` (RFC 3339, UTC)."""
        if isinstance(when, dt.datetime):
            when = when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._doc.setdefault("metadata", {})["creationTimestamp"] = when
        return self


class _ObjectBuilder(_Builder, Generic[M]):
    """A builder of one Berth kind, loadable into its model."""

    MODEL: ClassVar[type[base.Object]]

    def __init__(self, name: str, namespace: str | None = None, **top: Any) -> None:
        metadata: dict[str, Any] = {"name": name}
        if namespace is not None:
            metadata["namespace"] = namespace
        doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": self.MODEL.KIND}
        doc["metadata"] = metadata
        doc.update(top)
        super().__init__(doc)

    def obj(self) -> M:
        """Load the document through ``kinds.load``; raises ``ApiError`` if it is invalid."""
        loaded = kinds.load(self.raw())
        if not isinstance(loaded, self.MODEL):
            raise TypeError(f"expected a {self.MODEL.KIND}, loaded {type(loaded).__name__}")
        return loaded  # type: ignore[return-value]  # isinstance above narrows to MODEL, i.e. M

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._doc.setdefault("spec", {})
        return spec


def _quota(resource: str, spec: QuotaSpec) -> dict[str, Any]:
    parts = spec if isinstance(spec, tuple) else (spec,)
    out: dict[str, Any] = {"name": resource, "nominalQuota": parts[0]}
    if len(parts) > 1 and parts[1] is not None:
        out["borrowingLimit"] = parts[1]
    if len(parts) > 2 and parts[2] is not None:
        out["lendingLimit"] = parts[2]
    return out


def flavor_quotas(flavor: str, resources: Mapping[str, QuotaSpec]) -> dict[str, Any]:
    """Build one ``flavors[]`` entry: ``{cpu: 8, nvidia.com/gpu: (4, 2, 1)}``."""
    return {"name": flavor, "resources": [_quota(r, q) for r, q in resources.items()]}


class _QuotaMixin(_ObjectBuilder[M]):
    """Resource groups, shared by ClusterQueues and Cohorts."""

    def resource_group(self, *flavors: dict[str, Any], covered: list[str] | None = None) -> Self:
        """Start a resource group; ``covered`` defaults to the first flavor's resources."""
        group: dict[str, Any] = {"coveredResources": list(covered or []), "flavors": []}
        self._spec.setdefault("resourceGroups", []).append(group)
        for flavor in flavors:
            self._add_flavor(group, flavor)
        return self

    def flavor_quotas(self, flavor: str, resources: Mapping[str, QuotaSpec]) -> Self:
        """Add a flavor to the last resource group (starting one if there is none)."""
        groups = self._spec.setdefault("resourceGroups", [])
        if not groups:
            self.resource_group()
        self._add_flavor(groups[-1], flavor_quotas(flavor, resources))
        return self

    @staticmethod
    def _add_flavor(group: dict[str, Any], flavor: dict[str, Any]) -> None:
        if not group["coveredResources"]:
            group["coveredResources"] = [r["name"] for r in flavor["resources"]]
        group["flavors"].append(flavor)

    def fair_weight(self, weight: Quantity) -> Self:
        """Set ``spec.fairSharing.weight``."""
        self._spec["fairSharing"] = {"weight": weight}
        return self


class ResourceFlavorBuilder(_ObjectBuilder[resourceflavor.ResourceFlavor]):
    """A ResourceFlavor."""

    MODEL = resourceflavor.ResourceFlavor

    def __init__(self, name: str) -> None:
        super().__init__(name)

    def node_labels(self, labels: Mapping[str, str]) -> Self:
        """Add node labels."""
        self._spec.setdefault("nodeLabels", {}).update(labels)
        return self

    def taint(self, key: str, value: str | None = None, effect: str = "NoSchedule") -> Self:
        """Add a node taint."""
        taint: dict[str, Any] = {"key": key, "effect": effect}
        if value is not None:
            taint["value"] = value
        self._spec.setdefault("nodeTaints", []).append(taint)
        return self

    def toleration(self, **fields: Any) -> Self:
        """Add a toleration (``key=..., operator=..., value=..., effect=...``)."""
        self._spec.setdefault("tolerations", []).append(_camel(fields))
        return self

    def topology(self, name: str) -> Self:
        """Set ``spec.topologyName``."""
        self._spec["topologyName"] = name
        return self


class ClusterQueueBuilder(_QuotaMixin[clusterqueue.ClusterQueue]):
    """A ClusterQueue; it accepts every namespace (``namespaceSelector: {}``) unless told not to."""

    MODEL = clusterqueue.ClusterQueue

    def __init__(self, name: str) -> None:
        super().__init__(name, spec={"namespaceSelector": {}})

    def cohort(self, name: str) -> Self:
        """Set ``spec.cohortName``."""
        self._spec["cohortName"] = name
        return self

    def preemption(
        self,
        within_cluster_queue: str | None = None,
        reclaim_within_cohort: str | None = None,
        borrow_within_cohort: str | None = None,
        max_priority_threshold: int | None = None,
    ) -> Self:
        """Set ``spec.preemption``; unset arguments keep Kueue's defaults (``Never``)."""
        pre: dict[str, Any] = {}
        if within_cluster_queue is not None:
            pre["withinClusterQueue"] = within_cluster_queue
        if reclaim_within_cohort is not None:
            pre["reclaimWithinCohort"] = reclaim_within_cohort
        if borrow_within_cohort is not None or max_priority_threshold is not None:
            borrow: dict[str, Any] = {}
            if borrow_within_cohort is not None:
                borrow["policy"] = borrow_within_cohort
            if max_priority_threshold is not None:
                borrow["maxPriorityThreshold"] = max_priority_threshold
            pre["borrowWithinCohort"] = borrow
        self._spec["preemption"] = pre
        return self

    def protection(self, **windows: str) -> Self:
        """Set ``spec.preemptionProtection``: minAdmitDuration by kind (``fair_sharing="10m"``)."""
        self._spec["preemptionProtection"] = _camel(
            {kind: {"minAdmitDuration": value} for kind, value in windows.items()}
        )
        return self

    def strategy(self, strategy: str) -> Self:
        """Set ``spec.queueingStrategy`` (``StrictFIFO`` or ``BestEffortFIFO``)."""
        self._spec["queueingStrategy"] = strategy
        return self

    def namespace_selector(
        self,
        match_labels: Mapping[str, str] | None = None,
        match_expressions: list[dict[str, Any]] | None = None,
    ) -> Self:
        """Set ``spec.namespaceSelector``; no arguments selects every namespace."""
        sel: dict[str, Any] = {}
        if match_labels:
            sel["matchLabels"] = dict(match_labels)
        if match_expressions:
            sel["matchExpressions"] = match_expressions
        self._spec["namespaceSelector"] = sel
        return self

    def no_namespace_selector(self) -> Self:
        """Remove ``spec.namespaceSelector``, so that no namespace is eligible (Kueue's rule)."""
        self._spec.pop("namespaceSelector", None)
        return self

    def fungibility(
        self,
        when_can_borrow: str | None = None,
        when_can_preempt: str | None = None,
        preference: str | None = None,
    ) -> Self:
        """Set ``spec.flavorFungibility``."""
        fung: dict[str, Any] = {}
        if when_can_borrow is not None:
            fung["whenCanBorrow"] = when_can_borrow
        if when_can_preempt is not None:
            fung["whenCanPreempt"] = when_can_preempt
        if preference is not None:
            fung["preference"] = preference
        self._spec["flavorFungibility"] = fung
        return self

    def stop_policy(self, policy: str = "Hold") -> Self:
        """Set ``spec.stopPolicy``."""
        self._spec["stopPolicy"] = policy
        return self


class CohortBuilder(_QuotaMixin[cohort.Cohort]):
    """A Cohort."""

    MODEL = cohort.Cohort

    def __init__(self, name: str) -> None:
        super().__init__(name)

    def parent(self, name: str) -> Self:
        """Set ``spec.parentName``."""
        self._spec["parentName"] = name
        return self


class LocalQueueBuilder(_ObjectBuilder[localqueue.LocalQueue]):
    """A LocalQueue in a namespace."""

    MODEL = localqueue.LocalQueue

    def __init__(
        self, name: str, namespace: str = "default", cluster_queue: str | None = None
    ) -> None:
        super().__init__(name, namespace, spec={})
        if cluster_queue is not None:
            self.cluster_queue(cluster_queue)

    def cluster_queue(self, name: str) -> Self:
        """Set ``spec.clusterQueue``."""
        self._spec["clusterQueue"] = name
        return self

    def stop_policy(self, policy: str = "Hold") -> Self:
        """Set ``spec.stopPolicy``."""
        self._spec["stopPolicy"] = policy
        return self

    def fair_weight(self, weight: Quantity) -> Self:
        """Set ``spec.fairSharing.weight``."""
        self._spec["fairSharing"] = {"weight": weight}
        return self


class WorkloadPriorityClassBuilder(_ObjectBuilder[priorityclass.WorkloadPriorityClass]):
    """A WorkloadPriorityClass."""

    MODEL = priorityclass.WorkloadPriorityClass

    def __init__(self, name: str, value: int = 0) -> None:
        super().__init__(name, value=value)

    def description(self, text: str) -> Self:
        """Set ``description``."""
        self._doc["description"] = text
        return self


class PriorityClassBuilder(_ObjectBuilder[priorityclass.PriorityClass]):
    """A ``scheduling.k8s.io/v1`` PriorityClass."""

    MODEL = priorityclass.PriorityClass

    def __init__(self, name: str, value: int = 0) -> None:
        super().__init__(name, value=value)
        self._doc["apiVersion"] = "scheduling.k8s.io/v1"

    def global_default(self) -> Self:
        """Make it the cluster's default priority class."""
        self._doc["globalDefault"] = True
        return self


def admitted_status(
    cluster_queue: str, counts: Mapping[str, int], flavors: Mapping[str, str]
) -> dict[str, Any]:
    """A stored Workload's status: admitted to ``cluster_queue``, each pod set on ``flavors``."""
    return {
        "admission": {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [
                {"name": name, "flavors": dict(flavors), "count": count}
                for name, count in counts.items()
            ],
        },
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "reason": kind,
                "message": "",
                "lastTransitionTime": "2026-11-26T00:00:00Z",
            }
            for kind in ("QuotaReserved", "Admitted")
        ],
    }


def _template(
    requests: Mapping[str, Quantity] | None,
    node_selector: Mapping[str, str] | None,
    tolerations: list[dict[str, Any]] | None,
    priority_class_name: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = tolerations
    if priority_class_name is not None:
        spec["priorityClassName"] = priority_class_name
    return {"spec": spec}


class WorkloadBuilder(_ObjectBuilder[workload.Workload]):
    """A Workload; add pod sets with ``pod_set`` (none are added implicitly)."""

    MODEL = workload.Workload

    def __init__(self, name: str, namespace: str = "default") -> None:
        super().__init__(name, namespace, spec={"podSets": []})

    def pod_set(
        self,
        name: str = "main",
        count: int = 1,
        requests: Mapping[str, Quantity] | None = None,
        *,
        min_count: int | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: list[dict[str, Any]] | None = None,
    ) -> Self:
        """Add a pod set of ``count`` pods, each requesting ``requests``."""
        ps: dict[str, Any] = {"name": name, "count": count}
        if min_count is not None:
            ps["minCount"] = min_count
        ps["template"] = _template(requests, node_selector, tolerations)
        self._spec["podSets"].append(ps)
        return self

    def queue(self, name: str) -> Self:
        """Set ``spec.queueName`` (a LocalQueue in the workload's namespace)."""
        self._spec["queueName"] = name
        return self

    def priority(self, value: int) -> Self:
        """Set ``spec.priority``."""
        self._spec["priority"] = value
        return self

    def priority_class(
        self, name: str, value: int | None = None, *, pod_priority_class: bool = False
    ) -> Self:
        """Reference a WorkloadPriorityClass (or a PriorityClass); ``value`` sets the priority."""
        if pod_priority_class:
            ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}
        else:
            ref = {"group": "berth.dev", "kind": "WorkloadPriorityClass", "name": name}
        self._spec["priorityClassRef"] = ref
        if value is not None:
            self.priority(value)
        return self

    def active(self, active: bool) -> Self:
        """Set ``spec.active``."""
        self._spec["active"] = active
        return self

    def admitted(
        self,
        cluster_queue: str,
        flavors: Mapping[str, str],
        pod_set: str = "main",
        count: int | None = None,
    ) -> Self:
        """Give the workload a status with an admission and QuotaReserved/Admitted conditions."""
        assignment: dict[str, Any] = {"name": pod_set, "flavors": dict(flavors)}
        if count is not None:
            assignment["count"] = count
        status = self._doc.setdefault("status", {})
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": [assignment]}
        for kind in ("QuotaReserved", "Admitted"):
            self.condition(kind, "True", kind)
        return self

    def condition(self, kind: str, status: str, reason: str, message: str = "") -> Self:
        """Add or replace a status condition."""
        conditions = self._doc.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c["type"] != kind]
        conditions.append({"type": kind, "status": status, "reason": reason, "message": message})
        return self


class JobBuilder(_Builder):
    """A ``batch/v1`` Job of ``parallelism`` pods, queued by its Berth labels."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        super().__init__(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"parallelism": 1, "template": _template(None, None, None)},
            }
        )

    def obj(self) -> dict[str, Any]:
        """Return the Job document; Jobs are not Berth kinds, so there is no model to load."""
        return self.raw()

    @property
    def _pod_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._doc["spec"]["template"]["spec"]
        return spec

    def queue(self, name: str) -> Self:
        """Set the ``berth.dev/queue-name`` label."""
        return self.label(QUEUE_LABEL, name)

    def priority_class(self, name: str) -> Self:
        """Set the ``berth.dev/priority-class`` label (a WorkloadPriorityClass)."""
        return self.label(PRIORITY_CLASS_LABEL, name)

    def pod_priority_class(self, name: str) -> Self:
        """Set the pod template's ``priorityClassName`` (a PriorityClass)."""
        self._pod_spec["priorityClassName"] = name
        return self

    def min_parallelism(self, count: int) -> Self:
        """Allow partial admission down to ``count`` pods (``berth.dev/job-min-parallelism``)."""
        return self.annotations({MIN_PARALLELISM_ANNOTATION: str(count)})

    def parallelism(self, count: int) -> Self:
        """Set ``spec.parallelism``."""
        self._doc["spec"]["parallelism"] = count
        return self

    def completions(self, count: int) -> Self:
        """Set ``spec.completions``."""
        self._doc["spec"]["completions"] = count
        return self

    def suspend(self, suspended: bool = True) -> Self:
        """Set ``spec.suspend``."""
        self._doc["spec"]["suspend"] = suspended
        return self

    def requests(self, requests: Mapping[str, Quantity]) -> Self:
        """Set the container's resource requests."""
        self._pod_spec["containers"][0]["resources"] = {"requests": dict(requests)}
        return self

    def node_selector(self, labels: Mapping[str, str]) -> Self:
        """Set the pod template's ``nodeSelector``."""
        self._pod_spec["nodeSelector"] = dict(labels)
        return self

    def tolerations(self, tolerations: list[dict[str, Any]]) -> Self:
        """Set the pod template's ``tolerations``."""
        self._pod_spec["tolerations"] = tolerations
        return self


class JobSetBuilder(_Builder):
    """A ``jobset.x-k8s.io/v1alpha2`` JobSet; add roles with ``replicated_job``."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        super().__init__(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicatedJobs": []},
            }
        )

    def obj(self) -> dict[str, Any]:
        """Return the JobSet document; JobSets are not Berth kinds, so there is no model."""
        return self.raw()

    def queue(self, name: str) -> Self:
        """Set the ``berth.dev/queue-name`` label."""
        return self.label(QUEUE_LABEL, name)

    def priority_class(self, name: str) -> Self:
        """Set the ``berth.dev/priority-class`` label (a WorkloadPriorityClass)."""
        return self.label(PRIORITY_CLASS_LABEL, name)

    def suspend(self, suspended: bool = True) -> Self:
        """Set ``spec.suspend``."""
        self._doc["spec"]["suspend"] = suspended
        return self

    def replicated_job(
        self,
        name: str,
        *,
        replicas: int = 1,
        parallelism: int = 1,
        completions: int | None = None,
        requests: Mapping[str, Quantity] | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: list[dict[str, Any]] | None = None,
    ) -> Self:
        """Add a replicated job: ``replicas`` child Jobs of ``parallelism`` pods each."""
        job_spec: dict[str, Any] = {
            "parallelism": parallelism,
            "template": _template(requests, node_selector, tolerations),
        }
        if completions is not None:
            job_spec["completions"] = completions
        self._doc["spec"]["replicatedJobs"].append(
            {"name": name, "replicas": replicas, "template": {"spec": job_spec}}
        )
        return self


class NamespaceBuilder(_Builder):
    """A ``v1`` Namespace, whose labels matter to ``namespaceSelector``."""

    def __init__(self, name: str) -> None:
        super().__init__({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def obj(self) -> dict[str, Any]:
        """Return the Namespace document; it is not a Berth kind."""
        return self.raw()


class ConfigurationBuilder(_ObjectBuilder[configuration.Configuration]):
    """The operator Configuration; with no calls it is the all-defaults configuration."""

    MODEL = configuration.Configuration

    def __init__(self) -> None:
        super().__init__("")
        del self._doc["metadata"]  # the Configuration is a file, not an object with a name

    def fair_sharing(self, *strategies: str) -> Self:
        """Enable fair sharing, with these preemption strategies (Kueue's default if none)."""
        fair: dict[str, Any] = {}
        if strategies:
            fair["preemptionStrategies"] = list(strategies)
        self._doc["fairSharing"] = fair
        return self

    def wait_for_pods_ready(
        self,
        timeout: str | None = None,
        block_admission: bool | None = None,
        recovery_timeout: str | None = None,
        **requeuing: Any,
    ) -> Self:
        """Configure ``waitForPodsReady``; ``requeuing`` holds requeuingStrategy fields."""
        wfpr: dict[str, Any] = {}
        if timeout is not None:
            wfpr["timeout"] = timeout
        if block_admission is not None:
            wfpr["blockAdmission"] = block_admission
        if recovery_timeout is not None:
            wfpr["recoveryTimeout"] = recovery_timeout
        if requeuing:
            wfpr["requeuingStrategy"] = _camel(requeuing)
        self._doc["waitForPodsReady"] = wfpr
        return self

    def no_wait_for_pods_ready(self) -> Self:
        """Turn ``waitForPodsReady`` off (``waitForPodsReady: null``)."""
        self._doc["waitForPodsReady"] = None
        return self

    def manage_jobs_without_queue_name(self, manage: bool = True) -> Self:
        """Set ``manageJobsWithoutQueueName``."""
        self._doc["manageJobsWithoutQueueName"] = manage
        return self

    def managed_namespaces(self, match_labels: Mapping[str, str]) -> Self:
        """Set ``managedJobsNamespaceSelector`` to match these labels."""
        self._doc["managedJobsNamespaceSelector"] = {"matchLabels": dict(match_labels)}
        return self

    def exclude_resource_prefixes(self, *prefixes: str) -> Self:
        """Set ``resources.excludeResourcePrefixes``."""
        self._doc.setdefault("resources", {})["excludeResourcePrefixes"] = list(prefixes)
        return self

    def transformation(
        self, input_resource: str, outputs: Mapping[str, Quantity], strategy: str | None = None
    ) -> Self:
        """Add a resource transformation."""
        t: dict[str, Any] = {"input": input_resource, "outputs": dict(outputs)}
        if strategy is not None:
            t["strategy"] = strategy
        self._doc.setdefault("resources", {}).setdefault("transformations", []).append(t)
        return self

    def frameworks(self, *names: str) -> Self:
        """Set ``integrations.frameworks``."""
        self._doc["integrations"] = {"frameworks": list(names)}
        return self

    def honor_kueue_labels(self, honor: bool = True) -> Self:
        """Set ``honorKueueLabels``."""
        self._doc["honorKueueLabels"] = honor
        return self


def _camel(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Turn keyword names into YAML field names (``toleration_seconds``: ``tolerationSeconds``)."""
    out = {}
    for key, value in fields.items():
        head, *rest = key.split("_")
        out[head + "".join(part.title() for part in rest)] = value
    return out
