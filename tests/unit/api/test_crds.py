from __future__ import annotations

import copy
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import builders
from berth.api import crd, kinds, reference
from berth.entry import cli
from operator_env import ROOT

CRD_DIR = ROOT / "crds"
GENERATED = crd.all_crds()

Schema = dict[str, Any]


def _walk(schema: Schema, path: str = "") -> list[tuple[str, Schema]]:
    """Every schema node with its path, the root first."""
    out = [(path or "<root>", schema)]
    for name, sub in schema.get("properties", {}).items():
        out += _walk(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        out += _walk(schema["additionalProperties"], f"{path}.*")
    if "items" in schema:
        out += _walk(schema["items"], f"{path}[]")
    return out


def _structural_problems(root: Schema) -> list[str]:
    """Kubernetes' structural-schema rules, plus the ones apiextensions v1 enforces besides."""
    problems = []
    for path, node in _walk(root):
        problems += [f"{path}: {p}" for p in _node_problems(node, path)]
    metadata = root["properties"]["metadata"]
    if metadata != {"type": "object"}:
        problems.append(f".metadata: only type object is allowed, got {metadata}")
    return problems


def _node_problems(node: Schema, path: str) -> list[str]:
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    problems = []
    if int_or_string:
        if "type" in node:
            problems.append("int-or-string must not set type")
        if node.get("anyOf") != [{"type": "integer"}, {"type": "string"}]:
            problems.append("int-or-string needs anyOf [integer, string]")
    elif not node.get("type") and not preserve:
        problems.append("no type")
    problems += [
        f"{junctor} outside the int-or-string pattern"
        for junctor in ("anyOf", "allOf", "oneOf", "not")
        if junctor in node and not (int_or_string and junctor == "anyOf")
    ]
    if "properties" in node and "additionalProperties" in node:
        problems.append("properties and additionalProperties together")
    if "additionalProperties" in node and not isinstance(node["additionalProperties"], dict):
        problems.append("additionalProperties must be a schema")
    problems += [
        f"required {name!r} is not a property"
        for name in node.get("required", [])
        if name not in node.get("properties", {})
    ]
    if "enum" in node and not all(isinstance(v, str) for v in node["enum"]):
        problems.append("enum values must be strings for a string field")
    if "default" in node:
        problems += [f"default {p}" for p in _default_problems(node)]
    fields = "properties" in node or "additionalProperties" in node or preserve
    if node.get("type") == "object" and not fields and path != ".metadata":
        problems.append("object with no properties would prune everything")
    return problems


def _default_problems(node: Schema) -> list[str]:
    value = copy.deepcopy(node["default"])
    problems = _conformance(value, node, "")
    defaulted = _apply_defaults(value, node)
    problems += [f"(after nested defaulting) {p}" for p in _conformance(defaulted, node, "")]
    return problems


def _apply_defaults(value: Any, schema: Schema) -> Any:
    """Default missing fields the way the API server does, depth first."""
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = _apply_defaults(value[name], sub)
        if isinstance(schema.get("additionalProperties"), dict):
            for key in value:
                value[key] = _apply_defaults(value[key], schema["additionalProperties"])
    elif isinstance(value, list) and "items" in schema:
        value = [_apply_defaults(v, schema["items"]) for v in value]
    return value


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


_BOUNDS: list[tuple[str, Callable[[Any, Any], bool]]] = [
    ("minimum", lambda v, b: v >= b),
    ("maximum", lambda v, b: v <= b),
    ("minItems", lambda v, b: len(v) >= b),
    ("maxItems", lambda v, b: len(v) <= b),
    ("maxLength", lambda v, b: len(v) <= b),
    ("maxProperties", lambda v, b: len(v) <= b),
]


def _conformance(value: Any, schema: Schema, path: str) -> list[str]:
    """Check a value against the subset of OpenAPI v3 the generated schemas use."""
    where = path or "<value>"
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            return [f"{where}: {value!r} is neither integer nor string"]
        if isinstance(value, str) and not re.match(schema["pattern"], value):
            return [f"{where}: {value!r} is not a quantity"]
        return []
    want = schema.get("type")
    if want is not None and (
        not isinstance(value, _TYPES[want])
        or (want in {"integer", "number"} and isinstance(value, bool))
    ):
        return [f"{where}: {value!r} is not of type {want}"]
    out = [
        f"{where}: {value!r} breaks {key} {schema[key]}"
        for key, holds in _BOUNDS
        if key in schema and not holds(value, schema[key])
    ]
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        out += _object_conformance(value, schema, path)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += _conformance(item, schema["items"], f"{path}[{i}]")
    return out


def _object_conformance(value: dict[str, Any], schema: Schema, path: str) -> list[str]:
    out = [f"{path}.{name}: required" for name in schema.get("required", []) if name not in value]
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return out
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if props is not None and key in props:
            out += _conformance(item, props[key], f"{path}.{key}")
        elif isinstance(extra, dict):
            out += _conformance(item, extra, f"{path}.{key}")
        elif schema.get("type") == "object" and path != ".metadata":
            out.append(f"{path}.{key}: unknown field (would be pruned)")
    return out


def _schema_of(kind: str) -> Schema:
    doc = crd.crd(kinds.BERTH_KINDS[kind])
    schema: Schema = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_the_crds_directory_matches_what_the_models_generate() -> None:
    on_disk = {p.name: p.read_text() for p in CRD_DIR.glob("*.yaml")}
    want = {name: crd.render(doc) for name, doc in GENERATED.items()}
    assert sorted(on_disk) == sorted(want), "run `berth manifests` to regenerate crds/"
    for name, text in want.items():
        assert on_disk[name] == text, f"crds/{name} is stale; run `berth manifests`"


def test_every_served_kind_has_exactly_one_crd() -> None:
    names = sorted(doc["spec"]["names"]["kind"] for doc in GENERATED.values())
    assert names == sorted(kinds.CRD_KINDS)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_crd_schema_is_structural(name: str) -> None:
    schema = GENERATED[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _structural_problems(schema) == []


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_crd_names_follow_apiextensions_rules(name: str) -> None:
    doc = GENERATED[name]
    spec = doc["spec"]
    names = spec["names"]
    assert doc["apiVersion"] == "apiextensions.k8s.io/v1"
    assert doc["metadata"]["name"] == f"{names['plural']}.{spec['group']}"
    assert name == f"{doc['metadata']['name']}.yaml"
    assert names["plural"] == names["plural"].lower()
    assert names["singular"] == names["kind"].lower()
    assert names["listKind"] == f"{names['kind']}List"
    assert all(s == s.lower() for s in names["shortNames"])
    assert names["categories"] == ["berth"]
    versions = spec["versions"]
    assert [v["storage"] for v in versions].count(True) == 1
    for column in versions[0].get("additionalPrinterColumns", []):
        assert column["type"] in {"integer", "number", "string", "boolean", "date"}
        assert column["jsonPath"].startswith(".")


@pytest.mark.parametrize(
    ("kind", "want_scope", "want_short_names", "want_columns"),
    [
        pytest.param(
            "ClusterQueue",
            "Cluster",
            ["cq"],
            ["Cohort", "Strategy", "Pending Workloads", "Admitted Workloads", "Age"],
            id="cluster queues print cohort, strategy and counts",
        ),
        pytest.param(
            "LocalQueue",
            "Namespaced",
            ["lq", "queue", "queues"],
            ["ClusterQueue", "Pending", "Admitted", "Age"],
            id="local queues print their cluster queue and counts",
        ),
        pytest.param(
            "ResourceFlavor",
            "Cluster",
            ["rf", "flavor", "flavors"],
            [],
            id="flavors keep kubectl's default columns",
        ),
        pytest.param("Cohort", "Cluster", ["co"], ["Parent", "Age"], id="cohorts print parent"),
        pytest.param(
            "WorkloadPriorityClass", "Cluster", ["wpc"], ["Value", "Age"], id="wpc prints value"
        ),
        pytest.param(
            "Workload",
            "Namespaced",
            ["wl"],
            ["Queue", "Reserved in", "Admitted", "Finished", "Age"],
            id="workloads print queue, reservation and conditions",
        ),
    ],
)
def test_crd_scope_short_names_and_columns(
    kind: str, want_scope: str, want_short_names: list[str], want_columns: list[str]
) -> None:
    doc = crd.crd(kinds.BERTH_KINDS[kind])
    version = doc["spec"]["versions"][0]
    assert doc["spec"]["scope"] == want_scope
    assert doc["spec"]["names"]["shortNames"] == want_short_names
    assert [c["name"] for c in version.get("additionalPrinterColumns", [])] == want_columns


@pytest.mark.parametrize(
    ("kind", "want_status"),
    [
        pytest.param("ClusterQueue", True, id="cluster queue status is a subresource"),
        pytest.param("LocalQueue", True, id="local queue status is a subresource"),
        pytest.param("Cohort", True, id="cohort status is a subresource"),
        pytest.param("Workload", True, id="workload status is a subresource"),
        pytest.param("ResourceFlavor", False, id="flavors have no status"),
        pytest.param("WorkloadPriorityClass", False, id="priority classes have no status"),
    ],
)
def test_status_subresource(kind: str, want_status: bool) -> None:
    version = crd.crd(kinds.BERTH_KINDS[kind])["spec"]["versions"][0]
    assert ("subresources" in version) is want_status


@pytest.mark.parametrize(
    ("kind", "path", "want"),
    [
        pytest.param(
            "ClusterQueue",
            ".spec.queueingStrategy",
            {"default": "BestEffortFIFO", "enum": ["StrictFIFO", "BestEffortFIFO", "Backfill"]},
            id="queueing strategy defaults to BestEffortFIFO",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.preemption.withinClusterQueue",
            {"default": "Never", "enum": ["Never", "LowerPriority", "LowerOrNewerEqualPriority"]},
            id="withinClusterQueue has its own narrower enum",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.preemption.borrowWithinCohort.policy",
            {"default": "Never", "enum": ["Never", "LowerPriority"]},
            id="borrowWithinCohort allows Never and LowerPriority only",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.flavorFungibility",
            {"type": "object", "default": {}},
            id="flavor fungibility defaults to an empty object so its fields default",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.resourceGroups[].flavors[].resources[].nominalQuota",
            {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            id="quotas are int-or-string quantities",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.resourceGroups",
            {"type": "array", "maxItems": 16},
            id="at most 16 resource groups",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.resourceGroups[].coveredResources",
            {"minItems": 1, "maxItems": 64},
            id="1 to 64 covered resources",
        ),
        pytest.param(
            "ClusterQueue",
            ".spec.fairSharing.weight",
            {"default": 1, "x-kubernetes-int-or-string": True},
            id="fair-sharing weight defaults to 1",
        ),
        pytest.param(
            "Workload",
            ".spec.podSets[].template",
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            id="pod templates keep every field",
        ),
        pytest.param(
            "Workload",
            ".spec.podSets[].count",
            {"type": "integer", "default": 1, "minimum": 0},
            id="pod set count defaults to 1",
        ),
        pytest.param(
            "Workload", ".spec.podSets", {"minItems": 1, "maxItems": 18}, id="1 to 18 pod sets"
        ),
        pytest.param(
            "Workload",
            ".spec.podSets[].name",
            {"type": "string", "default": "main"},
            id="pod set name defaults to main",
        ),
        pytest.param(
            "Workload",
            ".spec.priorityClassRef.group",
            {"enum": ["berth.dev", "scheduling.k8s.io"]},
            id="priority class groups are berth.dev or scheduling.k8s.io",
        ),
        pytest.param(
            "Workload",
            ".status.admission.podSetAssignments[].resourceUsage.*",
            {"x-kubernetes-int-or-string": True},
            id="resource lists hold quantities",
        ),
        pytest.param(
            "WorkloadPriorityClass",
            ".value",
            {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
            id="priority values are 32-bit",
        ),
        pytest.param(
            "ResourceFlavor",
            ".spec.nodeLabels",
            {"type": "object", "maxProperties": 8},
            id="at most 8 node labels",
        ),
        pytest.param(
            "LocalQueue", "<root>", {"required": ["spec"]}, id="a local queue needs a spec"
        ),
        pytest.param(
            "LocalQueue",
            ".spec",
            {"required": ["clusterQueue"]},
            id="a local queue names its cluster queue",
        ),
    ],
)
def test_schema_node(kind: str, path: str, want: dict[str, Any]) -> None:
    nodes = dict(_walk(_schema_of(kind)))
    assert path in nodes
    node = nodes[path]
    assert {k: node.get(k) for k in want} == want


def test_status_fields_carry_no_defaults() -> None:
    for kind in ("ClusterQueue", "LocalQueue", "Workload", "Cohort"):
        for path, node in _walk(_schema_of(kind)["properties"]["status"]):
            assert "default" not in node, f"{kind} status{path}"


VALID_OBJECTS = [
    pytest.param(builders.ResourceFlavorBuilder("a100").node_labels({"gpu": "a100"}), id="rf"),
    pytest.param(
        builders.ResourceFlavorBuilder("spot")
        .taint("spot", "true")
        .toleration(key="spot", operator="Exists", effect="NoSchedule"),
        id="rf with taints and tolerations",
    ),
    pytest.param(
        builders.ClusterQueueBuilder("team-a")
        .cohort("research")
        .flavor_quotas("a100", {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": (8, 4, 2)})
        .preemption("LowerPriority", "Any", "LowerPriority", max_priority_threshold=100)
        .fungibility("TryNextFlavor", "TryNextFlavor", "BorrowingOverPreemption")
        .fair_weight("1.5")
        .stop_policy("Hold"),
        id="cq with every field",
    ),
    pytest.param(
        builders.CohortBuilder("research")
        .parent("org")
        .flavor_quotas("a100", {"nvidia.com/gpu": (4, 2, 1)}),
        id="cohort",
    ),
    pytest.param(builders.LocalQueueBuilder("q", "ml", "team-a").fair_weight(2), id="lq"),
    pytest.param(builders.WorkloadPriorityClassBuilder("high", 1000).description("x"), id="wpc"),
    pytest.param(
        builders.WorkloadBuilder("w", "ml")
        .queue("q")
        .pod_set("main", 4, requests={"nvidia.com/gpu": 1, "cpu": "500m"}, min_count=2)
        .priority_class("high", 1000)
        .admitted("team-a", {"nvidia.com/gpu": "a100"}, count=4),
        id="admitted workload",
    ),
]


@pytest.mark.parametrize("builder", VALID_OBJECTS)
def test_valid_objects_conform_to_their_crd_schema(builder: builders._ObjectBuilder[Any]) -> None:
    obj = builder.obj()
    assert _conformance(obj.to_yaml_dict(), _schema_of(obj.KIND), "") == []
    assert _conformance(obj.to_full_dict(), _schema_of(obj.KIND), "") == []


@pytest.mark.parametrize("builder", VALID_OBJECTS)
def test_schema_defaults_agree_with_model_defaults(builder: builders._ObjectBuilder[Any]) -> None:
    obj = builder.obj()
    schema = _schema_of(obj.KIND)
    defaulted = _apply_defaults(obj.to_yaml_dict(), schema)
    assert kinds.load(defaulted).to_full_dict() == obj.to_full_dict()


def test_manifests_command_writes_and_checks(tmp_path: pathlib.Path) -> None:
    runner = CliRunner()
    stale = tmp_path / "gone.berth.dev.yaml"
    stale.write_text("old")
    # --out is the CRD directory's older name (--crds); the webhooks go elsewhere.
    out = ["manifests", "--out", str(tmp_path), "--webhooks", str(tmp_path / "webhooks")]
    result = runner.invoke(cli.main, [*out, "--check"])
    assert result.exit_code == 1
    result = runner.invoke(cli.main, out)
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.glob("*.yaml")) == sorted(GENERATED)
    for name, doc in GENERATED.items():
        assert yaml.safe_load((tmp_path / name).read_text()) == doc
    result = runner.invoke(cli.main, [*out, "--check"])
    assert result.exit_code == 0
    docs = tmp_path / "api.md"
    args = [*out, "--docs", str(docs)]
    assert runner.invoke(cli.main, [*args, "--check"]).exit_code == 1
    assert runner.invoke(cli.main, args).exit_code == 0
    assert docs.read_text() == reference.render()
    assert runner.invoke(cli.main, [*args, "--check"]).exit_code == 0


def _sample_documents() -> list[Any]:
    """Berth objects of the samples and of the admin guide's recipes (which must apply as is)."""
    config = ROOT / "config"
    paths = [
        *sorted((config / "samples").glob("*.yaml")),
        *sorted((config / "recipes").glob("**/*.yaml")),
    ]
    return [
        pytest.param(doc, id=f"{path.relative_to(config)} {doc['kind']} {doc['metadata']['name']}")
        for path in paths
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("apiVersion") == "berth.dev/v1beta1" and doc["kind"] in kinds.CRD_KINDS
    ]


@pytest.mark.parametrize("doc", _sample_documents())
def test_samples_conform_to_their_crd_schema(doc: dict[str, Any]) -> None:
    schema = _schema_of(doc["kind"])
    assert _conformance(doc, schema, "") == []
    assert _conformance(_apply_defaults(copy.deepcopy(doc), schema), schema, "") == []


def test_the_api_reference_matches_the_models() -> None:
    on_disk = (ROOT / "docs" / "reference" / "api.md").read_text()
    assert on_disk == reference.render(), "run `berth manifests --docs docs/reference/api.md`"


def test_the_api_reference_documents_every_field() -> None:
    text = reference.render()
    for kind in kinds.CRD_KINDS:
        for path, node in _walk(_schema_of(kind)):
            if path in {"<root>", ".apiVersion", ".kind", ".metadata"} or path.endswith(
                ("*", "[]")
            ):
                continue
            row = path.lstrip(".")
            assert f"| `{row}` |" in text, f"{kind} {row}"
            assert node.get("description"), f"{kind} {row} has no description"
