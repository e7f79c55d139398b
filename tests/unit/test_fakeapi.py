"""The in-memory API server (tests/fakeapi.py) against what kube-apiserver does.

References for the expected behaviours:
- JSON merge patch, RFC 7386 (https://www.rfc-editor.org/rfc/rfc7386), as Kubernetes applies
  it: https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
- resourceVersion and optimistic concurrency, generation, status subresource:
  https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions and
  https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#status-subresource
- finalizers and deletionTimestamp:
  https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/
- delete preconditions: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import builders
import fakeapi
from berth.adapters.kube import client, errors, jobs, queues_status, workloads
from berth.api import names
from berth.jobs import batchjob

NOW = 1_700_000_000.75
NOW_TEXT = "2023-11-14T22:13:20Z"
"""NOW as kube writes it: RFC 3339, whole seconds (truncated), Z."""
GROUP = "/apis/berth.dev/v1beta1"
WORKLOADS = f"{GROUP}/namespaces/team/workloads"
WL = f"{WORKLOADS}/w"
MERGE = client.MERGE_PATCH


@pytest.fixture
def kube() -> fakeapi.FakeKube:
    """An empty API server whose clock stands at NOW."""
    return fakeapi.FakeKube(lambda: NOW)


def workload() -> dict[str, Any]:
    return (
        builders.WorkloadBuilder("w", "team")
        .pod_set(count=2, requests={"cpu": 1})
        .queue("lq")
        .label("app", "a")
        .raw()
    )


def pod(name: str, uid: str = "j1") -> dict[str, Any]:
    # No builder makes Pods; the fake needs only their metadata.
    meta = {
        "name": name,
        "namespace": "team",
        "labels": {"batch.kubernetes.io/controller-uid": uid},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


def lease() -> dict[str, Any]:
    meta = {"name": "leader", "namespace": "berth-system"}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": {}}


# Paths ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class PathCase:
    id: str
    body: dict[str, Any]
    collection: str


PATH_CASES = [
    PathCase("a namespaced Berth kind", workload(), WORKLOADS),
    PathCase(
        "a cluster-scoped Berth kind",
        builders.ClusterQueueBuilder("cq").raw(),
        f"{GROUP}/clusterqueues",
    ),
    PathCase("a flavor", builders.ResourceFlavorBuilder("f").raw(), f"{GROUP}/resourceflavors"),
    PathCase(
        "a LocalQueue",
        builders.LocalQueueBuilder("lq", "team", "cq").raw(),
        f"{GROUP}/namespaces/team/localqueues",
    ),
    PathCase(
        "a batch Job", builders.JobBuilder("j", "team").obj(), "/apis/batch/v1/namespaces/team/jobs"
    ),
    PathCase("a core namespaced kind", pod("p"), "/api/v1/namespaces/team/pods"),
    PathCase("a Namespace", builders.NamespaceBuilder("team").obj(), "/api/v1/namespaces"),
    PathCase("a Lease", lease(), "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases"),
]


@pytest.mark.parametrize("case", PATH_CASES, ids=lambda c: c.id)
async def test_an_object_created_under_its_collection_is_read_back_at_its_own_path(
    case: PathCase, kube: fakeapi.FakeKube
) -> None:
    created = await kube.request("POST", case.collection, body=case.body)
    name = case.body["metadata"]["name"]
    read = await kube.request("GET", f"{case.collection}/{name}")
    assert read == created
    assert (read["apiVersion"], read["kind"]) == (case.body["apiVersion"], case.body["kind"])
    assert [o["metadata"]["name"] for o in kube.objects(case.body["kind"])] == [
        case.body["metadata"]["name"]
    ]


@pytest.mark.parametrize(
    "path",
    [
        f"{GROUP}/namespaces/team/clusterqueues/cq",  # cluster-scoped, asked in a namespace
        f"{GROUP}/workloads/w",  # namespaced, asked without one
        f"{GROUP}/resourceflavors/f/status",  # ResourceFlavor has no status subresource
        f"{WL}/scale",
        "/apis/apps/v1/namespaces/team/deployments/d",
    ],
)
async def test_a_path_the_server_does_not_serve_is_404(path: str, kube: fakeapi.FakeKube) -> None:
    with pytest.raises(errors.NotFoundError, match=r"^404 the server could not find"):
        await kube.request("GET", path)


# Create --------------------------------------------------------------------------------------


async def test_create_sets_uid_creation_time_resource_version_and_generation(
    kube: fakeapi.FakeKube,
) -> None:
    body = workload()
    body["metadata"] |= {"uid": "mine", "creationTimestamp": "2000-01-01T00:00:00Z"}
    body["metadata"] |= {"deletionTimestamp": "2000-01-01T00:00:00Z"}
    await kube.request("POST", "/api/v1/namespaces/team/pods", body=pod("p"))
    created = await kube.request("POST", WORKLOADS, body=body)
    assert created["metadata"] == {
        "name": "w",
        "namespace": "team",
        "labels": {"app": "a"},
        "uid": "00000000-0000-0000-0000-000000000002",
        "creationTimestamp": NOW_TEXT,
        "generation": 1,
        "resourceVersion": "2",
    }
    assert "generation" not in kube.objects("Pod")[0]["metadata"], "Pods have no generation"


@pytest.mark.parametrize(
    ("body", "collection", "want_status"),
    [
        (builders.WorkloadBuilder("w", "team").admitted("cq", {"cpu": "f"}).raw(), WORKLOADS, None),
        (
            builders.JobBuilder("j", "team").set("status.active", 2).obj(),
            "/apis/batch/v1/namespaces/team/jobs",
            {},
        ),
        (
            dict(pod("p"), status={"phase": "Running"}),
            "/api/v1/namespaces/team/pods",
            {"phase": "Pending"},
        ),
        (builders.NamespaceBuilder("n").obj(), "/api/v1/namespaces", {"phase": "Active"}),
    ],
    ids=["a CRD drops it", "a Job starts empty", "a Pod starts Pending", "a Namespace is Active"],
)
async def test_a_create_never_sets_the_status_of_a_kind_with_a_status_subresource(
    body: dict[str, Any],
    collection: str,
    want_status: dict[str, Any] | None,
    kube: fakeapi.FakeKube,
) -> None:
    created = await kube.request("POST", collection, body=body)
    assert created.get("status") == want_status


@dataclasses.dataclass(frozen=True, slots=True)
class CreateRefusal:
    id: str
    change: Callable[[dict[str, Any]], object]
    want_error: type[errors.KubeError]
    want_message: str


CREATE_REFUSALS = [
    CreateRefusal(
        "the name is taken",
        lambda _: None,
        errors.ConflictError,
        '409 workloads.berth.dev "w" already exists',
    ),
    CreateRefusal(
        "a resourceVersion is given",
        lambda b: b["metadata"].update(resourceVersion="7"),
        errors.TransientError,
        "500 resourceVersion should not be set",
    ),
    CreateRefusal(
        "the namespace is another",
        lambda b: b["metadata"].update(namespace="other"),
        errors.PermanentError,
        "400 the namespace of the provided object does not match",
    ),
    CreateRefusal(
        "there is no name",
        lambda b: b["metadata"].pop("name"),
        errors.PermanentError,
        "422 Workload is invalid: metadata.name",
    ),
]


@pytest.mark.parametrize("case", CREATE_REFUSALS, ids=lambda c: c.id)
async def test_a_create_is_refused_as_kube_apiserver_refuses_it(
    case: CreateRefusal, kube: fakeapi.FakeKube
) -> None:
    await kube.request("POST", WORKLOADS, body=workload())
    body = workload()
    case.change(body)
    with pytest.raises(case.want_error) as caught:
        await kube.request("POST", WORKLOADS, body=body)
    assert type(caught.value) is case.want_error
    assert str(caught.value).startswith(case.want_message)


async def test_generate_name_gives_distinct_names_with_the_prefix(kube: fakeapi.FakeKube) -> None:
    body = workload()
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "job-j-"
    got = [(await kube.request("POST", WORKLOADS, body=body))["metadata"]["name"] for _ in range(3)]
    assert len(set(got)) == 3
    assert all(n.startswith("job-j-") and len(n) == len("job-j-") + 5 for n in got)


# Read ----------------------------------------------------------------------------------------


async def test_a_missing_object_is_not_found_with_kube_apiservers_message(
    kube: fakeapi.FakeKube,
) -> None:
    with pytest.raises(errors.NotFoundError, match=r'^404 jobs\.batch "j" not found$'):
        await kube.request("GET", "/apis/batch/v1/namespaces/team/jobs/j")


async def test_a_list_has_the_namespace_or_all_of_them_and_the_servers_resource_version(
    kube: fakeapi.FakeKube,
) -> None:
    for ns in ("team", "other"):
        body = workload()
        body["metadata"]["namespace"] = ns
        await kube.request("POST", f"{GROUP}/namespaces/{ns}/workloads", body=body)
    one = await kube.request("GET", WORKLOADS)
    items, rv = await kube.list_items(f"{GROUP}/workloads")
    assert [i["metadata"]["namespace"] for i in one["items"]] == ["team"]
    assert (one["kind"], one["metadata"]["resourceVersion"]) == ("WorkloadList", "2")
    assert [i["metadata"]["namespace"] for i in items] == ["other", "team"]
    assert rv == str(kube.resource_version)
    assert items[0]["kind"] == "Workload", "custom resources keep their kind in a list"


async def test_a_label_selector_picks_the_pods_of_one_job_and_items_have_no_kind(
    kube: fakeapi.FakeKube,
) -> None:
    for name, uid in (("a", "j1"), ("b", "j2"), ("c", "j1")):
        await kube.request("POST", "/api/v1/namespaces/team/pods", body=pod(name, uid))
    listed = await kube.request(
        "GET",
        "/api/v1/namespaces/team/pods",
        query={"labelSelector": "batch.kubernetes.io/controller-uid=j1"},
    )
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "c"]
    assert "kind" not in listed["items"][0], "typed lists of built-in kinds omit it per item"


@pytest.mark.parametrize(
    "query", [{"labelSelector": "app in (a,b)"}, {"fieldSelector": "metadata.name=w"}]
)
async def test_selectors_the_fake_does_not_serve_are_refused_not_ignored(
    query: dict[str, str], kube: fakeapi.FakeKube
) -> None:
    with pytest.raises(errors.PermanentError, match=r"^400 "):
        await kube.request("GET", WORKLOADS, query=query)


# Update --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateCase:
    id: str
    method: str
    path: str
    body: Callable[[dict[str, Any]], Any]
    """The request body, from the stored object."""
    want: Callable[[dict[str, Any]], Any] | None = None
    """What the stored object becomes, from the old one (None: unchanged, nothing written)."""
    want_generation: int = 1
    content_type: str = MERGE


def _admitted(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj, status={"admission": {"clusterQueue": "cq"}})


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for step in parents:
        node = node[step]
    node[last] = value
    return out


def _without(obj: dict[str, Any], path: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for step in parents:
        node = node[step]
    del node[last]
    return out


UPDATE_CASES = [
    UpdateCase(
        "a merge patch sets a field",
        "PATCH",
        WL,
        lambda _: {"spec": {"active": False}},
        lambda o: _with(o, "spec.active", False),
        want_generation=2,
    ),
    UpdateCase(
        "null in a merge patch deletes the key (RFC 7386)",
        "PATCH",
        WL,
        lambda _: {"spec": {"queueName": None}},
        lambda o: _without(o, "spec.queueName"),
        want_generation=2,
    ),
    UpdateCase(
        "a merge patch replaces a list whole (RFC 7386)",
        "PATCH",
        WL,
        lambda _: {"spec": {"podSets": [{"name": "main", "count": 1}]}},
        lambda o: _with(o, "spec.podSets", [{"name": "main", "count": 1}]),
        want_generation=2,
    ),
    UpdateCase(
        "a merge patch with the current resourceVersion applies",
        "PATCH",
        WL,
        lambda o: {
            "metadata": {"resourceVersion": o["metadata"]["resourceVersion"]},
            "spec": {"priority": 5},
        },
        lambda o: _with(o, "spec.priority", 5),
        want_generation=2,
    ),
    UpdateCase(
        "a label change keeps the generation",
        "PATCH",
        WL,
        lambda _: {"metadata": {"labels": {"app": "b"}}},
        lambda o: _with(o, "metadata.labels.app", "b"),
    ),
    UpdateCase(
        "a main-resource write ignores status",
        "PATCH",
        WL,
        lambda _: {"status": {"admission": {"clusterQueue": "cq"}}},
    ),
    UpdateCase(
        "a status write changes only status",
        "PATCH",
        f"{WL}/status",
        lambda _: {
            "spec": {"active": False},
            "metadata": {"labels": None},
            "status": {"admission": {"clusterQueue": "cq"}},
        },
        _admitted,
    ),
    UpdateCase(
        "a merge patch that changes nothing writes nothing",
        "PATCH",
        WL,
        lambda _: {"spec": {"queueName": "lq"}},
    ),
    UpdateCase(
        "server-owned metadata is kept",
        "PATCH",
        WL,
        lambda _: {"metadata": {"creationTimestamp": "2000-01-01T00:00:00Z", "generation": 9}},
    ),
    UpdateCase(
        "a PUT replaces the object",
        "PUT",
        WL,
        lambda o: _without(o, "metadata.labels"),
        lambda o: _without(o, "metadata.labels"),
    ),
    UpdateCase(
        "a PUT on /status replaces only status",
        "PUT",
        f"{WL}/status",
        lambda o: _admitted(_without(o, "spec.queueName")),
        _admitted,
    ),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: c.id)
async def test_an_update_stores_what_kube_apiserver_stores(
    case: UpdateCase, kube: fakeapi.FakeKube
) -> None:
    before = await kube.request("POST", WORKLOADS, body=workload())
    body = case.body(before)
    returned = await kube.request(case.method, case.path, body=body, content_type=case.content_type)
    stored = kube.objects("Workload")[0]
    assert returned == stored
    if case.want is None:
        assert stored == before
        assert [e.type for e in kube.feed] == ["ADDED"], "no write, no event"
        return
    want = case.want(before)
    want["metadata"] |= {"resourceVersion": "2", "generation": case.want_generation}
    assert stored == want
    assert [e.type for e in kube.feed] == ["ADDED", "MODIFIED"]


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateRefusal:
    id: str
    method: str
    path: str
    body: Callable[[dict[str, Any]], Any]
    want_error: type[BaseException]
    want_message: str
    content_type: str = MERGE


def _stale(o: dict[str, Any]) -> dict[str, Any]:
    return _with(o, "metadata.resourceVersion", "0")


UPDATE_REFUSALS = [
    UpdateRefusal(
        "a merge patch from a stale read",
        "PATCH",
        WL,
        lambda _: {"metadata": {"resourceVersion": "0"}, "spec": {"priority": 1}},
        errors.ConflictError,
        '409 Operation cannot be fulfilled on workloads.berth.dev "w": the object has been',
    ),
    UpdateRefusal(
        "a status patch from a stale read",
        "PATCH",
        f"{WL}/status",
        lambda _: {"metadata": {"resourceVersion": "0"}, "status": {}},
        errors.ConflictError,
        "409 Operation cannot be fulfilled",
    ),
    UpdateRefusal(
        "a PUT from a stale read",
        "PUT",
        WL,
        _stale,
        errors.ConflictError,
        "409 Operation cannot be fulfilled",
    ),
    UpdateRefusal(
        "a PUT of a custom resource without resourceVersion",
        "PUT",
        WL,
        lambda o: _without(o, "metadata.resourceVersion"),
        errors.PermanentError,
        '422 Workload.berth.dev "w" is invalid: metadata.resourceVersion',
    ),
    UpdateRefusal(
        "a PUT of another object with the same name",
        "PUT",
        WL,
        lambda o: _with(o, "metadata.uid", "other"),
        errors.ConflictError,
        "409 Precondition failed: UID in precondition: other",
    ),
    UpdateRefusal(
        "a patch of the uid",
        "PATCH",
        WL,
        lambda _: {"metadata": {"uid": "other"}},
        errors.PermanentError,
        "422 Workload is invalid: metadata.uid: field is immutable",
    ),
    UpdateRefusal(
        "a patch of a missing object",
        "PATCH",
        f"{WORKLOADS}/gone",
        lambda _: {"spec": {}},
        errors.NotFoundError,
        '404 workloads.berth.dev "gone" not found',
    ),
    UpdateRefusal(
        "a JSON patch",
        "PATCH",
        WL,
        lambda _: [{"op": "remove", "path": "/spec/active"}],
        errors.PermanentError,
        "415 ",
        content_type="application/json-patch+json",
    ),
]


@pytest.mark.parametrize("case", UPDATE_REFUSALS, ids=lambda c: c.id)
async def test_an_update_is_refused_and_nothing_changes(
    case: UpdateRefusal, kube: fakeapi.FakeKube
) -> None:
    before = await kube.request("POST", WORKLOADS, body=workload())
    with pytest.raises(case.want_error) as caught:
        await kube.request(
            case.method, case.path, body=case.body(before), content_type=case.content_type
        )
    assert kube.objects("Workload") == [before]
    assert len(kube.feed) == 1
    assert type(caught.value) is case.want_error
    assert str(caught.value).startswith(case.want_message)


async def test_an_update_without_resource_version_is_unconditional_for_a_lease(
    kube: fakeapi.FakeKube,
) -> None:
    path = "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases"
    await kube.request("POST", path, body=lease())
    stored = await kube.request("PUT", f"{path}/leader", body=dict(lease(), spec={"x": 1}))
    assert (stored["spec"], stored["metadata"]["resourceVersion"]) == ({"x": 1}, "2")


# Delete and finalizers -----------------------------------------------------------------------


def _finalized() -> dict[str, Any]:
    return builders.ClusterQueueBuilder("cq").set("metadata.finalizers", ["berth.dev/x"]).raw()


CQ = f"{GROUP}/clusterqueues/cq"


async def test_a_delete_removes_an_object_without_finalizers_and_says_so_on_the_feed(
    kube: fakeapi.FakeKube,
) -> None:
    await kube.request("POST", WORKLOADS, body=workload())
    deleted = await kube.request("DELETE", WL)
    assert kube.objects("Workload") == []
    assert [(e.type, e.kind) for e in kube.feed] == [("ADDED", "Workload"), ("DELETED", "Workload")]
    assert kube.feed[-1].body == deleted
    assert deleted["metadata"]["resourceVersion"] == "2", "a deletion is a new version"


async def test_a_delete_only_marks_an_object_with_finalizers_until_they_are_removed(
    kube: fakeapi.FakeKube,
) -> None:
    await kube.request("POST", f"{GROUP}/clusterqueues", body=_finalized())
    marked = await kube.request("DELETE", CQ)
    again = await kube.request("DELETE", CQ)
    gone = await kube.request(
        "PATCH",
        CQ,
        body={
            "metadata": {
                "finalizers": [],
                "resourceVersion": marked["metadata"]["resourceVersion"],
            }
        },
        content_type=MERGE,
    )
    meta = marked["metadata"]
    assert (meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"]) == (NOW_TEXT, 0)
    assert (meta["generation"], meta["resourceVersion"]) == (2, "2"), "marking bumps generation"
    assert again == marked, "a second delete changes nothing"
    assert [e.type for e in kube.feed] == ["ADDED", "MODIFIED", "DELETED"]
    assert kube.objects("ClusterQueue") == []
    # As etcd answers a delete: the last stored body (finalizers included) at the new version.
    assert gone["metadata"]["finalizers"] == ["berth.dev/x"]
    assert gone["metadata"]["resourceVersion"] == "3"
    assert kube.feed[-1].body == gone


async def test_no_finalizer_can_be_added_to_an_object_being_deleted(kube: fakeapi.FakeKube) -> None:
    await kube.request("POST", f"{GROUP}/clusterqueues", body=_finalized())
    await kube.request("DELETE", CQ)
    patch = {"metadata": {"finalizers": ["berth.dev/x", "other/y"]}}
    with pytest.raises(errors.PermanentError, match=r"^422 .*no new finalizers can be added"):
        await kube.request("PATCH", CQ, body=patch, content_type=MERGE)


@pytest.mark.parametrize(
    ("options", "want_error", "want_message"),
    [
        ({"preconditions": {"uid": "other"}}, errors.ConflictError, "409 Precondition failed: UID"),
        (
            {"preconditions": {"resourceVersion": "0"}},
            errors.ConflictError,
            "409 Precondition failed: ResourceVersion",
        ),
        ({"propagationPolicy": "Foreground"}, NotImplementedError, "propagationPolicy Foreground"),
    ],
    ids=["another uid", "a stale resourceVersion", "a policy the fake has no collector for"],
)
async def test_a_delete_is_refused_when_its_options_cannot_hold(
    options: dict[str, Any],
    want_error: type[BaseException],
    want_message: str,
    kube: fakeapi.FakeKube,
) -> None:
    await kube.request("POST", WORKLOADS, body=workload())
    with pytest.raises(want_error, match=f"^{want_message}"):
        await kube.request("DELETE", WL, body=options)


# Feed, copies, faults, seeding ---------------------------------------------------------------


async def test_listeners_and_the_feed_get_copies_and_no_body_is_shared_with_the_store(
    kube: fakeapi.FakeKube,
) -> None:
    heard: list[fakeapi.WatchEvent] = []
    kube.listen(heard.append)
    body = workload()
    created = await kube.request("POST", WORKLOADS, body=body)
    body["spec"]["queueName"] = "changed by the caller"
    created["spec"]["queueName"] = "changed by the caller"
    heard[0].body["spec"]["queueName"] = "changed by a listener"
    kube.objects("Workload")[0]["spec"]["queueName"] = "changed by a reader"
    read = await kube.request("GET", WL)
    assert read["spec"]["queueName"] == "lq"
    assert kube.feed[0].body["spec"]["queueName"] == "lq"
    assert [(e.type, e.kind) for e in heard] == [("ADDED", "Workload")]


async def test_a_request_suspends_its_caller_as_a_round_trip_does(kube: fakeapi.FakeKube) -> None:
    ran = asyncio.Event()

    async def other() -> None:
        ran.set()

    task = asyncio.create_task(other())
    await kube.request("POST", WORKLOADS, body=workload())
    await task
    assert kube.feed
    assert ran.is_set()
    assert kube.calls == [("POST", WORKLOADS)]


async def test_injected_faults_fail_the_next_matching_requests_and_then_stop(
    kube: fakeapi.FakeKube,
) -> None:
    await kube.request("POST", WORKLOADS, body=workload())
    kube.fail("PATCH", WORKLOADS, errors.ConflictError, times=2)
    got = []
    for method, path in [("GET", WL), ("PATCH", WL), ("PATCH", f"{WL}/status"), ("PATCH", WL)]:
        try:
            await kube.request(method, path, body={"spec": {"priority": 3}}, content_type=MERGE)
            got.append("ok")
        except errors.ConflictError as e:
            got.append(str(e))
    assert got == [
        "ok",
        f"409 injected fault: PATCH {WL}",
        f"409 injected fault: PATCH {WL}/status",
        "ok",
    ]


async def test_a_fault_after_landing_loses_only_the_answer(kube: fakeapi.FakeKube) -> None:
    kube.fail("*", GROUP, landed=True)
    with pytest.raises(errors.TransientError) as caught:
        await kube.request("POST", WORKLOADS, body=workload())
    message = str(caught.value)
    assert message == f"503 injected fault: POST {WORKLOADS}"
    assert [o["metadata"]["name"] for o in kube.objects("Workload")] == ["w"]


def test_put_seeds_an_object_with_its_status_as_if_created() -> None:
    kube = fakeapi.FakeKube(lambda: NOW)
    job = builders.JobBuilder("j", "team").set("status.active", 1).obj()
    first = kube.put(job)
    second = kube.put(dict(job, status={"active": 0}))
    assert first["status"] == {"active": 1}
    assert (first["metadata"]["generation"], first["metadata"]["creationTimestamp"]) == (
        1,
        NOW_TEXT,
    )
    assert kube.objects("Job") == [second]
    assert second["metadata"]["resourceVersion"] == "2"
    assert [e.type for e in kube.feed] == ["ADDED", "MODIFIED"]


# The operator's own writers ------------------------------------------------------------------


async def test_workload_status_patches_fail_on_a_stale_read_and_store_only_status(
    kube: fakeapi.FakeKube,
) -> None:
    key = names.WorkloadKey("team", "w")
    port = kube
    created = await workloads.create(port, workload())
    await workloads.patch_spec(port, key, None, {"priority": 4})
    with pytest.raises(errors.ConflictError):
        await workloads.patch_status(
            port, key, created["metadata"]["resourceVersion"], {"admission": {"x": 1}}
        )
    fresh = await kube.request("GET", workloads.path("team", "w"))
    status = {"conditions": [workloads.condition("Admitted", True, "Admitted", "", NOW)]}
    stored = await workloads.patch_status(port, key, fresh["metadata"]["resourceVersion"], status)
    assert stored["status"]["conditions"][0]["lastTransitionTime"] == NOW_TEXT
    assert {k: v for k, v in stored.items() if k != "status"} == {
        **fresh,
        "metadata": {**fresh["metadata"], "resourceVersion": "3"},
    }
    assert kube.objects("Workload") == [stored]


async def test_the_operators_deletes_and_job_and_queue_writes_reach_the_right_objects(
    kube: fakeapi.FakeKube,
) -> None:
    port = kube
    kube.put(builders.JobBuilder("j", "team").set("status.startTime", NOW_TEXT).obj())
    kube.put(builders.ClusterQueueBuilder("cq").raw())
    batch = batchjob.BatchJob()
    await jobs.patch(port, batch, "team", "j", {"spec": {"suspend": True}})
    await jobs.patch_status(port, batch, "team", "j", {"status": {"startTime": None}})
    await queues_status.patch_cluster_queue(port, "cq", {"pendingWorkloads": 2})
    created = await workloads.create(port, workload())
    with pytest.raises(errors.ConflictError):
        await workloads.delete(port, names.WorkloadKey("team", "w"), "another uid")
    await workloads.delete(port, names.WorkloadKey("team", "w"), created["metadata"]["uid"])
    (job,) = kube.objects("Job")
    assert (job["spec"]["suspend"], job["status"], job["metadata"]["generation"]) == (True, {}, 2)
    assert kube.objects("ClusterQueue")[0]["status"] == {"pendingWorkloads": 2}
    assert kube.objects("Workload") == []
