from __future__ import annotations

import re
from typing import Any

import pytest

import builders
from berth.api import errors, kinds
from builders import flavor_quotas as fq

GPU = "nvidia.com/gpu"
QUOTA = "spec.resourceGroups[0].flavors[0].resources[0]"

_FIX = re.compile(
    r"\b(use|set|remove|add|lower|raise|give|list|name|write|merge|rename|should|must)\b",
    re.IGNORECASE,
)
"""Every message tells the reader what to change; these words are how ours and pydantic's do."""


def cq(name: str = "team-a") -> builders.ClusterQueueBuilder:
    return builders.ClusterQueueBuilder(name)


def cohort(name: str = "research") -> builders.CohortBuilder:
    return builders.CohortBuilder(name)


def wl() -> builders.WorkloadBuilder:
    return builders.WorkloadBuilder("train", "ml").queue("q")


def rf() -> builders.ResourceFlavorBuilder:
    return builders.ResourceFlavorBuilder("a100")


def lq() -> builders.LocalQueueBuilder:
    return builders.LocalQueueBuilder("q", "ml", "team-a")


def cfg() -> builders.ConfigurationBuilder:
    return builders.ConfigurationBuilder()


INVALID = [
    # --- ClusterQueue quotas -------------------------------------------------------------------
    pytest.param(
        cq().cohort("r").flavor_quotas("a100", {GPU: (4, None, 8)}).raw(),
        [f"{QUOTA}.lendingLimit"],
        "lower it or raise nominalQuota",
        id="lending limit above nominal quota",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {GPU: (4, 2)}).raw(),
        [f"{QUOTA}.borrowingLimit"],
        "remove it or set spec.cohortName",
        id="borrowing limit without a cohort",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {GPU: (4, None, 2)}).raw(),
        [f"{QUOTA}.lendingLimit"],
        "remove it or set spec.cohortName",
        id="lending limit without a cohort",
    ),
    pytest.param(
        cq().resource_group(fq("a100", {"cpu": 1})).resource_group(fq("h100", {"cpu": 1})).raw(),
        ["spec.resourceGroups[1].coveredResources[0]"],
        "list each resource in one resource group only",
        id="resource covered by two groups",
    ),
    pytest.param(
        cq().resource_group(fq("a100", {"cpu": 1})).resource_group(fq("a100", {GPU: 1})).raw(),
        ["spec.resourceGroups[1].flavors[0].name"],
        "list each flavor in one resource group only",
        id="flavor listed in two groups",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {GPU: 1}).flavor_quotas("a100", {GPU: 2}).raw(),
        ["spec.resourceGroups[0].flavors[1].name"],
        "already listed in this group",
        id="flavor listed twice in one group",
    ),
    pytest.param(
        cq().resource_group(fq("a100", {"cpu": 1}), covered=["cpu", "memory"]).raw(),
        ["spec.resourceGroups[0].flavors[0].resources"],
        "list exactly the covered resources",
        id="flavor lists fewer resources than the group covers",
    ),
    pytest.param(
        cq()
        .resource_group(fq("a100", {"cpu": 1, "memory": "1Gi"}), covered=["memory", "cpu"])
        .raw(),
        ["spec.resourceGroups[0].flavors[0].resources"],
        "in the same order",
        id="flavor lists the covered resources in another order",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {GPU: "lots"}).raw(),
        [f"{QUOTA}.nominalQuota"],
        "write a number such as 4, 500m or 16Gi",
        id="quota that is not a quantity",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {GPU: "-2"}).raw(),
        [f"{QUOTA}.nominalQuota"],
        "must be >= 0",
        id="negative quota",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {"memory": "4Gb"}).raw(),
        [f"{QUOTA}.nominalQuota"],
        "use one of m, k, M, G, T, Ki, Mi, Gi, Ti",
        id="quota with an unknown suffix",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {GPU: 1}).remove(f"{QUOTA}.nominalQuota").raw(),
        [f"{QUOTA}.nominalQuota"],
        "add it",
        id="quota without nominalQuota",
    ),
    pytest.param(
        cq().resource_group(covered=[]).raw(),
        ["spec.resourceGroups[0].coveredResources", "spec.resourceGroups[0].flavors"],
        "should have at least 1 item",
        id="empty resource group",
    ),
    pytest.param(
        cq()
        .mutate(
            lambda d: d["spec"].update(
                resourceGroups=[
                    {"coveredResources": [f"r{i}"], "flavors": [fq(f"f{i}", {f"r{i}": 1})]}
                    for i in range(17)
                ]
            )
        )
        .raw(),
        ["spec.resourceGroups"],
        "should have at most 16 items",
        id="seventeen resource groups",
    ),
    pytest.param(
        cq().flavor_quotas("A100", {GPU: 1}).raw(),
        ["spec.resourceGroups[0].flavors[0].name"],
        "use lowercase letters",
        id="flavor name that is not a DNS subdomain",
    ),
    # --- ClusterQueue policies -----------------------------------------------------------------
    pytest.param(
        cq().strategy("FIFO").raw(),
        ["spec.queueingStrategy"],
        "should be 'StrictFIFO', 'BestEffortFIFO' or 'Backfill'",
        id="unknown queueing strategy",
    ),
    pytest.param(
        cq().set("spec.backfill", {"reservationDepth": 2}).raw(),
        ["spec.backfill"],
        "only allowed with queueingStrategy Backfill (it is BestEffortFIFO); set queueingStrategy: "
        "Backfill or remove backfill",
        id="backfill settings on a queue of another strategy",
    ),
    pytest.param(
        cq().strategy("Backfill").set("spec.backfill", {"reservationDepth": 0}).raw(),
        ["spec.backfill.reservationDepth"],
        "greater than or equal to 1",
        id="reservation depth below 1",
    ),
    pytest.param(
        cq().strategy("Backfill").set("spec.backfill", {"defaultRuntime": "soon"}).raw(),
        ["spec.backfill.defaultRuntime"],
        "'soon' is not a duration; write e.g. 90s, 5m or 1h30m",
        id="default runtime that is not a duration",
    ),
    pytest.param(
        cq().strategy("Backfill").set("spec.backfill", {"defaultRuntime": "0s"}).raw(),
        ["spec.backfill.defaultRuntime"],
        "must be longer than 0s",
        id="zero default runtime",
    ),
    pytest.param(
        cq().stop_policy("Drain").raw(),
        ["spec.stopPolicy"],
        "should be 'None', 'Hold' or 'HoldAndDrain'",
        id="unknown stop policy",
    ),
    pytest.param(
        cq().set("spec.cohort", "research").raw(),
        ["spec.cohort"],
        "write cohortName instead",
        id="v1beta1 cohort field",
    ),
    pytest.param(
        cq().set("spec.preemptions", {}).raw(),
        ["spec.preemptions"],
        "remove it or check its spelling",
        id="misspelt field",
    ),
    pytest.param(
        cq().protection(reclaim_within_cohort="-10m").raw(),
        ["spec.preemptionProtection.reclaimWithinCohort.minAdmitDuration"],
        "'-10m' is negative; durations must be >= 0",
        id="negative protection window",
    ),
    pytest.param(
        cq().protection(fair_sharing="30s").raw(),
        ["spec.preemptionProtection.fairSharing.minAdmitDuration"],
        "'30s' is outside 1m..720h; write 0s for no protection, at least 1m",
        id="protection window under a minute",
    ),
    pytest.param(
        cq().protection(within_cluster_queue="1000h").raw(),
        ["spec.preemptionProtection.withinClusterQueue.minAdmitDuration"],
        "at most 720h (longer ones let no queue reclaim its quota; use a higher priority instead)",
        id="protection window over 30 days",
    ),
    pytest.param(
        cq().set("spec.preemptionProtection", {"fairSharing": {}}).raw(),
        ["spec.preemptionProtection.fairSharing.minAdmitDuration"],
        "required field is missing; add it",
        id="protection without its window",
    ),
    pytest.param(
        cq().set("spec.preemptionProtection", {"reclaim": {"minAdmitDuration": "5m"}}).raw(),
        ["spec.preemptionProtection.reclaim"],
        "remove it or check its spelling",
        id="unknown kind of protection",
    ),
    pytest.param(
        cq().set("spec.preemptionBudget", {"limit": 0, "limitWindowDuration": "1h"}).raw(),
        ["spec.preemptionBudget.limit"],
        "greater than or equal to 1",
        id="preemption budget of zero",
    ),
    pytest.param(
        cq().set("spec.preemptionBudget", {"limit": 5, "limitWindowDuration": "30s"}).raw(),
        ["spec.preemptionBudget.limitWindowDuration"],
        "'30s' is outside 1m..720h; write e.g. 1h or 24h",
        id="preemption budget window under a minute",
    ),
    pytest.param(
        cq().set("spec.preemptionBudget", {"limit": 5}).raw(),
        ["spec.preemptionBudget.limitWindowDuration"],
        "required field is missing; add it",
        id="preemption budget without a window",
    ),
    pytest.param(
        cq().cohort("r").preemption(within_cluster_queue="Any").raw(),
        ["spec.preemption.withinClusterQueue"],
        "use Never, LowerPriority or LowerOrNewerEqualPriority",
        id="withinClusterQueue Any",
    ),
    pytest.param(
        cq().cohort("r").preemption(reclaim_within_cohort="LowerOrNewerEqualPriority").raw(),
        ["spec.preemption.reclaimWithinCohort"],
        "use Never, LowerPriority or Any",
        id="reclaimWithinCohort LowerOrNewerEqualPriority",
    ),
    pytest.param(
        cq().cohort("r").preemption(borrow_within_cohort="LowerPriority").raw(),
        ["spec.preemption.borrowWithinCohort.policy"],
        "set reclaimWithinCohort or set this policy to Never",
        id="borrowWithinCohort without reclaimWithinCohort",
    ),
    pytest.param(
        cq().cohort("r").preemption(reclaim_within_cohort="Any", borrow_within_cohort="Any").raw(),
        ["spec.preemption.borrowWithinCohort.policy"],
        "use Never or LowerPriority",
        id="borrowWithinCohort Any",
    ),
    pytest.param(
        cq()
        .cohort("r")
        .preemption("LowerPriority", "Any", "LowerPriority", max_priority_threshold=2**31)
        .raw(),
        ["spec.preemption.borrowWithinCohort.maxPriorityThreshold"],
        "use a value from -2147483648 to 2147483647",
        id="maxPriorityThreshold beyond 32 bits",
    ),
    pytest.param(
        cq().fungibility("MayStopSearch", "TryNextFlavor", "BorrowingOverPreemption").raw(),
        ["spec.flavorFungibility.preference"],
        "set both to TryNextFlavor or remove preference",
        id="fungibility preference unless both policies try the next flavor",
    ),
    pytest.param(
        cq().fungibility(when_can_borrow="Borrow").raw(),
        ["spec.flavorFungibility.whenCanBorrow"],
        "should be 'MayStopSearch' or 'TryNextFlavor'",
        id="v1beta1 fungibility value Borrow",
    ),
    pytest.param(
        cq().cohort("Research_Team").raw(),
        ["spec.cohortName"],
        "use lowercase letters",
        id="cohort name that is not a DNS subdomain",
    ),
    pytest.param(
        cq().namespace_selector(match_expressions=[{"key": "team", "operator": "In"}]).raw(),
        ["spec.namespaceSelector.matchExpressions[0].values"],
        "list at least one value",
        id="namespace selector In without values",
    ),
    pytest.param(
        cq()
        .namespace_selector(
            match_expressions=[{"key": "team", "operator": "Exists", "values": ["a"]}]
        )
        .raw(),
        ["spec.namespaceSelector.matchExpressions[0].values"],
        "remove the values",
        id="namespace selector Exists with values",
    ),
    pytest.param(
        cq().namespace_selector(match_expressions=[{"key": "team", "operator": "Equals"}]).raw(),
        ["spec.namespaceSelector.matchExpressions[0].operator"],
        "should be 'In', 'NotIn', 'Exists' or 'DoesNotExist'",
        id="namespace selector with an unknown operator",
    ),
    pytest.param(
        cq().fair_weight("-1").raw(),
        ["spec.fairSharing.weight"],
        "use a non-negative quantity",
        id="negative fair-sharing weight",
    ),
    # --- metadata ------------------------------------------------------------------------------
    pytest.param(
        cq("").raw(), ["metadata.name"], "give the object a name", id="object without a name"
    ),
    pytest.param(
        cq("Team_A").raw(), ["metadata.name"], "use lowercase letters", id="name with capitals"
    ),
    pytest.param(
        cq("a" * 254).raw(), ["metadata.name"], "at most 253 characters", id="name too long"
    ),
    # --- Cohort --------------------------------------------------------------------------------
    pytest.param(
        cohort().set("spec.preemptionBudget", {"limit": -1, "limitWindowDuration": "1h"}).raw(),
        ["spec.preemptionBudget.limit"],
        "greater than or equal to 1",
        id="negative cohort preemption budget",
    ),
    pytest.param(
        cohort().parent("research").raw(),
        ["spec.parentName"],
        "name another cohort or remove parentName",
        id="cohort that is its own parent",
    ),
    pytest.param(
        cohort().flavor_quotas("a100", {GPU: (4, 2)}).raw(),
        [f"{QUOTA}.borrowingLimit"],
        "remove it or set spec.parentName",
        id="cohort borrowing limit without a parent",
    ),
    pytest.param(
        cohort().flavor_quotas("a100", {GPU: (4, None, 2)}).raw(),
        [f"{QUOTA}.lendingLimit"],
        "remove it or set spec.parentName",
        id="cohort lending limit without a parent",
    ),
    pytest.param(
        cq().flavor_quotas("a100", {"GPU!": 1}).raw(),
        ["spec.resourceGroups[0].coveredResources[0]"],
        "write a name such as cpu, memory or nvidia.com/gpu",
        id="resource name that is not a qualified name",
    ),
    pytest.param(
        cohort().parent("Org").raw(),
        ["spec.parentName"],
        "use lowercase letters",
        id="cohort parent that is not a DNS subdomain",
    ),
    # --- LocalQueue ----------------------------------------------------------------------------
    pytest.param(
        builders.LocalQueueBuilder("q", "ml").raw(),
        ["spec.clusterQueue"],
        "add it",
        id="local queue without a cluster queue",
    ),
    pytest.param(
        builders.LocalQueueBuilder("q", "ml", "").raw(),
        ["spec.clusterQueue"],
        "name a ClusterQueue",
        id="local queue with an empty cluster queue",
    ),
    pytest.param(
        builders.LocalQueueBuilder("q", "ml", "Team A").raw(),
        ["spec.clusterQueue"],
        "use lowercase letters",
        id="local queue naming an invalid cluster queue",
    ),
    pytest.param(
        lq().stop_policy("Pause").raw(),
        ["spec.stopPolicy"],
        "should be 'None', 'Hold' or 'HoldAndDrain'",
        id="local queue with an unknown stop policy",
    ),
    pytest.param(lq().remove("spec").raw(), ["spec"], "add it", id="local queue without a spec"),
    # --- WorkloadPriorityClass -----------------------------------------------------------------
    pytest.param(
        builders.WorkloadPriorityClassBuilder("high").remove("value").raw(),
        ["value"],
        "add it",
        id="priority class without a value",
    ),
    pytest.param(
        builders.WorkloadPriorityClassBuilder("high", 2**31).raw(),
        ["value"],
        "should be less than or equal to 2147483647",
        id="priority class value beyond 32 bits",
    ),
    pytest.param(
        builders.WorkloadPriorityClassBuilder("high").set("value", "high").raw(),
        ["value"],
        "should be a valid integer",
        id="priority class value that is not a number",
    ),
    pytest.param(
        builders.WorkloadPriorityClassBuilder("high").description("x" * 2049).raw(),
        ["description"],
        "should have at most 2048 characters",
        id="priority class description too long",
    ),
    # --- ResourceFlavor ------------------------------------------------------------------------
    pytest.param(
        rf().node_labels({f"l{i}": "x" for i in range(9)}).raw(),
        ["spec.nodeLabels"],
        "should have at most 8 items",
        id="nine node labels",
    ),
    pytest.param(
        rf().taint("spot", "true", "NoRun").raw(),
        ["spec.nodeTaints[0].effect"],
        "should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
        id="taint with an unknown effect",
    ),
    pytest.param(
        rf().taint("spot").remove("spec.nodeTaints[0].key").raw(),
        ["spec.nodeTaints[0].key"],
        "add it",
        id="taint without a key",
    ),
    pytest.param(
        rf().topology("default").raw(),
        ["spec.nodeLabels"],
        "add the labels",
        id="topology without node labels",
    ),
    pytest.param(
        rf().toleration(key="spot", operator="Exists", value="true").raw(),
        ["spec.tolerations[0].value"],
        "remove the value",
        id="toleration Exists with a value",
    ),
    pytest.param(
        rf().toleration(operator="Equal", value="x").raw(),
        ["spec.tolerations[0].operator"],
        "set operator: Exists or give a key",
        id="toleration without a key that is not Exists",
    ),
    pytest.param(
        rf().toleration(key="spot", effect="NoSchedule", toleration_seconds=30).raw(),
        ["spec.tolerations[0].tolerationSeconds"],
        "set effect: NoExecute or remove it",
        id="tolerationSeconds without NoExecute",
    ),
    # --- Topology ------------------------------------------------------------------------------
    pytest.param(
        {
            "apiVersion": "berth.dev/v1beta1",
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {
                "levels": [{"nodeLabel": "rack name!"}, {"nodeLabel": "kubernetes.io/hostname"}]
            },
        },
        ["spec.levels[0].nodeLabel"],
        "write one such as topology.kubernetes.io/zone",
        id="topology level that is no label key",
    ),
    # --- Workload ------------------------------------------------------------------------------
    pytest.param(
        wl().pod_set("main", 1).annotations({"berth.dev/priority-boost": "high"}).raw(),
        ["metadata.annotations[berth.dev/priority-boost]"],
        "write e.g. 100 or -50",
        id="priority boost that is no integer",
    ),
    pytest.param(
        wl().pod_set("main", 1).annotations({"berth.dev/priority-boost": "-2000000000"}).raw(),
        ["metadata.annotations[berth.dev/priority-boost]"],
        "the span of priority classes",
        id="priority boost past a billion",
    ),
    pytest.param(
        wl().pod_set("main", 1).annotations({"berth.dev/checkpointed-at": "2026-12-02"}).raw(),
        ["metadata.annotations[berth.dev/checkpointed-at]"],
        "write e.g. 2026-12-02T10:00:00Z",
        id="checkpoint time without a zone",
    ),
    pytest.param(
        wl().pod_set("main", 1).annotations({"berth.dev/checkpointed-at": "yesterday"}).raw(),
        ["metadata.annotations[berth.dev/checkpointed-at]"],
        "is not an RFC 3339 time",
        id="checkpoint time that is no time",
    ),
    pytest.param(
        wl().pod_set("main", 2, min_count=3).raw(),
        ["spec.podSets[0].minCount"],
        "lower minCount",
        id="pod set minCount above count",
    ),
    pytest.param(
        wl().pod_set("workers", 1).pod_set("workers", 2).raw(),
        ["spec.podSets[1].name"],
        "give each pod set a unique name",
        id="duplicate pod set names",
    ),
    pytest.param(
        wl().pod_set("Main_Set", 1).raw(),
        ["spec.podSets[0].name"],
        "use lowercase letters, digits and '-'",
        id="pod set name that is not a DNS label",
    ),
    pytest.param(
        wl().pod_set("main", -1).raw(),
        ["spec.podSets[0].count"],
        "should be greater than or equal to 0",
        id="negative pod count",
    ),
    pytest.param(
        wl().pod_set("main", 2, min_count=-1).raw(),
        ["spec.podSets[0].minCount"],
        "should be greater than or equal to 0",
        id="negative minCount",
    ),
    pytest.param(
        wl().raw(), ["spec.podSets"], "should have at least 1 item", id="workload without pod sets"
    ),
    pytest.param(
        wl()
        .mutate(
            lambda d: d["spec"].update(podSets=[{"name": f"p{i}", "count": 1} for i in range(19)])
        )
        .raw(),
        ["spec.podSets"],
        "should have at most 18 items",
        id="nineteen pod sets",
    ),
    pytest.param(
        wl().pod_set().priority(2**31).raw(),
        ["spec.priority"],
        "use a value from -2147483648 to 2147483647",
        id="priority beyond 32 bits",
    ),
    pytest.param(
        wl().pod_set().priority_class("high").raw(),
        ["spec.priority"],
        "set it to the class's value",
        id="priority class reference without a priority",
    ),
    pytest.param(
        wl()
        .pod_set()
        .priority(1)
        .set(
            "spec.priorityClassRef",
            {"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
        )
        .raw(),
        ["spec.priorityClassRef.kind"],
        "set kind: PriorityClass or change the group",
        id="priority class kind that does not match its group",
    ),
    pytest.param(
        wl()
        .pod_set()
        .priority(1)
        .priority_class("high")
        .set("spec.priorityClassRef.group", "kueue.x-k8s.io")
        .raw(),
        ["spec.priorityClassRef.group"],
        "should be 'berth.dev' or 'scheduling.k8s.io'",
        id="Kueue's priority class group",
    ),
    pytest.param(
        wl().pod_set().queue("Team Queue").raw(),
        ["spec.queueName"],
        "use lowercase letters",
        id="queue name that is not a DNS subdomain",
    ),
    pytest.param(
        wl().pod_set().set("spec.maximumExecutionTimeSeconds", 0).raw(),
        ["spec.maximumExecutionTimeSeconds"],
        "should be greater than or equal to 1",
        id="zero maximum execution time",
    ),
    pytest.param(
        wl().pod_set("main", 1, requests={GPU: "two"}).raw(),
        ["spec.podSets[0].template.spec.containers[0].resources.requests"],
        "write a number such as 4, 500m or 16Gi",
        id="pod request that is not a quantity",
    ),
    pytest.param(
        wl().pod_set().set("spec.priorityClassName", "high").raw(),
        ["spec.priorityClassName"],
        "write priorityClassRef (with priority) instead",
        id="v1beta1 priorityClassName",
    ),
    pytest.param(
        wl()
        .pod_set("main", 1, tolerations=[{"key": "spot", "operator": "Exists", "value": "x"}])
        .raw(),
        ["spec.podSets[0].template.spec.tolerations[0].value"],
        "remove the value",
        id="pod template toleration Exists with a value",
    ),
    # --- Configuration -------------------------------------------------------------------------
    pytest.param(
        cfg().fair_sharing("LessThanInitialShare", "LessThanOrEqualToFinalShare").raw(),
        ["fairSharing.preemptionStrategies"],
        "use [LessThanOrEqualToFinalShare], [LessThanInitialShare] or",
        id="fair-sharing strategies in the wrong order",
    ),
    pytest.param(
        cfg().fair_sharing("Greedy").raw(),
        ["fairSharing.preemptionStrategies[0]"],
        "should be 'LessThanOrEqualToFinalShare' or 'LessThanInitialShare'",
        id="unknown fair-sharing strategy",
    ),
    pytest.param(
        cfg().set("preemptionProtection", {"fairSharing": {"minAdmitDuration": "forever"}}).raw(),
        ["preemptionProtection.fairSharing.minAdmitDuration"],
        "'forever' is not a duration; write e.g. 90s, 5m or 1h30m",
        id="protection window that is not a duration",
    ),
    pytest.param(
        cfg()
        .set("preemptionProtection", {"reclaimWithinCohort": {"minAdmitDuration": "59s"}})
        .raw(),
        ["preemptionProtection.reclaimWithinCohort.minAdmitDuration"],
        "'59s' is outside 1m..720h",
        id="operator-wide protection window under a minute",
    ),
    pytest.param(
        cfg().set("admissionFairSharing", {"usageSamplingInterval": "0s"}).raw(),
        ["admissionFairSharing.usageSamplingInterval"],
        "use e.g. 5m",
        id="usage sampled every 0s",
    ),
    pytest.param(
        cfg().set("admissionFairSharing", {"usageHalfLifeTime": "a week"}).raw(),
        ["admissionFairSharing.usageHalfLifeTime"],
        "is not a duration",
        id="usage half-life that is no duration",
    ),
    pytest.param(
        cfg().set("admissionFairSharing", {"resourceWeights": {"memory": -1}}).raw(),
        ["admissionFairSharing.resourceWeights[memory]"],
        "use 0 (leave it out) or a positive number",
        id="negative resource weight",
    ),
    pytest.param(
        cq().set("spec.admissionScope", {"admissionMode": "ByUsage"}).raw(),
        ["spec.admissionScope.admissionMode"],
        "UsageBasedAdmissionFairSharing",
        id="unknown admission mode",
    ),
    pytest.param(
        cohort()
        .parent("org")
        .set("spec.admissionScope", {"admissionMode": "UsageBasedAdmissionFairSharing"})
        .raw(),
        ["spec.admissionScope"],
        "set it on the root cohort",
        id="usage-based admission scope on a cohort with a parent (it would do nothing)",
    ),
    pytest.param(
        lq().set("spec.fairSharing", {"weight": "-1"}).raw(),
        ["spec.fairSharing.weight"],
        "use a non-negative quantity",
        id="negative LocalQueue weight",
    ),
    pytest.param(
        cfg().wait_for_pods_ready("0s").raw(),
        ["waitForPodsReady.timeout"],
        "use e.g. 5m or 30m",
        id="zero pods-ready timeout",
    ),
    pytest.param(
        cfg().wait_for_pods_ready("soon").raw(),
        ["waitForPodsReady.timeout"],
        "write e.g. 90s, 5m or 1h30m",
        id="pods-ready timeout that is not a duration",
    ),
    pytest.param(
        cfg().wait_for_pods_ready(recovery_timeout="-1").raw(),
        ["waitForPodsReady.recoveryTimeout"],
        "durations must be >= 0",
        id="negative recovery timeout",
    ),
    pytest.param(
        cfg().wait_for_pods_ready(backoff_base_seconds=60, backoff_max_seconds=30).raw(),
        ["waitForPodsReady.requeuingStrategy.backoffMaxSeconds"],
        "raise it or lower backoffBaseSeconds",
        id="backoff maximum below its base",
    ),
    pytest.param(
        cfg().wait_for_pods_ready(backoff_limit_count=-1).raw(),
        ["waitForPodsReady.requeuingStrategy.backoffLimitCount"],
        "should be greater than or equal to 0",
        id="negative backoff limit",
    ),
    pytest.param(
        cfg().wait_for_pods_ready(timestamp="Now").raw(),
        ["waitForPodsReady.requeuingStrategy.timestamp"],
        "should be 'Eviction' or 'Creation'",
        id="unknown requeuing timestamp",
    ),
    pytest.param(
        cfg().set("waitForPodsReady", {"enable": True}).raw(),
        ["waitForPodsReady.enable"],
        "remove it: a present waitForPodsReady is on, and waitForPodsReady: null turns it off",
        id="v1beta1 waitForPodsReady enable",
    ),
    pytest.param(
        cfg().transformation("example.com/mig", {GPU: 1}, strategy="Keep").raw(),
        ["resources.transformations[0].strategy"],
        "should be 'Retain' or 'Replace'",
        id="unknown transformation strategy",
    ),
    pytest.param(
        cfg()
        .transformation("example.com/mig", {GPU: 1})
        .transformation("example.com/mig", {"cpu": 1})
        .raw(),
        ["resources.transformations[1].input"],
        "merge the two entries",
        id="one resource transformed twice",
    ),
    pytest.param(
        cfg()
        .set(
            "managedJobsNamespaceSelector",
            {"matchExpressions": [{"key": "team", "operator": "NotIn"}]},
        )
        .raw(),
        ["managedJobsNamespaceSelector.matchExpressions[0].values"],
        "list at least one value",
        id="managed namespace selector NotIn without values",
    ),
]


def _problems(doc: dict[str, Any]) -> list[errors.FieldError]:
    obj, problems = kinds.try_load(doc)
    assert obj is not None or problems, "a document that does not load must say why"
    return problems


@pytest.mark.parametrize(("doc", "want_paths", "want_fix"), INVALID)
def test_invalid_document(doc: dict[str, Any], want_paths: list[str], want_fix: str) -> None:
    problems = _problems(doc)
    assert sorted(p.path for p in problems) == sorted(want_paths), problems
    for problem in problems:
        assert want_fix in problem.message, problem


@pytest.mark.parametrize(("doc", "want_paths", "want_fix"), INVALID)
def test_every_message_says_how_to_fix(
    doc: dict[str, Any], want_paths: list[str], want_fix: str
) -> None:
    del want_paths, want_fix
    for problem in _problems(doc):
        assert _FIX.search(problem.message), problem


def test_every_semantic_error_of_a_document_is_returned_at_once() -> None:
    doc = (
        builders.ClusterQueueBuilder("Team_A")
        .resource_group(fq("a100", {GPU: (4, 2, 8)}))
        .resource_group(fq("a100", {GPU: 1}))
        .preemption(within_cluster_queue="Any", borrow_within_cohort="LowerPriority")
        .fungibility(preference="PreemptionOverBorrowing")
        .raw()
    )
    assert sorted(p.path for p in _problems(doc)) == sorted(
        [
            "metadata.name",
            f"{QUOTA}.borrowingLimit",
            f"{QUOTA}.lendingLimit",
            "spec.resourceGroups[1].coveredResources[0]",
            "spec.resourceGroups[1].flavors[0].name",
            "spec.preemption.withinClusterQueue",
            "spec.preemption.borrowWithinCohort.policy",
            "spec.flavorFungibility.preference",
        ]
    )


def test_every_schema_error_of_a_document_is_returned_at_once() -> None:
    doc = (
        builders.WorkloadBuilder("train", "ml")
        .pod_set("main", -1, requests={GPU: "lots"})
        .pod_set("side", 1)
        .set("spec.podSets[1].minCount", "few")
        .set("spec.active", "maybe")
        .set("spec.priorityClassName", "high")
        .raw()
    )
    assert sorted(p.path for p in _problems(doc)) == sorted(
        [
            "spec.podSets[0].count",
            "spec.podSets[0].template.spec.containers[0].resources.requests",
            "spec.podSets[1].minCount",
            "spec.active",
            "spec.priorityClassName",
        ]
    )


VALID = [
    pytest.param(cq().cohort("r").flavor_quotas("a100", {GPU: (4, 4, 4)}).raw(), id="limits"),
    pytest.param(
        cq()
        .cohort("r")
        .preemption("LowerOrNewerEqualPriority", "LowerPriority", "LowerPriority")
        .fungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing")
        .raw(),
        id="every allowed policy combination at once",
    ),
    pytest.param(cq().no_namespace_selector().raw(), id="a queue no namespace may use"),
    pytest.param(cohort().parent("org").flavor_quotas("a100", {GPU: (4, 1, 4)}).raw(), id="co"),
    pytest.param(
        cohort().parent("org").flavor_quotas("a100", {GPU: (0, None, 2)}).raw(),
        id="a cohort may lend more than its own quota: the limit caps its whole subtree",
    ),
    pytest.param(
        rf()
        .toleration(operator="Exists")
        .toleration(key="k", effect="NoExecute", toleration_seconds=5)
        .raw(),
        id="tolerate everything, or NoExecute for a while",
    ),
    pytest.param(
        wl().pod_set("main", 4, min_count=4).priority_class("pc", 5, pod_priority_class=True).raw(),
        id="workload with a pod priority class",
    ),
    pytest.param(
        wl()
        .pod_set("main", 1)
        .annotations(
            {"berth.dev/priority-boost": "-50", "berth.dev/checkpointed-at": "2026-12-02T10:00:00Z"}
        )
        .raw(),
        id="workload with a negative boost and a checkpoint time",
    ),
    pytest.param(cfg().no_wait_for_pods_ready().raw(), id="configuration without pods-ready"),
    pytest.param(
        cfg()
        .set(
            "admissionFairSharing",
            {"usageHalfLifeTime": "0s", "resourceWeights": {"memory": 0, "nvidia.com/gpu": 2.5}},
        )
        .raw(),
        id="admission fair sharing with no memory and a zero half-life (Kueue's default)",
    ),
    pytest.param(
        cfg().fair_sharing("LessThanOrEqualToFinalShare", "LessThanInitialShare").raw(),
        id="both fair-sharing strategies in Kueue's order",
    ),
]


@pytest.mark.parametrize("doc", VALID)
def test_valid_document_has_no_errors(doc: dict[str, Any]) -> None:
    assert _problems(doc) == []


@pytest.mark.parametrize(("known", "warned"), [((), True), (("default",), False)])
def test_a_flavor_naming_a_topology_not_there_yet_is_let_through_with_a_warning(
    known: tuple[str, ...], warned: bool
) -> None:
    """The Topology may come next in the same apply; the warning says what happens meanwhile."""
    from berth.operator.webhooks import berth_admission  # noqa: PLC0415 - the webhook's decision on the same model

    flavor = rf().node_labels({"gpu": "a100"}).topology("default").raw()
    answer = berth_admission.validate_berth(
        {"operation": "CREATE", "object": flavor}, topologies=known
    )
    assert answer["allowed"] is True
    warnings = answer.get("warnings", [])
    assert bool(warnings) is warned
    assert not warned or "TopologyNotFound" in warnings[0]
