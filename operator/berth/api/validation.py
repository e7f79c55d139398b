"""Semantic validation of Berth objects: every rule a schema cannot express.

Each ``validate_*`` function is pure and returns *every* ``FieldError`` it finds, with the YAML path
of the field and a message that says how to fix it. Called by the loader (``berth.api.kinds``), the
validating webhook and the simulator; an empty list means valid. Rules follow Kueue's webhooks and
CEL rules for the same fields.
"""

from __future__ import annotations

import math
import re

from berth.api import (
    base,
    clusterqueue,
    cohort,
    configuration,
    duration,
    errors,
    localqueue,
    pod,
    quota,
    resourceflavor,
    selector,
    topology,
    workload,
)

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_MAX_SUBDOMAIN = 253
_MAX_LABEL = 63
_MAX_FLAVORS = 256
_INT32 = range(-(2**31), 2**31)

FieldErrors = list[errors.FieldError]


def validate(obj: base.Object) -> FieldErrors:
    """Validate any Berth object by its kind."""
    out = _validate_metadata(obj)
    if isinstance(obj, resourceflavor.ResourceFlavor):
        out += validate_resource_flavor(obj)
    elif isinstance(obj, topology.Topology):
        out += validate_topology(obj)
    elif isinstance(obj, clusterqueue.ClusterQueue):
        out += validate_cluster_queue(obj)
    elif isinstance(obj, cohort.Cohort):
        out += validate_cohort(obj)
    elif isinstance(obj, localqueue.LocalQueue):
        out += validate_local_queue(obj)
    elif isinstance(obj, workload.Workload):
        out += validate_workload(obj)
    elif isinstance(obj, configuration.Configuration):
        out += validate_configuration(obj)
    return out


def _validate_metadata(obj: base.Object) -> FieldErrors:
    if isinstance(obj, configuration.Configuration):
        return []
    name = obj.metadata.name
    if not name:
        return [errors.FieldError("metadata.name", "required; give the object a name")]
    return _validate_name(name, "metadata.name", "name")


def _validate_name(name: str, path: str, what: str) -> FieldErrors:
    """Check a reference or object name: a DNS subdomain, as Kubernetes names objects."""
    if len(name) <= _MAX_SUBDOMAIN and _DNS_SUBDOMAIN.match(name):
        return []
    return [
        errors.FieldError(
            path,
            f"{errors.shorten(name)} is not a valid {what}; use lowercase letters, digits, '-' "
            "and '.', starting and ending with a letter or digit "
            f"(at most {_MAX_SUBDOMAIN} characters)",
        )
    ]


def validate_selector(sel: selector.LabelSelector, path: str) -> FieldErrors:
    """Check a label selector's expressions the way the API server does."""
    out: FieldErrors = []
    op = selector.SelectorOperator
    for i, req in enumerate(sel.match_expressions):
        rpath = f"{path}.matchExpressions[{i}]"
        if req.operator in {op.IN, op.NOT_IN} and not req.values:
            out.append(
                errors.FieldError(
                    f"{rpath}.values",
                    f"must not be empty with operator {req.operator}; list at least one value",
                )
            )
        if req.operator in {op.EXISTS, op.DOES_NOT_EXIST} and req.values:
            out.append(
                errors.FieldError(
                    f"{rpath}.values",
                    f"must be empty with operator {req.operator}; remove the values",
                )
            )
    return out


def _validate_tolerations(tolerations: list[pod.Toleration], path: str) -> FieldErrors:
    out: FieldErrors = []
    for i, tol in enumerate(tolerations):
        tpath = f"{path}[{i}]"
        if not tol.key and tol.operator != pod.TolerationOperator.EXISTS:
            out.append(
                errors.FieldError(
                    f"{tpath}.operator",
                    "must be Exists when key is empty (that tolerates every taint); set "
                    "operator: Exists or give a key",
                )
            )
        if tol.operator == pod.TolerationOperator.EXISTS and tol.value:
            out.append(
                errors.FieldError(
                    f"{tpath}.value", "must be empty when operator is Exists; remove the value"
                )
            )
        if tol.toleration_seconds is not None and tol.effect != pod.TaintEffect.NO_EXECUTE:
            out.append(
                errors.FieldError(
                    f"{tpath}.tolerationSeconds",
                    "only applies to effect NoExecute; set effect: NoExecute or remove it",
                )
            )
    return out


def validate_resource_flavor(rf: resourceflavor.ResourceFlavor) -> FieldErrors:
    """Check a ResourceFlavor's tolerations and topology."""
    spec = rf.spec
    out = _validate_tolerations(spec.tolerations, "spec.tolerations")
    if spec.topology_name is not None:
        out += _validate_name(spec.topology_name, "spec.topologyName", "topology name")
        if not spec.node_labels:
            out.append(
                errors.FieldError(
                    "spec.nodeLabels",
                    "at least one node label is required when topologyName is set; add the "
                    "labels that select this flavor's nodes",
                )
            )
    return out


def _qualified_key(name: str) -> bool:
    """Tell whether a name is a Kubernetes label key (or resource name): ``[prefix/]name``."""
    prefix, _, local = name.rpartition("/")
    return bool(_QUALIFIED_NAME.match(local)) and (
        not prefix or (len(prefix) <= _MAX_SUBDOMAIN and bool(_DNS_SUBDOMAIN.match(prefix)))
    )


def validate_topology(topo: topology.Topology) -> FieldErrors:
    """A Topology's levels: label keys Kubernetes accepts, each once, the hostname last."""
    out = [
        errors.FieldError(
            f"spec.levels[{i}].nodeLabel",
            f"{errors.shorten(label)} is not a node label key; write one such as "
            "topology.kubernetes.io/zone or kubernetes.io/hostname (an optional DNS prefix, '/', "
            "then at most 63 letters, digits, '-', '_' or '.')",
        )
        for i, label in enumerate(topo.level_labels)
        if not _qualified_key(label)
    ]
    return out + topology.topology_problems(topo)


def _validate_resource_name(name: str, path: str) -> FieldErrors:
    """Check a resource name the way Kubernetes checks a label key: ``[prefix/]name``."""
    if _qualified_key(name):
        return []
    return [
        errors.FieldError(
            path,
            f"{errors.shorten(name)} is not a resource name; write a name such as cpu, memory "
            "or nvidia.com/gpu (an optional DNS prefix, '/', then at most 63 letters, digits, "
            "'-', '_' or '.')",
        )
    ]


def validate_resource_groups(
    groups: list[quota.ResourceGroup],
    path: str,
    *,
    has_parent: bool,
    parent_word: str,
    lending_within_nominal: bool = True,
) -> FieldErrors:
    """Check resource groups: coverage, duplicates, and limits that need a cohort (or parent).

    ``lending_within_nominal`` holds for ClusterQueues; a Cohort's lendingLimit caps what its
    whole subtree lends, so it may exceed the cohort's own nominal quota (as in Kueue).
    """
    out: FieldErrors = []
    resource_owner: dict[str, int] = {}
    flavor_owner: dict[str, int] = {}
    flavor_count = 0
    for gi, group in enumerate(groups):
        gpath = f"{path}[{gi}]"
        for ri, res in enumerate(group.covered_resources):
            if res in resource_owner:
                other = resource_owner[res]
                where = "this group" if other == gi else f"{path}[{other}]"
                out.append(
                    errors.FieldError(
                        f"{gpath}.coveredResources[{ri}]",
                        f"resource {res!r} is already covered by {where}; list each resource "
                        "in one resource group only",
                    )
                )
            else:
                resource_owner[res] = gi
                out += _validate_resource_name(res, f"{gpath}.coveredResources[{ri}]")
        for fi, flavor in enumerate(group.flavors):
            flavor_count += 1
            fpath = f"{gpath}.flavors[{fi}]"
            if flavor.name in flavor_owner:
                other = flavor_owner[flavor.name]
                where = "this group" if other == gi else f"{path}[{other}]"
                out.append(
                    errors.FieldError(
                        f"{fpath}.name",
                        f"flavor {flavor.name!r} is already listed in {where}; list each "
                        "flavor in one resource group only",
                    )
                )
            else:
                flavor_owner[flavor.name] = gi
                out += _validate_name(flavor.name, f"{fpath}.name", "ResourceFlavor name")
            out += _validate_flavor_quotas(
                group,
                flavor,
                fpath,
                has_parent=has_parent,
                parent_word=parent_word,
                lending_within_nominal=lending_within_nominal,
            )
    if flavor_count > _MAX_FLAVORS:
        out.append(
            errors.FieldError(
                path,
                f"{flavor_count} flavors listed; at most {_MAX_FLAVORS} are allowed in all "
                "resource groups together, remove some",
            )
        )
    return out


def _validate_flavor_quotas(
    group: quota.ResourceGroup,
    flavor: quota.FlavorQuotas,
    fpath: str,
    *,
    has_parent: bool,
    parent_word: str,
    lending_within_nominal: bool,
) -> FieldErrors:
    out: FieldErrors = []
    covered = list(group.covered_resources)
    listed = [r.name for r in flavor.resources]
    if listed != covered:
        out.append(
            errors.FieldError(
                f"{fpath}.resources",
                f"lists {listed} but the group's coveredResources are {covered}; list exactly "
                "the covered resources, in the same order",
            )
        )
    for qi, res in enumerate(flavor.resources):
        qpath = f"{fpath}.resources[{qi}]"
        if res.borrowing_limit is not None and not has_parent:
            out.append(
                errors.FieldError(
                    f"{qpath}.borrowingLimit",
                    f"must not be set without {parent_word}; remove it or set {parent_word}",
                )
            )
        if res.lending_limit is not None:
            if not has_parent:
                out.append(
                    errors.FieldError(
                        f"{qpath}.lendingLimit",
                        f"must not be set without {parent_word}; remove it or set {parent_word}",
                    )
                )
            elif lending_within_nominal and res.lending_limit > res.nominal_quota:
                out.append(
                    errors.FieldError(
                        f"{qpath}.lendingLimit",
                        "must be less than or equal to nominalQuota; lower it or raise "
                        "nominalQuota",
                    )
                )
    return out


def validate_cluster_queue(cq: clusterqueue.ClusterQueue) -> FieldErrors:
    """Check a ClusterQueue's quotas, cohort, selector, preemption and fungibility settings."""
    spec = cq.spec
    out: FieldErrors = []
    if spec.cohort_name is not None:
        out += _validate_name(spec.cohort_name, "spec.cohortName", "cohort name")
    out += validate_resource_groups(
        spec.resource_groups,
        "spec.resourceGroups",
        has_parent=spec.cohort_name is not None,
        parent_word="spec.cohortName",
    )
    if spec.namespace_selector is not None:
        out += validate_selector(spec.namespace_selector, "spec.namespaceSelector")
    out += _validate_preemption(spec.preemption)
    fung = spec.flavor_fungibility
    try_next = clusterqueue.FungibilityPolicy.TRY_NEXT_FLAVOR
    if fung.preference is not None and not (
        fung.when_can_borrow == try_next and fung.when_can_preempt == try_next
    ):
        out.append(
            errors.FieldError(
                "spec.flavorFungibility.preference",
                "only allowed when whenCanBorrow and whenCanPreempt are both TryNextFlavor; "
                "set both to TryNextFlavor or remove preference",
            )
        )
    out += _validate_weight(spec.fair_sharing, "spec.fairSharing.weight")
    if (
        spec.backfill is not None
        and spec.queueing_strategy != clusterqueue.QueueingStrategy.BACKFILL
    ):
        out.append(
            errors.FieldError(
                "spec.backfill",
                f"only allowed with queueingStrategy Backfill (it is {spec.queueing_strategy}); "
                "set queueingStrategy: Backfill or remove backfill",
            )
        )
    if spec.backfill is not None and spec.backfill.default_runtime <= 0:
        out.append(
            errors.FieldError(
                "spec.backfill.defaultRuntime", "must be longer than 0s; write e.g. 1h"
            )
        )
    return out


def _validate_preemption(pre: clusterqueue.ClusterQueuePreemption) -> FieldErrors:
    out: FieldErrors = []
    policy = clusterqueue.PreemptionPolicy
    if pre.within_cluster_queue == policy.ANY:
        out.append(
            errors.FieldError(
                "spec.preemption.withinClusterQueue",
                "Any is not allowed here; use Never, LowerPriority or LowerOrNewerEqualPriority",
            )
        )
    if pre.reclaim_within_cohort == policy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        out.append(
            errors.FieldError(
                "spec.preemption.reclaimWithinCohort",
                "LowerOrNewerEqualPriority is not allowed here; use Never, LowerPriority or Any",
            )
        )
    borrow = pre.borrow_within_cohort
    if borrow.policy not in {policy.NEVER, policy.LOWER_PRIORITY}:
        out.append(
            errors.FieldError(
                "spec.preemption.borrowWithinCohort.policy",
                f"{borrow.policy} is not allowed here; use Never or LowerPriority",
            )
        )
    elif pre.reclaim_within_cohort == policy.NEVER and borrow.policy != policy.NEVER:
        out.append(
            errors.FieldError(
                "spec.preemption.borrowWithinCohort.policy",
                "requires reclaimWithinCohort other than Never; set reclaimWithinCohort or "
                "set this policy to Never",
            )
        )
    if borrow.max_priority_threshold is not None and borrow.max_priority_threshold not in _INT32:
        out.append(
            errors.FieldError(
                "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
                "must fit in a 32-bit signed integer; use a value from -2147483648 to 2147483647",
            )
        )
    return out


def _validate_weight(fair: quota.FairSharing | None, path: str) -> FieldErrors:
    if fair is not None and fair.weight < 0:
        return [errors.FieldError(path, "must be >= 0; use 0 or a positive weight")]
    return []


def validate_cohort(co: cohort.Cohort) -> FieldErrors:
    """Check a Cohort's quotas and parent."""
    spec = co.spec
    out: FieldErrors = []
    if spec.parent_name is not None:
        out += _validate_name(spec.parent_name, "spec.parentName", "cohort name")
        if spec.parent_name == co.metadata.name:
            out.append(
                errors.FieldError(
                    "spec.parentName",
                    "a cohort cannot be its own parent; name another cohort or remove parentName",
                )
            )
    out += validate_resource_groups(
        spec.resource_groups,
        "spec.resourceGroups",
        has_parent=spec.parent_name is not None,
        parent_word="spec.parentName",
        lending_within_nominal=False,
    )
    out += _validate_weight(spec.fair_sharing, "spec.fairSharing.weight")
    scope = spec.admission_scope
    if (
        spec.parent_name is not None
        and scope is not None
        and scope.admission_mode == clusterqueue.AdmissionMode.USAGE_BASED
    ):
        out.append(
            errors.FieldError(
                "spec.admissionScope",
                "only a root cohort orders its queues by usage, and this one has a parent; "
                "set it on the root cohort (the one without parentName)",
            )
        )
    return out


def validate_local_queue(lq: localqueue.LocalQueue) -> FieldErrors:
    """Check a LocalQueue's reference to its ClusterQueue."""
    out: FieldErrors = []
    if not lq.spec.cluster_queue:
        out.append(errors.FieldError("spec.clusterQueue", "required; name a ClusterQueue"))
    else:
        out += _validate_name(lq.spec.cluster_queue, "spec.clusterQueue", "ClusterQueue name")
    out += _validate_weight(lq.spec.fair_sharing, "spec.fairSharing.weight")
    return out


def validate_workload(wl: workload.Workload) -> FieldErrors:
    """Check a Workload's pod sets, queue and priority."""
    out: FieldErrors = []
    seen: dict[str, int] = {}
    for i, ps in enumerate(wl.spec.pod_sets):
        path = f"spec.podSets[{i}]"
        if ps.name in seen:
            out.append(
                errors.FieldError(
                    f"{path}.name",
                    f"pod set name {ps.name!r} is already used by spec.podSets[{seen[ps.name]}]; "
                    "give each pod set a unique name",
                )
            )
        else:
            seen[ps.name] = i
        if len(ps.name) > _MAX_LABEL or not _DNS_LABEL.match(ps.name):
            out.append(
                errors.FieldError(
                    f"{path}.name",
                    f"{ps.name!r} is not a DNS label; use lowercase letters, digits and '-' "
                    f"(at most {_MAX_LABEL} characters)",
                )
            )
        if ps.min_count is not None and ps.min_count > ps.count:
            out.append(
                errors.FieldError(
                    f"{path}.minCount",
                    f"must be less than or equal to count ({ps.count}); lower minCount",
                )
            )
        out += _validate_tolerations(
            ps.template.spec.tolerations, f"{path}.template.spec.tolerations"
        )
        if ps.topology_request is not None:
            out += topology.request_problems(ps.topology_request, f"{path}.topologyRequest")
    out += validate_placement_annotations(wl)
    spec = wl.spec
    if spec.queue_name is not None:
        out += _validate_name(spec.queue_name, "spec.queueName", "LocalQueue name")
    if spec.priority is not None and spec.priority not in _INT32:
        out.append(
            errors.FieldError(
                "spec.priority",
                "must fit in a 32-bit signed integer; use a value from -2147483648 to 2147483647",
            )
        )
    out += validate_runtime_annotations(wl.metadata.annotations)
    out += validate_preemption_annotations(wl.metadata.annotations)
    ref = spec.priority_class_ref
    if ref is not None:
        out += _validate_priority_class_ref(ref)
        if spec.priority is None:
            out.append(
                errors.FieldError(
                    "spec.priority",
                    "required when priorityClassRef is set; set it to the class's value",
                )
            )
    return out


def validate_placement_annotations(wl: workload.Workload) -> FieldErrors:
    """Check the topology placement annotations of a job's pod templates, by pod set."""
    out: FieldErrors = []
    for i, ps in enumerate(wl.spec.pod_sets):
        out += topology.annotation_problems(
            ps.template.metadata.annotations, f"spec.podSets[{i}].template.metadata"
        )
    return out


def validate_runtime_annotations(annotations: dict[str, str]) -> FieldErrors:
    """Check ``berth.dev/expected-runtime`` and ``berth.dev/runtime-limit`` are durations > 0."""
    out: FieldErrors = []
    for name in workload.RUNTIME_ANNOTATIONS:
        value = annotations.get(name)
        if value is None:
            continue
        path = f"metadata.annotations[{name}]"
        try:
            seconds = duration.parse(value)
        except duration.DurationError as err:
            out.append(errors.FieldError(path, str(err)))
            continue
        if seconds <= 0:
            out.append(errors.FieldError(path, "must be longer than 0s; write e.g. 2h"))
    return out


def validate_preemption_annotations(annotations: dict[str, str]) -> FieldErrors:
    """Check ``berth.dev/checkpointed-at`` is a time and ``berth.dev/priority-boost`` an integer."""
    out: FieldErrors = []
    checks = (
        (workload.CHECKPOINTED_AT_ANNOTATION, workload.parse_checkpoint_time),
        (workload.PRIORITY_BOOST_ANNOTATION, workload.parse_priority_boost),
    )
    for name, parse in checks:
        value = annotations.get(name)
        if value is None:
            continue
        try:
            parse(value)
        except ValueError as err:
            out.append(errors.FieldError(f"metadata.annotations[{name}]", str(err)))
    return out


_REF_KINDS = {"berth.dev": "WorkloadPriorityClass", "scheduling.k8s.io": "PriorityClass"}


def _validate_priority_class_ref(ref: workload.PriorityClassRef) -> FieldErrors:
    out: FieldErrors = []
    want = _REF_KINDS[ref.group]
    if ref.kind != want:
        out.append(
            errors.FieldError(
                "spec.priorityClassRef.kind",
                f"group {ref.group} only holds kind {want}; set kind: {want} or change the group",
            )
        )
    out += _validate_name(ref.name, "spec.priorityClassRef.name", "priority class name")
    return out


_ALLOWED_STRATEGIES = [
    [configuration.PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE],
    [configuration.PreemptionStrategy.LESS_THAN_INITIAL_SHARE],
    [
        configuration.PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        configuration.PreemptionStrategy.LESS_THAN_INITIAL_SHARE,
    ],
]


def validate_configuration(cfg: configuration.Configuration) -> FieldErrors:
    """Check the operator Configuration."""
    out: FieldErrors = []
    if cfg.fair_sharing is not None and cfg.fair_sharing.preemption_strategies not in (
        _ALLOWED_STRATEGIES
    ):
        out.append(
            errors.FieldError(
                "fairSharing.preemptionStrategies",
                "use [LessThanOrEqualToFinalShare], [LessThanInitialShare] or "
                "[LessThanOrEqualToFinalShare, LessThanInitialShare]",
            )
        )
    if cfg.managed_jobs_namespace_selector is not None:
        out += validate_selector(
            cfg.managed_jobs_namespace_selector, "managedJobsNamespaceSelector"
        )
    wfpr = cfg.wait_for_pods_ready
    if wfpr is not None:
        if wfpr.timeout <= 0:
            out.append(
                errors.FieldError(
                    "waitForPodsReady.timeout", "must be greater than 0s; use e.g. 5m or 30m"
                )
            )
        strat = wfpr.requeuing_strategy
        if strat.backoff_max_seconds < strat.backoff_base_seconds:
            out.append(
                errors.FieldError(
                    "waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
                    f"must be greater than or equal to backoffBaseSeconds "
                    f"({strat.backoff_base_seconds}); raise it or lower backoffBaseSeconds",
                )
            )
    if cfg.admission_fair_sharing is not None:
        out += _validate_admission_fair_sharing(cfg.admission_fair_sharing)
    seen_inputs: dict[str, int] = {}
    for i, t in enumerate(cfg.resources.transformations):
        if t.input in seen_inputs:
            out.append(
                errors.FieldError(
                    f"resources.transformations[{i}].input",
                    f"{t.input!r} is already transformed by "
                    f"resources.transformations[{seen_inputs[t.input]}]; merge the two entries",
                )
            )
        else:
            seen_inputs[t.input] = i
    return out


def _validate_admission_fair_sharing(afs: configuration.AdmissionFairSharing) -> FieldErrors:
    out: FieldErrors = []
    if afs.usage_sampling_interval <= 0:
        out.append(
            errors.FieldError(
                "admissionFairSharing.usageSamplingInterval",
                "must be greater than 0s; use e.g. 5m",
            )
        )
    for res, weight in sorted(afs.resource_weights.items()):
        if not math.isfinite(weight) or weight < 0:
            out.append(
                errors.FieldError(
                    f"admissionFairSharing.resourceWeights[{res}]",
                    f"{weight} is not a weight; use 0 (leave it out) or a positive number",
                )
            )
    return out
