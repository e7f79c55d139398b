"""Semantic validation of Berth objects: every rule a schema cannot express.

Each ``validate_*`` function is pure and returns *every* ``FieldError`` it finds, with the YAML path
of the field and a message that says how to fix it. Called by the loader (``berth.api.kinds``), the
validating webhook and the simulator; an empty list means valid.
"""

from __future__ import annotations

import re

from berth.api import (
    base,
    clusterqueue,
    cohort,
    configuration,
    errors,
    localqueue,
    quota,
    workload,
)

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_FLAVORS = 256

FieldErrors = list[errors.FieldError]


def validate(obj: base.Object) -> FieldErrors:
    """Validate any Berth object by its kind."""
    out = _validate_metadata(obj)
    if isinstance(obj, clusterqueue.ClusterQueue):
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
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return [
            errors.FieldError(
                "metadata.name",
                f"{name!r} is not a valid name; use lowercase letters, digits, '-' and '.', "
                "starting and ending with a letter or digit (at most 253 characters)",
            )
        ]
    return []


def validate_resource_groups(
    groups: list[quota.ResourceGroup], path: str, *, has_parent: bool, parent_word: str
) -> FieldErrors:
    """Check resource groups: coverage, duplicates, and limits that need a cohort (or parent)."""
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
                        f"resource {res!r} is already covered by {where}; a resource may appear "
                        "in one resource group only",
                    )
                )
            else:
                resource_owner[res] = gi
        for fi, flavor in enumerate(group.flavors):
            flavor_count += 1
            fpath = f"{gpath}.flavors[{fi}]"
            if flavor.name in flavor_owner:
                other = flavor_owner[flavor.name]
                where = "this group" if other == gi else f"{path}[{other}]"
                out.append(
                    errors.FieldError(
                        f"{fpath}.name",
                        f"flavor {flavor.name!r} is already listed in {where}; a flavor may "
                        "appear in one resource group only",
                    )
                )
            else:
                flavor_owner[flavor.name] = gi
            out += _validate_flavor_quotas(
                group, flavor, fpath, has_parent=has_parent, parent_word=parent_word
            )
    if flavor_count > _MAX_FLAVORS:
        out.append(
            errors.FieldError(
                path, f"{flavor_count} flavors listed; at most {_MAX_FLAVORS} allowed"
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
            elif res.lending_limit > res.nominal_quota:
                out.append(
                    errors.FieldError(
                        f"{qpath}.lendingLimit",
                        "must be less than or equal to nominalQuota; lower it or raise "
                        "nominalQuota",
                    )
                )
    return out


def validate_cluster_queue(cq: clusterqueue.ClusterQueue) -> FieldErrors:
    """Check a ClusterQueue's quotas, preemption and fungibility settings."""
    spec = cq.spec
    out = validate_resource_groups(
        spec.resource_groups,
        "spec.resourceGroups",
        has_parent=spec.cohort_name is not None,
        parent_word="spec.cohortName",
    )
    policy = clusterqueue.PreemptionPolicy
    pre = spec.preemption
    if pre.within_cluster_queue == policy.ANY:
        out.append(
            errors.FieldError(
                "spec.preemption.withinClusterQueue",
                "must be one of Never, LowerPriority, LowerOrNewerEqualPriority",
            )
        )
    if pre.reclaim_within_cohort == policy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        out.append(
            errors.FieldError(
                "spec.preemption.reclaimWithinCohort", "must be one of Never, LowerPriority, Any"
            )
        )
    if pre.borrow_within_cohort.policy not in {policy.NEVER, policy.LOWER_PRIORITY}:
        out.append(
            errors.FieldError(
                "spec.preemption.borrowWithinCohort.policy", "must be Never or LowerPriority"
            )
        )
    if (
        pre.reclaim_within_cohort == policy.NEVER
        and pre.borrow_within_cohort.policy != policy.NEVER
    ):
        out.append(
            errors.FieldError(
                "spec.preemption.borrowWithinCohort.policy",
                "requires reclaimWithinCohort other than Never; set reclaimWithinCohort or "
                "set this policy to Never",
            )
        )
    fung = spec.flavor_fungibility
    try_next = clusterqueue.FungibilityPolicy.TRY_NEXT_FLAVOR
    if fung.preference is not None and not (
        fung.when_can_borrow == try_next and fung.when_can_preempt == try_next
    ):
        out.append(
            errors.FieldError(
                "spec.flavorFungibility.preference",
                "only allowed when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
            )
        )
    out += _validate_weight(spec.fair_sharing, "spec.fairSharing.weight")
    return out


def _validate_weight(fair: quota.FairSharing | None, path: str) -> FieldErrors:
    if fair is not None and fair.weight < 0:
        return [errors.FieldError(path, "must be >= 0")]
    return []


def validate_cohort(co: cohort.Cohort) -> FieldErrors:
    """Check a Cohort's quotas and parent."""
    spec = co.spec
    out = validate_resource_groups(
        spec.resource_groups,
        "spec.resourceGroups",
        has_parent=spec.parent_name is not None,
        parent_word="spec.parentName",
    )
    if spec.parent_name is not None and spec.parent_name == co.metadata.name:
        out.append(errors.FieldError("spec.parentName", "a cohort cannot be its own parent"))
    out += _validate_weight(spec.fair_sharing, "spec.fairSharing.weight")
    return out


def validate_local_queue(lq: localqueue.LocalQueue) -> FieldErrors:
    """Check a LocalQueue's reference to its ClusterQueue."""
    out: FieldErrors = []
    if not lq.spec.cluster_queue:
        out.append(errors.FieldError("spec.clusterQueue", "required; name a ClusterQueue"))
    out += _validate_weight(lq.spec.fair_sharing, "spec.fairSharing.weight")
    return out


def validate_workload(wl: workload.Workload) -> FieldErrors:
    """Check a Workload's pod sets."""
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
        if len(ps.name) > 63 or not _DNS_LABEL.match(ps.name):
            out.append(
                errors.FieldError(
                    f"{path}.name",
                    f"{ps.name!r} is not a DNS label; use lowercase letters, digits and '-'",
                )
            )
        if ps.min_count is not None and ps.min_count > ps.count:
            out.append(
                errors.FieldError(
                    f"{path}.minCount",
                    f"must be less than or equal to count ({ps.count}); lower minCount",
                )
            )
    if wl.spec.priority is not None and not -(2**31) <= wl.spec.priority < 2**31:
        out.append(errors.FieldError("spec.priority", "must fit in a 32-bit signed integer"))
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
                "must be [LessThanOrEqualToFinalShare], [LessThanInitialShare] or "
                "[LessThanOrEqualToFinalShare, LessThanInitialShare]",
            )
        )
    wfpr = cfg.wait_for_pods_ready
    if wfpr is not None:
        if wfpr.timeout <= 0:
            out.append(errors.FieldError("waitForPodsReady.timeout", "must be greater than 0s"))
        strat = wfpr.requeuing_strategy
        if strat.backoff_max_seconds < strat.backoff_base_seconds:
            out.append(
                errors.FieldError(
                    "waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
                    "must be greater than or equal to backoffBaseSeconds",
                )
            )
    return out
