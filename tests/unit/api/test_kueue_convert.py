from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import builders
from berth.api import kinds, kueue_convert
from berth.entry import cli

V1BETA1 = "kueue.x-k8s.io/v1beta1"
V1BETA2 = "kueue.x-k8s.io/v1beta2"
CONFIG_V1BETA1 = "config.kueue.x-k8s.io/v1beta1"
CONFIG_V1BETA2 = "config.kueue.x-k8s.io/v1beta2"


def kueue(builder: builders._Builder, api_version: str) -> builders._Builder:
    """The same document in one of Kueue's API versions."""
    return builder.set("apiVersion", api_version)


def cq() -> builders.ClusterQueueBuilder:
    return builders.ClusterQueueBuilder("team-a").flavor_quotas("a100", {"nvidia.com/gpu": 8})


AFS = {"usageHalfLifeTime": "168h", "usageSamplingInterval": "5m", "resourceWeights": {"memory": 0}}
"""KEP-4136's admissionFairSharing section, as Kueue's Configuration and Berth's write it."""


def wl() -> builders.WorkloadBuilder:
    return builders.WorkloadBuilder("train", "ml").queue("q").pod_set("main", 2)


GROUP_ONLY: list[tuple[str, Callable[[], builders._Builder]]] = [
    ("ResourceFlavor", lambda: builders.ResourceFlavorBuilder("a100").node_labels({"gpu": "a100"})),
    ("LocalQueue", lambda: builders.LocalQueueBuilder("q", "ml", "team-a")),
    ("WorkloadPriorityClass", lambda: builders.WorkloadPriorityClassBuilder("hi", 9)),
    ("Cohort", lambda: builders.CohortBuilder("research").parent("org")),
]
"""Kinds that only change group, each named and made anew for every document."""

CASES = [
    # --- ClusterQueue -------------------------------------------------------------------------
    pytest.param(
        kueue(cq().set("spec.cohort", "research"), V1BETA1).raw(),
        cq().cohort("research").raw(),
        [],
        id="v1beta1 ClusterQueue cohort becomes cohortName",
    ),
    pytest.param(
        kueue(cq().cohort("research"), V1BETA2).raw(),
        cq().cohort("research").raw(),
        [],
        id="v1beta2 ClusterQueue only changes group",
    ),
    pytest.param(
        kueue(cq().set("spec.cohort", "old").cohort("new"), V1BETA1).raw(),
        cq().cohort("new").raw(),
        ["spec.cohort: dropped; spec.cohortName is also set and wins"],
        id="cohortName wins over a stray v1beta1 cohort",
    ),
    pytest.param(
        kueue(cq().fungibility("Borrow", "TryNextFlavor"), V1BETA1).raw(),
        cq().fungibility("MayStopSearch", "TryNextFlavor").raw(),
        ["whenCanBorrow: Borrow is now written MayStopSearch"],
        id="v1beta1 whenCanBorrow Borrow becomes MayStopSearch",
    ),
    pytest.param(
        kueue(cq().fungibility("TryNextFlavor", "Preempt"), V1BETA1).raw(),
        cq().fungibility("TryNextFlavor", "MayStopSearch").raw(),
        ["whenCanPreempt: Preempt is now written MayStopSearch"],
        id="v1beta1 whenCanPreempt Preempt becomes MayStopSearch",
    ),
    pytest.param(
        kueue(cq().set("spec.admissionChecks", ["prov"]), V1BETA1).raw(),
        cq().raw(),
        ["spec.admissionChecks: Berth does not support this field; dropped"],
        id="v1beta1 admissionChecks are dropped with a warning",
    ),
    pytest.param(
        kueue(
            cq().set("spec.admissionChecksStrategy", {"admissionChecks": [{"name": "prov"}]}),
            V1BETA2,
        ).raw(),
        cq().raw(),
        ["spec.admissionChecksStrategy: Berth does not support this field; dropped"],
        id="v1beta2 admissionChecksStrategy is dropped with a warning",
    ),
    pytest.param(
        kueue(cq().set("status", {"pendingWorkloads": 3}), V1BETA2).raw(),
        cq().raw(),
        ["status: dropped; the operator writes it"],
        id="status is dropped",
    ),
    pytest.param(
        kueue(
            cq()
            .set("metadata.uid", "u-1")
            .set("metadata.resourceVersion", "42")
            .set("metadata.finalizers", ["kueue.x-k8s.io/resource-in-use", "example.com/keep"])
            .annotations({"kubectl.kubernetes.io/last-applied-configuration": "{}"}),
            V1BETA2,
        ).raw(),
        cq().set("metadata.finalizers", ["example.com/keep"]).set("metadata.annotations", {}).raw(),
        [
            "metadata: dropped server-set fields uid, resourceVersion",
            "metadata.annotations: dropped kubectl.kubernetes.io/last-applied-configuration",
            "metadata.finalizers: dropped Kueue's finalizers",
        ],
        id="server-set metadata, last-applied and Kueue finalizers are dropped",
    ),
    # --- Workload -----------------------------------------------------------------------------
    pytest.param(
        kueue(wl().annotations({"kueue.x-k8s.io/priority-boost": "150"}), V1BETA2).raw(),
        wl().annotations({"berth.dev/priority-boost": "150"}).raw(),
        [],
        id="KEP-7990's priority boost on a workload becomes Berth's",
    ),
    pytest.param(
        kueue(
            wl().annotations(
                {"kueue.x-k8s.io/priority-boost": "150", "berth.dev/priority-boost": "5"}
            ),
            V1BETA2,
        ).raw(),
        wl().annotations({"berth.dev/priority-boost": "5"}).raw(),
        [
            (
                "metadata.annotations: kueue.x-k8s.io/priority-boost dropped; "
                "berth.dev/priority-boost wins"
            )
        ],
        id="Berth's own priority boost wins over Kueue's",
    ),
    pytest.param(
        kueue(
            wl()
            .priority(100)
            .set("spec.priorityClassName", "high")
            .set("spec.priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"),
            V1BETA1,
        ).raw(),
        wl().priority(100).priority_class("high").raw(),
        [],
        id="v1beta1 workload priority class source becomes a berth.dev ref",
    ),
    pytest.param(
        kueue(
            wl()
            .priority(100)
            .set("spec.priorityClassName", "system-high")
            .set("spec.priorityClassSource", "scheduling.k8s.io/priorityclass"),
            V1BETA1,
        ).raw(),
        wl().priority(100).priority_class("system-high", pod_priority_class=True).raw(),
        [],
        id="v1beta1 pod priority class source becomes a scheduling.k8s.io ref",
    ),
    pytest.param(
        kueue(wl().priority(5).set("spec.priorityClassName", "orphan"), V1BETA1).raw(),
        wl().priority(5).raw(),
        ["spec.priorityClassName 'orphan' has no priorityClassSource"],
        id="v1beta1 class name without a source names nothing and is dropped",
    ),
    pytest.param(
        kueue(
            wl().set("spec.priorityClassName", "").set("spec.priorityClassSource", ""), V1BETA1
        ).raw(),
        wl().raw(),
        [],
        id="v1beta1 empty priority class fields disappear silently",
    ),
    pytest.param(
        kueue(
            wl()
            .priority(7)
            .set(
                "spec.priorityClassRef",
                {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
            ),
            V1BETA2,
        ).raw(),
        wl().priority(7).priority_class("high").raw(),
        [],
        id="v1beta2 kueue.x-k8s.io class ref moves to berth.dev",
    ),
    pytest.param(
        kueue(wl().priority(7).priority_class("pc", pod_priority_class=True), V1BETA2).raw(),
        wl().priority(7).priority_class("pc", pod_priority_class=True).raw(),
        [],
        id="v1beta2 scheduling.k8s.io class ref is kept",
    ),
    pytest.param(
        kueue(
            wl().set(
                "spec.podSets[0].template.metadata",
                {
                    "labels": {"kueue.x-k8s.io/queue-name": "q"},
                    "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"},
                },
            ),
            V1BETA2,
        ).raw(),
        wl()
        .set(
            "spec.podSets[0].template.metadata",
            {
                "labels": {"berth.dev/queue-name": "q"},
                "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"},
            },
        )
        .raw(),
        ["annotations: kueue.x-k8s.io/podset-required-topology kept; Berth does not read it"],
        id="pod template labels are renamed, unknown Kueue annotations kept with a warning",
    ),
    pytest.param(
        kueue(
            wl().set("spec.podSets[0].topologyRequest", {"required": "rack", "podIndexLabel": "i"}),
            V1BETA2,
        ).raw(),
        wl().set("spec.podSets[0].topologyRequest", {"required": "rack"}).raw(),
        [
            (
                "spec.podSets[0].topologyRequest.podIndexLabel: Berth does not support this "
                "field; dropped"
            )
        ],
        id="topology requests are kept, fields Berth does not read are dropped with a warning",
    ),
    pytest.param(
        kueue(wl().set("status", {"accumulatedPastExexcutionTimeSeconds": 5}), V1BETA1).raw(),
        wl().raw(),
        ["status: dropped"],
        id="v1beta1 workload status (with its misspelt field) is dropped",
    ),
    # --- kinds that only change group ------------------------------------------------------------
    *[
        pytest.param(
            kueue(make(), version).raw(),
            make().raw(),
            [],
            id=f"{version.rpartition('/')[2]} {name} only changes group",
        )
        for version in (V1BETA1, V1BETA2)
        for name, make in GROUP_ONLY
    ],
    pytest.param(
        kueue(
            builders.CohortBuilder("research").set("spec.parent", "org"), "kueue.x-k8s.io/v1alpha1"
        ).raw(),
        builders.CohortBuilder("research").parent("org").raw(),
        [],
        id="v1alpha1 Cohort parent becomes parentName",
    ),
    # --- Jobs -------------------------------------------------------------------------------------
    pytest.param(
        builders.JobBuilder("train", "ml")
        .label("kueue.x-k8s.io/queue-name", "q")
        .label("kueue.x-k8s.io/priority-class", "high")
        .annotations({"kueue.x-k8s.io/job-min-parallelism": "2"})
        .raw(),
        builders.JobBuilder("train", "ml")
        .queue("q")
        .priority_class("high")
        .min_parallelism(2)
        .raw(),
        [],
        id="Job queue, priority and min-parallelism labels move to berth.dev",
    ),
    pytest.param(
        builders.JobBuilder("train", "ml")
        .set("spec.template.metadata", {"labels": {"kueue.x-k8s.io/queue-name": "q"}})
        .raw(),
        builders.JobBuilder("train", "ml")
        .set("spec.template.metadata", {"labels": {"berth.dev/queue-name": "q"}})
        .raw(),
        [],
        id="Job pod template labels move to berth.dev",
    ),
    pytest.param(
        builders.JobBuilder("train", "ml")
        .label("kueue.x-k8s.io/queue-name", "old")
        .queue("new")
        .raw(),
        builders.JobBuilder("train", "ml").queue("new").raw(),
        ["kueue.x-k8s.io/queue-name dropped; berth.dev/queue-name wins"],
        id="a Berth label already present wins over Kueue's",
    ),
    pytest.param(
        builders.JobBuilder("train", "ml").label("kueue.x-k8s.io/managed", "true").raw(),
        builders.JobBuilder("train", "ml").label("kueue.x-k8s.io/managed", "true").raw(),
        ["metadata.labels: kueue.x-k8s.io/managed kept; Berth does not read it"],
        id="other Kueue labels on a Job are kept with a warning",
    ),
    # --- Configuration ----------------------------------------------------------------------------
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA1)
        .manage_jobs_without_queue_name()
        .raw(),
        builders.ConfigurationBuilder()
        .manage_jobs_without_queue_name()
        .no_wait_for_pods_ready()
        .raw(),
        ["waitForPodsReady: not enabled, written as null to keep it off"],
        id="v1beta1 configuration without waitForPodsReady keeps it off",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA1)
        .set("waitForPodsReady", {"enable": True})
        .raw(),
        builders.ConfigurationBuilder().wait_for_pods_ready("5m", block_admission=True).raw(),
        [],
        id="v1beta1 waitForPodsReady enable writes out v1beta1's 5m timeout and blockAdmission",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA1)
        .set("waitForPodsReady", {"enable": True, "timeout": "10m", "blockAdmission": False})
        .raw(),
        builders.ConfigurationBuilder().wait_for_pods_ready("10m", block_admission=False).raw(),
        [],
        id="v1beta1 waitForPodsReady settings are kept",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA1)
        .set("waitForPodsReady", {"enable": False, "timeout": "10m"})
        .raw(),
        builders.ConfigurationBuilder().no_wait_for_pods_ready().raw(),
        ["waitForPodsReady: not enabled"],
        id="v1beta1 waitForPodsReady enable false turns it off",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA1)
        .set("fairSharing", {"enable": True})
        .raw(),
        builders.ConfigurationBuilder().fair_sharing().no_wait_for_pods_ready().raw(),
        ["waitForPodsReady: not enabled"],
        id="v1beta1 fairSharing enable becomes a present section",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA1)
        .set("fairSharing", {"enable": False, "preemptionStrategies": ["LessThanInitialShare"]})
        .raw(),
        builders.ConfigurationBuilder().no_wait_for_pods_ready().raw(),
        ["fairSharing: not enabled, dropped"],
        id="v1beta1 fairSharing enable false is dropped",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA2)
        .fair_sharing("LessThanInitialShare")
        .wait_for_pods_ready("2m", backoff_limit_count=3)
        .set("webhook", {"port": 9443})
        .set("integrations", {"frameworks": ["batch/job"], "externalFrameworks": ["x"]})
        .raw(),
        builders.ConfigurationBuilder()
        .fair_sharing("LessThanInitialShare")
        .wait_for_pods_ready("2m", backoff_limit_count=3)
        .frameworks("batch/job")
        .raw(),
        [
            "webhook: Berth does not support this field; dropped",
            "integrations.externalFrameworks: Berth does not support this field; dropped",
        ],
        id="v1beta2 configuration keeps what Berth models and drops the rest",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA2)
        .set("namespace", "kueue-system")
        .frameworks("batch/job", "kubeflow.org/mpijob", "jobset.x-k8s.io/jobset")
        .raw(),
        builders.ConfigurationBuilder()
        .set("namespace", "kueue-system")
        .frameworks("batch/job", "jobset.x-k8s.io/jobset")
        .raw(),
        [
            "namespace: kueue-system kept",
            "Berth does not integrate ['kubeflow.org/mpijob'] yet; they are ignored",
        ],
        id="v1beta2 configuration keeps the frameworks Berth integrates and drops the others",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA2)
        .frameworks("batch/job", "trainer.kubeflow.org/trainjob")
        .raw(),
        builders.ConfigurationBuilder()
        .frameworks("batch/job", "trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset")
        .raw(),
        ["jobset.x-k8s.io/jobset added; trainer.kubeflow.org/trainjob runs on it"],
        id="trainjob without jobset gets jobset too, which Berth checks its JobSets through",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA2)
        .set("preemptionProtection.reclaimWithinCohort.minAdmitDuration", "10m")
        .set("preemptionProtection.fairSharing.minAdmitDuration", "1h")
        .raw(),
        builders.ConfigurationBuilder()
        .set("preemptionProtection.reclaimWithinCohort.minAdmitDuration", "10m")
        .set("preemptionProtection.fairSharing.minAdmitDuration", "1h")
        .raw(),
        [],
        id="KEP-9876's preemptionProtection carries over as it is",
    ),
    pytest.param(
        builders.ConfigurationBuilder()
        .set("apiVersion", CONFIG_V1BETA2)
        .set("admissionFairSharing", AFS)
        .raw(),
        builders.ConfigurationBuilder().set("admissionFairSharing", AFS).raw(),
        [],
        id="KEP-4136's admissionFairSharing carries over as it is",
    ),
    pytest.param(
        kueue(
            cq().set("spec.admissionScope", {"admissionMode": "UsageBasedAdmissionFairSharing"}),
            V1BETA2,
        ).raw(),
        cq().set("spec.admissionScope", {"admissionMode": "UsageBasedAdmissionFairSharing"}).raw(),
        [],
        id="a ClusterQueue's admissionScope carries over",
    ),
]


@pytest.mark.parametrize(("doc", "want_doc", "want_warnings"), CASES)
def test_convert(doc: dict[str, Any], want_doc: dict[str, Any], want_warnings: list[str]) -> None:
    before = copy.deepcopy(doc)
    got, warnings = kueue_convert.convert(doc)
    assert got == want_doc
    assert doc == before, "convert must not change its input"
    for want in want_warnings:
        assert any(want in w for w in warnings), f"no warning contains {want!r}: {warnings}"
    if not want_warnings:
        assert [w for w in warnings if "kept; Berth does not read it" not in w] == []


@pytest.mark.parametrize(("doc", "want_doc", "want_warnings"), CASES)
def test_converted_berth_documents_load_without_errors(
    doc: dict[str, Any], want_doc: dict[str, Any], want_warnings: list[str]
) -> None:
    del want_doc, want_warnings
    got, _ = kueue_convert.convert(doc)
    if got["apiVersion"] == "berth.dev/v1beta1":
        assert kinds.try_load(got)[1] == []


@pytest.mark.parametrize(
    ("doc", "want_warning"),
    [
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
            "apps/v1 Deployment is not something Berth converts; left unchanged",
            id="an unknown kind passes through with a warning",
        ),
        pytest.param(
            {"apiVersion": V1BETA2, "kind": "AdmissionCheck", "metadata": {"name": "prov"}},
            "kueue.x-k8s.io/v1beta2 AdmissionCheck has no Berth equivalent; left unchanged",
            id="a Kueue kind Berth lacks passes through with a warning",
        ),
        pytest.param(
            {"apiVersion": "kueue.x-k8s.io/v1beta3", "kind": "ClusterQueue"},
            "kueue.x-k8s.io/v1beta3 ClusterQueue has no Berth equivalent; left unchanged",
            id="an unknown Kueue version passes through with a warning",
        ),
        pytest.param(
            {"metadata": {"name": "x"}},
            "not a Kubernetes object (no apiVersion or kind); left unchanged",
            id="a mapping that is not an object passes through with a warning",
        ),
    ],
)
def test_unknown_documents_pass_through(doc: dict[str, Any], want_warning: str) -> None:
    got, warnings = kueue_convert.convert(doc)
    assert got == doc
    assert warnings == [want_warning]


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(cq().raw(), id="a Berth document"),
        pytest.param(builders.NamespaceBuilder("ml").raw(), id="a Namespace"),
        pytest.param(builders.PriorityClassBuilder("pc", 5).raw(), id="a PriorityClass"),
    ],
)
def test_documents_berth_reads_pass_through_silently(doc: dict[str, Any]) -> None:
    assert kueue_convert.convert(doc) == (doc, [])


def test_list_items_are_converted_one_by_one() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [kueue(cq().set("spec.cohort", "r"), V1BETA1).raw(), "junk"],
    }
    got, warnings = kueue_convert.convert(doc)
    assert got["items"] == [cq().cohort("r").raw(), "junk"]
    assert warnings == ["items[1]: not a Kubernetes object; left unchanged"]


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(kueue(cq(), V1BETA1).raw(), True, id="kueue.x-k8s.io"),
        pytest.param({"apiVersion": CONFIG_V1BETA2, "kind": "Configuration"}, True, id="config"),
        pytest.param(cq().raw(), False, id="berth.dev"),
        pytest.param({"kind": "Job"}, False, id="no apiVersion"),
    ],
)
def test_is_kueue(doc: dict[str, Any], want: bool) -> None:
    assert kueue_convert.is_kueue(doc) is want


def test_import_command_converts_a_stream_and_warns_on_stderr() -> None:
    stream = yaml.safe_dump_all(
        [
            kueue(cq().set("spec.cohort", "research"), V1BETA1).raw(),
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
            builders.JobBuilder("j", "ml").label("kueue.x-k8s.io/queue-name", "q").raw(),
        ]
    )
    result = CliRunner().invoke(cli.main, ["import", "-"], input=stream)
    assert result.exit_code == 0, result.output
    assert list(yaml.safe_load_all(result.stdout)) == [
        cq().cohort("research").raw(),
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
        builders.JobBuilder("j", "ml").queue("q").raw(),
    ]
    assert "<stdin> document 1: apps/v1 Deployment is not something Berth converts" in (
        result.stderr
    )


def test_import_command_rejects_broken_yaml() -> None:
    result = CliRunner().invoke(cli.main, ["import", "-"], input="a: [unclosed\n")
    assert result.exit_code == 2
    assert "is not valid YAML" in result.stderr
    assert result.stdout == ""
