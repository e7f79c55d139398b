"""The Helm chart ``helm/berth``, rendered by the helm binary the control-plane build makes.

Checks what a reviewer of a chart checks: it lints strictly and renders for the pinned
Kubernetes version; its CRDs are the project's own, byte for byte; its webhooks are the ones the
operator's code builds, field by field (``webhooks/``'s, for the default Configuration); its
RBAC has no wildcard and each rule is one the operator's code needs (the table below names the
code, and every entry of the table is rendered, both ways); the pods are hardened; values that
cannot work are refused with a message naming the value.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.api import configuration
from berth.devtools.devcluster import binaries, errors
from operator_env import ROOT

CHART = ROOT / "helm" / "berth"
RELEASE_NAMESPACE = "berth-system"


@pytest.fixture(scope="module")
def helm() -> Path:
    """The helm binary ``scripts/build-control-plane`` builds."""
    try:
        return binaries.BinaryCache.default().find("helm")
    except errors.MissingBinaryError as e:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{e}; CI must build it (scripts/test runs the build)", pytrace=False)
        pytest.skip(str(e))


def _helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - argv built here
        [str(helm), *args], capture_output=True, text=True, check=False, timeout=120
    )


def render(helm: Path, *settings: str, release: str = "berth") -> list[dict[str, Any]]:
    """The chart's objects for these ``--set`` values."""
    version = binaries.load_versions().of("kube-apiserver")
    args = ["template", release, str(CHART), "-n", RELEASE_NAMESPACE, "--kube-version", version]
    for setting in settings:
        args += ["--set", setting]
    done = _helm(helm, *args)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and name in {None, o["metadata"]["name"]}]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in found])
    return found[0]


def test_lints_strictly(helm: Path) -> None:
    done = _helm(helm, "lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr


def test_crds_are_the_projects_own() -> None:
    ours = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    charted = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert charted == ours, "copy crds/*.yaml into helm/berth/crds/ (berth manifests writes both)"


def test_dashboard_is_the_projects_own() -> None:
    chart = (CHART / "dashboards" / "berth.json").read_bytes()
    assert chart == (ROOT / "config" / "grafana" / "berth.json").read_bytes()


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    """ClusterRole or Role."""
    group: str
    resource: str
    verb: str
    name: str = ""
    """A resourceName the rule is limited to, or empty."""


@dataclasses.dataclass(frozen=True, slots=True)
class Need:
    rules: tuple[Rule, ...]
    code: str
    """module:attribute of the code that makes the request."""
    why: str


def _rules(kind: str, group: str, resources: str, verbs: str, name: str = "") -> tuple[Rule, ...]:
    return tuple(Rule(kind, group, r, v, name) for r in resources.split() for v in verbs.split())


_QUEUE_KINDS = (
    "topologies resourceflavors cohorts clusterqueues localqueues workloadpriorityclasses workloads"
)
NEEDS = (
    Need(
        _rules("ClusterRole", "berth.dev", _QUEUE_KINDS, "get list watch"),
        "berth.operator.handlers:WATCHED",
        "every Berth kind is watched into the World and listed when a leader primes",
    ),
    Need(
        _rules("ClusterRole", "berth.dev", "workloads", "create patch delete"),
        "berth.adapters.kube.workloads:create",
        "a Job's Workload is created, admitted and evicted, replaced when its Job changed",
    ),
    Need(
        _rules(
            "ClusterRole",
            "berth.dev",
            "workloads/status clusterqueues/status localqueues/status",
            "patch",
        ),
        "berth.adapters.kube.queues_status:patch_cluster_queue",
        "Workload conditions and admissions, queue statuses",
    ),
    Need(
        _rules("ClusterRole", "berth.dev", "resourceflavors clusterqueues", "patch"),
        "berth.operator.finalizers:Finalizers",
        "the resource-in-use finalizer on flavors and ClusterQueues",
    ),
    Need(
        _rules("ClusterRole", "batch", "jobs", "get list watch patch"),
        "berth.adapters.kube.jobs:patch",
        "Jobs are watched, suspended, started with their flavors and restored",
    ),
    Need(
        _rules("ClusterRole", "jobset.x-k8s.io", "jobsets", "get list watch patch"),
        "berth.adapters.kube.jobs:patch",
        "JobSets (integrations.frameworks) are watched, suspended, started and restored",
    ),
    Need(
        _rules(
            "ClusterRole",
            "kubeflow.org",
            "pytorchjobs tfjobs paddlejobs xgboostjobs jaxjobs",
            "get list watch patch",
        ),
        "berth.adapters.kube.jobs:patch",
        "Kubeflow training jobs (integrations.frameworks) likewise",
    ),
    Need(
        _rules("ClusterRole", "ray.io", "rayjobs rayclusters", "get list watch patch"),
        "berth.adapters.kube.jobs:patch",
        "KubeRay's RayJobs and RayClusters (integrations.frameworks) likewise",
    ),
    Need(
        _rules("ClusterRole", "trainer.kubeflow.org", "trainjobs", "get list watch patch"),
        "berth.adapters.kube.jobs:patch",
        "Kubeflow Trainer TrainJobs (integrations.frameworks) likewise",
    ),
    Need(
        _rules(
            "ClusterRole",
            "trainer.kubeflow.org",
            "clustertrainingruntimes trainingruntimes",
            "get list watch",
        ),
        "berth.operator.webhooks.server:read_watched",
        "a TrainJob's pod sets are read from its runtime (watched; read when the watch lags)",
    ),
    Need(
        _rules("ClusterRole", "", "pods", "patch delete"),
        "berth.adapters.kube.jobs:patch_strategic",
        "a pod group's members are started (gate lifted), deleted on eviction, and finalized; "
        "pods placed by topology are pinned to their domains (operator.ungater)",
    ),
    Need(
        _rules("ClusterRole", "", "nodes", "list watch"),
        "berth.operator.handlers:WATCHED",
        "nodes of topology-aware flavors: their domains and room",
    ),
    Need(
        _rules("ClusterRole", "batch", "jobs/status", "patch"),
        "berth.adapters.kube.jobs:patch_status",
        "a restored Job's startTime is cleared before it starts again",
    ),
    Need(
        _rules("ClusterRole", "", "pods namespaces", "get list watch"),
        "berth.operator.handlers:WATCHED",
        "pods of evicted Jobs; namespaces for selectors and the managed predicate",
    ),
    Need(
        _rules("ClusterRole", "scheduling.k8s.io", "priorityclasses", "list watch"),
        "berth.operator.handlers:WATCHED",
        "a pod's PriorityClass is a Workload's priority when no WorkloadPriorityClass is named",
    ),
    Need(
        _rules("ClusterRole", "", "events", "create"),
        "berth.adapters.kube.events:emit",
        "Events on Jobs and Workloads",
    ),
    Need(
        _rules(
            "ClusterRole", "apiextensions.k8s.io", "customresourcedefinitions", "get list watch"
        ),
        "berth.operator.handlers:registry",
        "kopf resolves the custom resources it watches",
    ),
    Need(
        _rules(
            "ClusterRole",
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations validatingwebhookconfigurations",
            "get patch",
            "berth",
        ),
        "berth.adapters.kube.webhook_certs:patch_ca_bundle",
        "the leader keeps its two webhook configurations' caBundle current",
    ),
    Need(
        (
            Rule("ClusterRole", "authentication.k8s.io", "tokenreviews", "create"),
            Rule("ClusterRole", "authorization.k8s.io", "subjectaccessreviews", "create"),
        ),
        "berth.adapters.kube.access:MetricsAccess",
        "who scrapes /metrics: the token reviewed, then its right to get /metrics",
    ),
    Need(
        (
            Rule("Role", "coordination.k8s.io", "leases", "create"),
            *_rules("Role", "coordination.k8s.io", "leases", "get update", "berth-leader"),
        ),
        "berth.adapters.kube.leader:run_while_leader",
        "leader election on a Lease in the release namespace",
    ),
    Need(
        (
            Rule("Role", "", "secrets", "create"),
            *_rules("Role", "", "secrets", "get update", "berth-webhook-tls"),
        ),
        "berth.adapters.kube.webhook_certs:keep",
        "the webhook certificate every replica reads and serves, kept by the leader",
    ),
)


def _rendered_rules(objects: list[dict[str, Any]]) -> set[Rule]:
    out: set[Rule] = set()
    for obj in objects:
        if obj["kind"] not in {"ClusterRole", "Role"} or not obj["metadata"]["name"].endswith(
            "-operator"
        ):
            continue
        for rule in obj["rules"]:
            names = rule.get("resourceNames") or [""]
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.update(Rule(obj["kind"], group, resource, verb, n) for n in names)
    return out


def test_operator_rbac_is_exactly_what_the_code_needs(helm: Path) -> None:
    rendered = _rendered_rules(render(helm))
    needed = {rule for need in NEEDS for rule in need.rules}
    assert not {r for r in rendered if "*" in {r.group, r.resource, r.verb}}
    assert rendered - needed == set(), "a rule no code needs"
    assert needed - rendered == set(), "a rule the code needs is missing"


@pytest.mark.parametrize("need", NEEDS, ids=lambda n: n.why)
def test_each_rule_names_code_that_exists(need: Need) -> None:
    module, _, attribute = need.code.partition(":")
    assert hasattr(importlib.import_module(module), attribute), need.code


def test_cert_manager_takes_over_the_certificate(helm: Path) -> None:
    objects = render(helm, "enableCertManager=true")
    secrets = {r for r in _rendered_rules(objects) if r.resource == "secrets"}
    assert secrets == {Rule("Role", "", "secrets", "get", "berth-webhook-tls")}
    certificate = _one(objects, "Certificate")
    assert certificate["spec"]["dnsNames"][0] == "berth-webhook.berth-system.svc"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = _one(objects, kind)["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == "berth-system/berth-webhook-tls"
    args = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--no-manage-webhook-certs" in args
    assert "--webhook-secret=berth-webhook-tls" in args


def test_pods_are_hardened_and_highly_available(helm: Path) -> None:
    objects = render(helm)
    deployment = _one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in container["volumeMounts"]}
    writable = {path for path, read_only in mounts.items() if not read_only}
    assert writable == {"/data", "/tmp"}  # noqa: S108 - the pod's own emptyDir
    assert _one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == 1


def test_a_changed_configuration_rolls_the_pods(helm: Path) -> None:
    def checksum(*settings: str) -> str:
        deployment = _one(render(helm, *settings), "Deployment")
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    assert checksum() == checksum()
    assert checksum() != checksum("managerConfig.manageJobsWithoutQueueName=false")


def test_configuration_is_in_the_release_namespace_and_loads(helm: Path) -> None:
    from berth.entry import run_cmd  # noqa: PLC0415 - the operator's own loader

    config_map = _one(render(helm), "ConfigMap", "berth-config")
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"berth-chart-{os.getpid()}.yaml"  # noqa: S108 - a scratch file
    path.write_text(config_map["data"]["config.yaml"])
    try:
        config = run_cmd.load_configuration(path)
    finally:
        path.unlink()
    assert config.namespace == RELEASE_NAMESPACE


def test_job_webhooks_never_see_kube_system_or_the_release_namespace(helm: Path) -> None:
    objects = render(helm, "webhooks.excludedNamespaces={team-infra}")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in _one(objects, kind)["webhooks"]:
            assert "url" not in hook["clientConfig"]
            assert hook["clientConfig"]["service"]["name"] == "berth-webhook"
            if hook["rules"][0]["apiGroups"] == ["batch"]:
                # The first expression; the managed-namespace hooks add the configured selector's.
                expression = hook["namespaceSelector"]["matchExpressions"][0]
                assert expression["operator"] == "NotIn"
                assert set(expression["values"]) == {"kube-system", "berth-system", "team-infra"}


Refusal = tuple[tuple[str, ...], str]
REFUSALS: tuple[Refusal, ...] = (
    (("history.sqlite.persistence=true",), "set controllerManager.replicas to 1"),
    (("history.store=postgresql",), "history.postgresql.existingSecret is required"),
    (("history.store=mysql",), 'history.store must be sqlite or postgresql, not "mysql"'),
)


@pytest.mark.parametrize(("settings", "message"), REFUSALS)
def test_values_that_cannot_work_are_refused(
    helm: Path, settings: tuple[str, ...], message: str
) -> None:
    version = binaries.load_versions().of("kube-apiserver")
    args = ["template", "berth", str(CHART), "--kube-version", version]
    for setting in settings:
        args += ["--set", setting]
    done = _helm(helm, *args)
    assert done.returncode != 0
    assert message in done.stderr


def test_postgresql_history_comes_from_a_secret(helm: Path) -> None:
    objects = render(helm, "history.store=postgresql", "history.postgresql.existingSecret=pg")
    container = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--history-db=$(BERTH_HISTORY_URL)" in container["args"]
    (env,) = [e for e in container["env"] if e["name"] == "BERTH_HISTORY_URL"]
    assert env["valueFrom"]["secretKeyRef"] == {"name": "pg", "key": "url"}


WEBHOOK_FIELDS = (
    "name",
    "clientConfig",
    "rules",
    "objectSelector",
    "namespaceSelector",
    "failurePolicy",
    "sideEffects",
    "matchPolicy",
    "timeoutSeconds",
    "admissionReviewVersions",
    "reinvocationPolicy",
    "matchConditions",
)
"""What a webhook is made of: where it points (the Service and path), which requests it sees
(rules and their operations, selectors, match policy and conditions), and how it is called."""


def _differences(charted: list[dict[str, Any]], built: list[dict[str, Any]]) -> list[str]:
    """Every field in which two lists of webhooks differ, by webhook name."""
    out = [] if len(charted) == len(built) else [f"{len(charted)} webhooks, not {len(built)}"]
    for theirs, ours in zip(charted, built, strict=False):
        assert set(theirs) | set(ours) <= set(WEBHOOK_FIELDS), "a field this test does not know"
        out += [
            f"{ours['name']}: {field}: chart {theirs.get(field)!r}, code {ours.get(field)!r}"
            for field in WEBHOOK_FIELDS
            if theirs.get(field) != ours.get(field)
        ]
    return out


def _configuration(objects: list[dict[str, Any]]) -> configuration.Configuration:
    """The Configuration the operator reads from the release's ConfigMap."""
    from berth.entry import run_cmd  # noqa: PLC0415 - the operator's own loader

    config_map = _one(objects, "ConfigMap", "berth-config")
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"berth-chart-{os.getpid()}.yaml"  # noqa: S108 - a scratch file
    path.write_text(config_map["data"]["config.yaml"])
    try:
        return run_cmd.load_configuration(path)
    finally:
        path.unlink()


@pytest.mark.parametrize("without_queue_name", [False, True])
@pytest.mark.parametrize(
    "frameworks",
    [
        None,
        (
            "batch/job",
            "jobset.x-k8s.io/jobset",
            "kubeflow.org/pytorchjob",
            "kubeflow.org/tfjob",
            "kubeflow.org/paddlejob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/jaxjob",
            "ray.io/rayjob",
            "ray.io/raycluster",
        ),
        ("batch/job", "kubeflow.org/pytorchjob", "jobset.x-k8s.io/jobset", "kubeflow.org/jaxjob"),
        ("batch/job", "kubeflow.org/tfjob"),
        ("batch/job", "ray.io/rayjob"),
        ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"),
        ("batch/job", "pod"),
    ],
    ids=[
        "chart-frameworks",
        "no-trainjob-no-pods",
        "kubeflow-too",
        "no-jobset",
        "rayjob-alone",
        "trainjob",
        "pods",
    ],
)
def test_chart_webhooks_are_the_ones_the_operator_registers(
    helm: Path, *, without_queue_name: bool, frameworks: tuple[str, ...] | None
) -> None:
    """For the Configuration the release runs the operator with, every field of every webhook."""
    from berth.operator.webhooks import configurations  # noqa: PLC0415 - the operator's own registration

    settings = [f"managerConfig.manageJobsWithoutQueueName={str(without_queue_name).lower()}"]
    if frameworks is not None:
        settings.append(f"managerConfig.integrations.frameworks={{{','.join(frameworks)}}}")
    objects = render(helm, *settings)
    # The Configuration the operator reads from the same release: selectors included.
    config = _configuration(objects)
    assert config.manage_jobs_without_queue_name is without_queue_name
    service = configurations.Service("berth-webhook", RELEASE_NAMESPACE)
    for built in configurations.build(service, config):
        charted = _one(objects, built["kind"], configurations.NAME)
        assert _differences(charted["webhooks"], built["webhooks"]) == []


def test_chart_webhooks_are_the_generated_manifests_for_the_same_configuration(
    helm: Path,
) -> None:
    """``webhooks/`` (the default Configuration) is what the chart renders for those values."""
    objects = render(
        helm,
        "managerConfig.manageJobsWithoutQueueName=false",
        "managerConfig.integrations.frameworks={batch/job}",
    )
    config = _configuration(objects)
    default = configuration.Configuration()
    assert (config.namespace, config.manage_jobs_without_queue_name) == (
        default.namespace,
        default.manage_jobs_without_queue_name,
    )
    assert config.integrations.frameworks == default.integrations.frameworks
    generated = [
        yaml.safe_load(p.read_text())
        for p in sorted((ROOT / "webhooks").glob("*webhookconfiguration.yaml"))
    ]
    assert sorted(d["kind"] for d in generated) == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    for doc in generated:
        charted = _one(objects, doc["kind"], doc["metadata"]["name"])
        assert _differences(charted["webhooks"], doc["webhooks"]) == []


def test_helm_unittest_suites_pass() -> None:
    try:
        unittest = binaries.BinaryCache.default().find("helm-unittest")
    except errors.MissingBinaryError as e:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{e}; CI must build it (scripts/test runs the build)", pytrace=False)
        pytest.skip(str(e))
    done = subprocess.run(  # noqa: S603 - argv built here
        [str(unittest), "--color=false", str(CHART)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = next(line for line in done.stdout.splitlines() if line.startswith("Tests:"))
    assert "failed" not in summary
    assert int(summary.split()[1]) >= 10, summary


def test_metrics_are_served_securely_to_the_metrics_reader_alone(helm: Path) -> None:
    objects = render(helm, "enablePrometheus=true")
    container = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--metrics-secure" in container["args"]
    assert "--metrics-port=8443" in container["args"]
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    reader = _one(objects, "ClusterRole", "berth-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    (endpoint,) = _one(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert "bearerTokenFile" in endpoint
    plain = render(helm, "metricsService.secure=false", "metricsService.port=8080")
    args = _one(plain, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--metrics-secure" not in args
    rules = _rendered_rules(plain)
    assert not {r for r in rules if r.resource in {"tokenreviews", "subjectaccessreviews"}}


def test_the_queue_reader_role_is_what_berth_explain_reads(helm: Path) -> None:
    from berth.entry import live_state  # noqa: PLC0415 - the command whose reads it grants

    objects = render(
        helm, "userRoles.queueReaders[0].kind=Group", "userRoles.queueReaders[0].name=team-a"
    )
    role = _one(objects, "ClusterRole", "berth-queue-reader")
    assert role["rules"] == list(live_state.QUEUE_READER_RULES)
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert not resources & {"jobs", "pods", "secrets"}
    binding = _one(objects, "ClusterRoleBinding", "berth-queue-reader")
    assert binding["subjects"] == [{"kind": "Group", "name": "team-a"}]
    assert not [
        o
        for o in render(helm)
        if o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"] == "berth-queue-reader"
    ]
