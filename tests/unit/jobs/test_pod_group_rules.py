"""The pure half of the pod integration, after Kueue's ``pkg/controller/jobs/pod``.

Rows follow Kueue's rules (``pod_controller.go``: ``constructGroupPodSets``, ``Finished``,
``isPodRunnableOrSucceeded``, ``sortActivePods``, ``Stop``; ``pod_webhook.go``:
``validatePodGroupMetadata``, ``validateUpdateForRetriableInGroupAnnotation``; ``util/pod``:
``SpecShape``) and Berth's stricter ones (the gate comes off only with an admission; queue,
group, size and role fixed; the role written by the webhook, never taken from the request).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.api import configuration
from berth.api import topology as api_topology
from berth.api.labels import POD_SET_LABEL, QUEUE_LABEL
from berth.core import priority, topology
from berth.jobs import registry
from berth.jobs.framework import podsets, protocol, workload_body
from berth.jobs.pod import group as podgroup
from berth.jobs.pod import integration as pod_integration
from berth.jobs.pod import rules as pod_rules

GPU = "nvidia.com/gpu"
H100 = podsets.FlavorPlacement({"gpu": "h100"}, ({"key": "h100", "operator": "Exists"},))


def pod(
    name: str,
    *,
    group: str | None = "train",
    total: int | str | None = 2,
    gpus: int | str = 1,
    queue: str | None = "lq",
    phase: str = "Pending",
    gated: bool = True,
    finalizer: bool = True,
    deleted: bool = False,
    node: str | None = None,
    created: str = "2026-11-26T10:00:00Z",
    notes: dict[str, str] | None = None,
    ready: bool = False,
) -> dict[str, Any]:
    """A member as the Pod webhook leaves it (labelled, gated, finalized), in some state."""
    labels = {podgroup.MANAGED_LABEL: "true"}
    annotations = dict(notes or {})
    if queue is not None:
        labels[QUEUE_LABEL] = queue
    if group is not None:
        labels[podgroup.GROUP_LABEL] = group
    if total is not None:
        annotations[podgroup.TOTAL_ANNOTATION] = str(total)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ml",
        "uid": f"uid-{name}",
        "labels": labels,
        "annotations": annotations,
        "creationTimestamp": created,
    }
    if finalizer:
        meta["finalizers"] = [podgroup.FINALIZER]
    if deleted:
        meta["deletionTimestamp"] = "2026-11-26T10:05:00Z"
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {GPU: str(gpus)}}}]
    }
    if gated:
        spec["schedulingGates"] = [{"name": podgroup.GATE}]
    if node is not None:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": phase}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def running(name: str, **kw: Any) -> dict[str, Any]:
    return pod(name, gated=False, node="n1", phase="Running", **kw)


def group(*pods: dict[str, Any], name: str = "train") -> dict[str, Any]:
    return podgroup.group_body("ml", name, pods)


# Membership and metadata --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "notes", "wanted", "problem"),
    [
        ({podgroup.GROUP_LABEL: "g"}, {podgroup.TOTAL_ANNOTATION: "3"}, ("g", 3, True), None),
        ({}, {}, ("p", 1, False), None),
        ({podgroup.GROUP_LABEL: "g"}, {}, None, f"annotations[{podgroup.TOTAL_ANNOTATION}]"),
        ({}, {podgroup.TOTAL_ANNOTATION: "3"}, None, f"labels[{podgroup.GROUP_LABEL}]"),
        ({podgroup.GROUP_LABEL: "g"}, {podgroup.TOTAL_ANNOTATION: "0"}, None, "above 0"),
        ({podgroup.GROUP_LABEL: "g"}, {podgroup.TOTAL_ANNOTATION: "two"}, None, "'two'"),
        ({podgroup.GROUP_LABEL: "G_x"}, {podgroup.TOTAL_ANNOTATION: "2"}, None, "Workload name"),
    ],
    ids=["grouped", "alone", "no size", "size alone", "zero", "not a number", "bad name"],
)
def test_a_pods_group_comes_from_its_label_and_size_annotation(
    labels: dict[str, str],
    notes: dict[str, str],
    wanted: tuple[str, int, bool] | None,
    problem: str | None,
) -> None:
    body = {"metadata": {"name": "p", "labels": labels, "annotations": notes}}
    found = podgroup.membership(body)
    assert (None if found is None else (found.name, found.total, found.grouped)) == wanted
    problems = " ".join(str(p) for p in podgroup.metadata_problems(body))
    assert (problem is None) == (not problems)
    assert problem is None or problem in problems


def test_kueues_group_label_and_size_are_read_only_when_honored() -> None:
    body = {
        "metadata": {
            "name": "p",
            "labels": {podgroup.KUEUE_GROUP_LABEL: "g"},
            "annotations": {podgroup.KUEUE_TOTAL_ANNOTATION: "4"},
        }
    }
    assert podgroup.membership(body) == podgroup.Membership("p", 1, grouped=False)
    assert podgroup.membership(body, honor_kueue=True) == podgroup.Membership("g", 4, grouped=True)
    patch = pod_rules.webhook_patch({**body, "spec": {}}, honor_kueue=True)
    written = {op["path"]: op["value"] for op in patch}
    assert written["/metadata/labels/berth.dev~1pod-group-name"] == "g"
    assert written["/metadata/annotations/berth.dev~1pod-group-total-count"] == "4"


# Pod sets -------------------------------------------------------------------------------------


def test_members_of_one_shape_make_one_pod_set_and_the_sets_are_sorted_by_role() -> None:
    body = group(
        pod("w0", total=4, gpus=2),
        pod("w1", total=4, gpus="2"),
        pod("head", total=4, gpus=1),
        pod("w2", total=4, gpus=2),
    )
    sets = podgroup.pod_sets(body)
    assert [s["name"] for s in sets] == sorted(s["name"] for s in sets)
    by_role = {s["name"]: s["count"] for s in sets}
    assert by_role == {
        podgroup.role_of(pod("head", total=4, gpus=1)): 1,
        podgroup.role_of(pod("w0", total=4, gpus=2)): 3,
    }
    for s in sets:
        assert "schedulingGates" not in s["template"]["spec"]


@pytest.mark.parametrize(
    ("field", "a", "b", "same"),
    [
        ("image", "x", "y", True),  # not in Kueue's shape
        ("name", "c", "d", True),
        ("nodeSelector", {"pool": "a"}, {"pool": "b"}, False),
        ("tolerations", [], [{"key": "t", "operator": "Exists"}], False),
        ("priority", 1, 2, False),
        ("requests", "1000m", "1", True),  # one quantity, two spellings
        ("requests", "1", "2", False),
    ],
)
def test_the_role_reads_the_fields_of_kueues_spec_shape(
    field: str, a: Any, b: Any, same: bool
) -> None:
    def spec(value: Any) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {}}}
        out: dict[str, Any] = {"containers": [container]}
        if field in {"image", "name"}:
            container[field] = value
        elif field == "requests":
            container["resources"]["requests"] = {"cpu": value}
        else:
            out[field] = value
        return out

    assert (podgroup.role_hash(spec(a)) == podgroup.role_hash(spec(b))) is same


def test_the_role_recorded_by_the_webhook_wins_over_the_spec_now() -> None:
    started = running("w0", notes={podgroup.ROLE_ANNOTATION: "abcd1234"})
    started["spec"]["nodeSelector"] = {"gpu": "h100"}
    assert podgroup.role_of(started) == "abcd1234"


def test_the_webhook_writes_the_role_from_the_spec_replacing_a_forged_one() -> None:
    forged = pod("big", gpus=8, gated=False, finalizer=False, notes={podgroup.ROLE_ANNOTATION: "x"})
    del forged["metadata"]["labels"][podgroup.MANAGED_LABEL]
    ops = pod_rules.webhook_patch(forged)
    written = {op["path"]: op["value"] for op in ops}
    assert written["/metadata/annotations/berth.dev~1role-hash"] == podgroup.role_hash(
        forged["spec"]
    )
    assert written["/metadata/labels/berth.dev~1managed"] == "true"
    assert written["/metadata/finalizers"] == [podgroup.FINALIZER]
    assert written["/spec/schedulingGates"] == [{"name": podgroup.GATE}]


# Runnable, missing, excess -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("members", "missing", "excess"),
    [
        ([pod("a")], 1, []),
        ([pod("a"), pod("b")], 0, []),
        ([pod("a"), pod("b", phase="Failed")], 1, []),  # a failed pod does not count
        ([pod("a"), pod("b", deleted=True)], 1, []),  # deleted before it was bound
        ([pod("a"), running("b", deleted=True)], 0, []),  # deleted on a node: still running
        ([pod("a"), pod("b"), pod("c", created="2026-11-26T11:00:00Z")], 0, ["c"]),
        # the started one stays, the newest gated one is the excess
        ([pod("a"), pod("b", created="2026-11-26T09:00:00Z"), running("c")], 0, ["a"]),
        ([pod("a"), pod("b", finalizer=False, created="2026-11-26T09:00:00Z"), pod("c")], 0, ["b"]),
    ],
    ids=[
        "short",
        "whole",
        "failed",
        "deleted gated",
        "deleted bound",
        "newest",
        "started",
        "finalizer",
    ],
)
def test_a_group_waits_for_its_size_in_runnable_pods_and_deletes_the_rest(
    members: list[dict[str, Any]], missing: int, excess: list[str]
) -> None:
    body = group(*members)
    assert podgroup.missing(body) == missing
    assert [p["metadata"]["name"] for p in podgroup.excess(body)] == excess


# Status -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("members", "finished"),
    [
        ([running("a"), running("b")], (False, False)),
        ([pod("a", phase="Succeeded"), running("b")], (False, False)),
        ([pod("a", phase="Succeeded"), pod("b", phase="Succeeded")], (True, True)),
        ([pod("a", phase="Succeeded"), pod("b", phase="Failed")], (False, False)),  # retried
        (
            [
                pod("a", phase="Succeeded"),
                pod("b", phase="Failed", notes={podgroup.RETRIABLE_ANNOTATION: "false"}),
            ],
            (True, False),
        ),
        (
            [
                running("a"),
                pod("b", phase="Failed", notes={podgroup.RETRIABLE_ANNOTATION: "false"}),
            ],
            (False, False),
        ),
    ],
    ids=["running", "half", "all succeeded", "failed retriable", "unretriable", "one runs"],
)
def test_a_group_finishes_when_its_size_succeeded_or_an_unretriable_group_stopped(
    members: list[dict[str, Any]], finished: tuple[bool, bool]
) -> None:
    assert podgroup.finished(group(*members)) == finished


def test_a_group_is_suspended_while_a_counted_member_is_gated() -> None:
    assert podgroup.is_suspended(group(running("a"), pod("b")))
    assert not podgroup.is_suspended(group(running("a"), running("b")))
    # a gated excess member does not make a running group suspended
    late = pod("c", created="2026-11-26T11:00:00Z")
    assert not podgroup.is_suspended(group(running("a"), running("b"), late))
    assert podgroup.is_suspended(group())


def test_ready_and_active_count_members() -> None:
    body = group(running("a", ready=True), pod("b", phase="Succeeded", node="n1", gated=False))
    assert podgroup.pods_ready(body, 2)
    assert not podgroup.pods_ready(group(running("a", ready=True), running("b")), 2)
    assert podgroup.active_pods(body) == 1
    assert podgroup.active_pods(group(running("a", deleted=True), pod("b"))) == 1


# Writes -------------------------------------------------------------------------------------

INTEG = pod_integration.PodGroupJob()


def test_start_ungates_each_counted_gated_member_on_its_roles_flavors() -> None:
    head = pod("head", total=3, gpus=1)
    worker = pod("worker", total=3, gpus=2, notes={"x": "y"})
    started = running("w-started", total=3, gpus=2)
    body = group(head, worker, started)
    roles = {p["metadata"]["name"]: podgroup.role_of(p) for p in (head, worker, started)}
    runs = [
        protocol.PodSetRun(roles["head"], 1, ()),
        protocol.PodSetRun(roles["worker"], 2, (H100,)),
    ]
    patch = INTEG.start_patch(body, [], runs)[pod_integration.MEMBERS]
    assert sorted(patch) == ["head", "worker"]  # the started one is left alone
    assert patch["worker"]["spec"] == {
        "schedulingGates": [{"$patch": "delete", "name": podgroup.GATE}],
        "nodeSelector": {"gpu": "h100"},
        "tolerations": [{"key": "h100", "operator": "Exists"}],
    }
    assert patch["worker"]["metadata"]["labels"] == {POD_SET_LABEL: roles["worker"]}
    assert patch["head"]["spec"] == {
        "schedulingGates": [{"$patch": "delete", "name": podgroup.GATE}]
    }


def test_start_pins_each_member_of_a_placed_role_to_its_domain() -> None:
    """Members exist before admission: each is pinned as it starts, in name order."""
    members = [pod(f"w-{i}", total=3, gpus=8) for i in (2, 0, 1)]
    role = podgroup.role_of(members[0])
    host = topology.HOSTNAME
    placed = podsets.FlavorPlacement({"gpu": "h100"}, (), ((api_topology.PLACED_LABEL, "g-uid"),))
    assignment = topology.Assignment(
        (host,), (topology.DomainCount(("h1",), 2), topology.DomainCount(("h2",), 1))
    )
    runs = [protocol.PodSetRun(role, 3, (placed,), assignment)]
    patch = INTEG.start_patch(group(*members), [], runs)[pod_integration.MEMBERS]
    assert {name: p["spec"]["nodeSelector"] for name, p in patch.items()} == {
        "w-0": {"gpu": "h100", host: "h1"},
        "w-1": {"gpu": "h100", host: "h1"},
        "w-2": {"gpu": "h100", host: "h2"},
    }
    assert all(
        p["metadata"]["labels"][api_topology.PLACED_LABEL] == "g-uid" for p in patch.values()
    )


def test_stop_deletes_the_started_members_and_keeps_the_gated_and_finished() -> None:
    body = group(
        running("run", total=4),
        pod("wait", total=4),
        pod("done", total=4, phase="Succeeded", gated=False, node="n1"),
        running("going", total=4, deleted=True),
    )
    assert INTEG.stop_patch(body) == {pod_integration.MEMBERS: {"run": None}}
    assert not isinstance(INTEG, protocol.Restorable)  # a member is deleted, never restored
    assert not isinstance(INTEG, protocol.HeldAtCount)  # the size is fixed, extras deleted


@pytest.mark.parametrize(
    ("members", "finished", "dropped"),
    [
        ([running("a"), pod("b", phase="Succeeded")], False, []),
        ([running("a"), pod("b", phase="Succeeded")], True, ["a", "b"]),
        ([running("a", deleted=True), pod("b")], False, ["a"]),  # deleted, did not succeed
        ([pod("a", phase="Succeeded", deleted=True), pod("b")], False, []),  # still counted
        ([pod("a", phase="Failed"), pod("b")], False, []),  # not replaced yet
        ([pod("a", phase="Failed"), pod("b"), pod("c")], False, ["a"]),  # replaced
        (
            [
                pod("a", phase="Failed", notes={podgroup.RETRIABLE_ANNOTATION: "false"}),
                pod("b"),
                pod("c"),
            ],
            False,
            [],
        ),
    ],
    ids=[
        "running",
        "finished",
        "deleted",
        "succeeded deleted",
        "failed",
        "replaced",
        "unretriable",
    ],
)
def test_the_finalizer_goes_once_a_member_counts_for_nothing_more(
    members: list[dict[str, Any]], finished: bool, dropped: list[str]
) -> None:
    drops = podgroup.finalizer_drops(group(*members), finished_workload=finished)
    assert sorted(p["metadata"]["name"] for p in drops) == dropped


def test_upkeep_deletes_excess_members_and_drops_finalizers_in_one_patch() -> None:
    body = group(running("a"), running("b"), pod("c", created="2026-11-26T11:00:00Z"))
    assert INTEG.upkeep_patch(body, finished_workload=False) == {
        pod_integration.MEMBERS: {"c": None}
    }
    done = INTEG.upkeep_patch(body, finished_workload=True)[pod_integration.MEMBERS]
    assert done == {"a": podgroup.DROP_FINALIZER, "b": podgroup.DROP_FINALIZER, "c": None}


def test_the_workload_is_owned_by_every_member_and_named_after_the_group() -> None:
    body = group(pod("a"), pod("b"))
    new, problems = workload_body.new_workload(
        INTEG, body, priority.PriorityClasses(), uid=podgroup.group_uid("ml", "train")
    )
    assert problems == []
    assert new is not None
    made = new.body(body, INTEG)
    assert made["metadata"]["name"] == "train"
    assert made["metadata"]["labels"][podgroup.WORKLOAD_LABEL] == "train"
    assert [r["name"] for r in made["metadata"]["ownerReferences"]] == ["a", "b"]
    assert not any(r.get("controller") for r in made["metadata"]["ownerReferences"])
    owners = podgroup.owners(
        group(pod("a"), pod("b"), pod("c")), made["metadata"]["ownerReferences"]
    )
    assert owners is not None
    assert [r["name"] for r in owners] == ["a", "b", "c"]
    assert podgroup.owners(body, made["metadata"]["ownerReferences"]) is None


def test_a_pod_alone_is_a_group_of_one_named_as_kueue_names_a_pods_workload() -> None:
    alone = pod("solo", group=None, total=None)
    body = group(alone, name="solo")
    obj, problems = INTEG.to_workload(body, uid="u1")
    assert problems == []
    assert obj is not None
    assert obj.metadata.name.startswith("pod-solo-")
    assert [ps.count for ps in obj.spec.pod_sets] == [1]


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ([pod("a"), pod("b", queue="other")], "a group has one queue"),
        ([pod("a", total=2), pod("b", total=3)], "a group has one size"),
        ([pod("a")], "waits for 1 more"),
    ],
)
def test_a_group_whose_members_disagree_or_that_is_short_makes_no_workload(
    members: list[dict[str, Any]], problem: str
) -> None:
    obj, problems = INTEG.to_workload(group(*members), uid="u")
    assert obj is None
    assert problem in " ".join(str(p) for p in problems)


# Webhook rules ------------------------------------------------------------------------------


def _changed(**changes: Any) -> dict[str, Any]:
    new = pod("a")
    for where, key, value in changes.get("labels", []):
        target = new["metadata"][where]
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    if changes.get("ungate"):
        new["spec"].pop("schedulingGates")
    return new


@pytest.mark.parametrize(
    ("new", "admitted", "field"),
    [
        (_changed(ungate=True), False, "spec.schedulingGates"),
        (_changed(ungate=True), True, None),
        (_changed(labels=[("labels", QUEUE_LABEL, "other")]), True, QUEUE_LABEL),
        (_changed(labels=[("labels", podgroup.GROUP_LABEL, "other")]), False, podgroup.GROUP_LABEL),
        (
            _changed(labels=[("labels", podgroup.MANAGED_LABEL, None)]),
            False,
            podgroup.MANAGED_LABEL,
        ),
        (
            _changed(labels=[("annotations", podgroup.TOTAL_ANNOTATION, "9")]),
            False,
            podgroup.TOTAL_ANNOTATION,
        ),
        (
            _changed(labels=[("annotations", podgroup.ROLE_ANNOTATION, "x")]),
            False,
            podgroup.ROLE_ANNOTATION,
        ),
        (_changed(labels=[("labels", "team", "a")]), False, None),
    ],
    ids=["ungate", "ungate admitted", "queue", "group", "managed", "size", "role", "other label"],
)
def test_a_member_keeps_its_queue_group_size_role_and_gate_until_admitted(
    new: dict[str, Any], admitted: bool, field: str | None
) -> None:
    problems = pod_rules.update_problems(pod("a"), new, admitted=admitted)
    text = " ".join(str(p) for p in problems)
    assert (field is None) == (not problems), text
    assert field is None or field in text


def test_an_unretriable_group_stays_unretriable() -> None:
    old = pod("a", notes={podgroup.RETRIABLE_ANNOTATION: "false"})
    problems = pod_rules.update_problems(old, pod("a"), admitted=False)
    assert [p.path for p in problems] == [f"metadata.annotations[{podgroup.RETRIABLE_ANNOTATION}]"]


@pytest.mark.parametrize(("may_drop", "refused"), [(False, True), (True, False)])
def test_berths_finalizer_comes_off_only_when_the_group_no_longer_counts_the_member(
    may_drop: bool, refused: bool
) -> None:
    # Off a gated member its group still counts, a user's removal is refused; once
    # finalizer_drops lets it go (the same rule the job controller drops it by), it is not.
    problems = pod_rules.update_problems(
        pod("a"), pod("a", finalizer=False), admitted=False, may_drop_finalizer=may_drop
    )
    assert [p.path for p in problems] == (["metadata.finalizers"] if refused else [])


def test_a_queued_pod_may_not_name_its_node() -> None:
    problems = pod_rules.create_problems(pod("a", node="n1"))
    assert [p.path for p in problems] == ["spec.nodeName"]


@pytest.mark.parametrize(
    "made", [pod("a", queue=None), pod("a", gated=False)], ids=["no queue", "not gated"]
)
def test_berths_label_on_a_pod_berth_did_not_queue_is_refused(made: dict[str, Any]) -> None:
    problems = pod_rules.create_problems(made)
    assert [p.path for p in problems] == [f"metadata.labels[{podgroup.MANAGED_LABEL}]"]


# The configuration and every member order ---------------------------------------------------


def test_the_pod_framework_makes_the_pod_group_integration() -> None:
    made = registry.make(configuration.Framework.POD)
    assert isinstance(made, pod_integration.PodGroupJob)
    assert (made.kind, made.api_version, made.plural) == ("Pod", "v1", "pods")


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
            st.booleans(),
            st.booleans(),
            st.booleans(),
            st.integers(0, 5),
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 5),
)
def test_pod_sets_count_exactly_the_groups_size_once_whole(
    states: list[tuple[str, bool, bool, bool, int]], size: int
) -> None:
    members = [
        pod(
            f"p{i}",
            total=size,
            phase=phase,
            gated=gated,
            finalizer=finalizer,
            deleted=deleted,
            node=None if gated else "n1",
            created=f"2026-11-26T10:00:0{minute}Z",
            gpus=1 + i % 2,
        )
        for i, (phase, gated, finalizer, deleted, minute) in enumerate(states)
    ]
    body = group(*members)
    counted = sum(s["count"] for s in podgroup.pod_sets(body))
    if podgroup.missing(body) == 0:
        assert counted == size
        assert len(podgroup.excess(body)) == len(podgroup.runnable(body)) - size
    else:
        assert counted == len(podgroup.runnable(body)) < size
    # Order does not depend on the order pods were listed in.
    assert podgroup.group_body("ml", "train", reversed(members)) == body
