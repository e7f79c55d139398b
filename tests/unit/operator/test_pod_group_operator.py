"""The operator's side of pod groups: the World assembles groups, the Pod webhooks guard them.

Pod events build each group as one job (``World._pod``), keyed ``Pod/<namespace>/<group>``; the
group's Workload is found through its ``berth.dev/job-uid`` label (its pods own it, none as its
controller). The Pod webhooks make a queued Pod a member and let Berth's gate come off only while
the group is admitted; their hooks exist only with the ``pod`` framework on.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import pytest

from berth.api import configuration, names
from berth.api.labels import JOB_UID_LABEL, QUEUE_LABEL
from berth.jobs.pod import group as podgroup
from berth.operator import world as world_mod
from berth.operator.webhooks import configurations, pod_admission

ON = configuration.Configuration(
    integrations=configuration.Integrations(frameworks=[configuration.Framework.POD])
)
OFF = configuration.Configuration()


def member(
    name: str, *, rv: int = 1, gated: bool = True, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if gated:
        spec["schedulingGates"] = [{"name": podgroup.GATE}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "resourceVersion": str(rv),
            "labels": {
                QUEUE_LABEL: "lq",
                podgroup.MANAGED_LABEL: "true",
                podgroup.GROUP_LABEL: "train",
                **(labels or {}),
            },
            "annotations": {podgroup.TOTAL_ANNOTATION: "2"},
        },
        "spec": spec,
    }


def group_workload(*, admitted: bool) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True"}]
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        conditions.append({"type": "Admitted", "status": "True"})
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "wl-uid",
            "resourceVersion": "9",
            "labels": {
                podgroup.WORKLOAD_LABEL: "train",
                JOB_UID_LABEL: podgroup.group_uid("ml", "train"),
            },
        },
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {}}]},
        "status": status,
    }


KEY = names.JobKey("Pod", "ml", "train")


def test_the_world_assembles_a_group_from_its_members_and_forgets_it_with_the_last() -> None:
    world = world_mod.World(ON, lambda: 0.0)
    world.apply("Pod", member("a"))
    assert [p["metadata"]["name"] for p in podgroup.pods(world.jobs[KEY])] == ["a"]
    world.apply("Pod", member("b"))
    group = world.jobs[KEY]
    assert [p["metadata"]["name"] for p in podgroup.pods(group)] == ["a", "b"]
    assert group["metadata"]["uid"] == podgroup.group_uid("ml", "train")
    world.apply("Workload", group_workload(admitted=False))
    assert world.workload_for_job(group) == names.WorkloadKey("ml", "train")
    world.remove("Pod", member("a", rv=2))
    world.remove("Pod", member("b", rv=2))
    assert KEY not in world.jobs


def test_without_the_pod_framework_pods_make_no_group() -> None:
    world = world_mod.World(OFF, lambda: 0.0)
    world.apply("Pod", member("a"))
    assert KEY not in world.jobs


def _review(operation: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Any:
    request: dict[str, Any] = {
        "uid": "r",
        "operation": operation,
        "kind": {"kind": "Pod"},
        "object": obj,
    }
    if old is not None:
        request["oldObject"] = old
    return request


def _fresh_pod(**meta: Any) -> dict[str, Any]:
    """A Pod as a user sends it: a queue label, no Berth label, gate or finalizer."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ml",
            "labels": {QUEUE_LABEL: "lq"},
            **meta,
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


@pytest.mark.parametrize(
    ("config", "pod", "patched"),
    [
        (ON, _fresh_pod(), True),
        (OFF, _fresh_pod(), False),
        (
            ON,
            _fresh_pod(
                ownerReferences=[{"kind": "Job", "name": "j", "uid": "u", "controller": True}]
            ),
            False,
        ),
        (ON, {**_fresh_pod(), "metadata": {"name": "p", "namespace": "ml"}}, False),
    ],
    ids=["queued", "framework off", "a Job's pod", "no queue"],
)
def test_the_pod_webhook_makes_a_queued_pod_that_no_controller_owns_a_gated_member(
    config: configuration.Configuration, pod: dict[str, Any], patched: bool
) -> None:
    world = world_mod.World(config, lambda: 0.0)
    world.cache.upsert_namespace("ml", {})
    answer = pod_admission.mutate_pod(world, _review("CREATE", pod))
    assert answer["allowed"]
    assert ("patch" in answer) is patched
    if patched:
        ops = json.loads(base64.b64decode(answer["patch"]))
        assert {
            "op": "add",
            "path": "/spec/schedulingGates",
            "value": [{"name": podgroup.GATE}],
        } in ops


@pytest.mark.parametrize(("admitted", "allowed"), [(False, False), (True, True)])
def test_the_gate_comes_off_only_while_the_group_is_admitted(admitted: bool, allowed: bool) -> None:
    world = world_mod.World(ON, lambda: 0.0)
    world.apply("Pod", member("a"))
    world.apply("Pod", member("b"))
    world.apply("Workload", group_workload(admitted=admitted))
    answer = pod_admission.validate_pod(
        world, _review("UPDATE", member("a", gated=False), member("a"))
    )
    assert answer["allowed"] is allowed
    if not allowed:
        assert "spec.schedulingGates" in answer["status"]["message"]


def test_a_member_that_moves_queue_is_refused_and_an_unmanaged_pod_is_not_looked_at() -> None:
    world = world_mod.World(ON, lambda: 0.0)
    moved = member("a", labels={QUEUE_LABEL: "other"})
    answer = pod_admission.validate_pod(world, _review("UPDATE", moved, member("a")))
    assert not answer["allowed"]
    assert QUEUE_LABEL in answer["status"]["message"]
    stranger = _fresh_pod()
    assert pod_admission.validate_pod(world, _review("UPDATE", stranger, stranger))["allowed"]


def test_the_pod_hooks_exist_only_with_the_pod_framework_and_never_as_job_hooks() -> None:
    def hooks(config: configuration.Configuration) -> dict[str, dict[str, Any]]:
        world = world_mod.World(config, lambda: 0.0)
        made = configurations.build(
            configurations.Url("https://x", "ca"), world.config, world.integrations
        )
        return {h["name"]: h for c in made for h in c["webhooks"]}

    on, off = hooks(ON), hooks(OFF)
    assert {"mpod.berth.dev", "vpod.berth.dev"} <= set(on)
    assert not {"mpod.berth.dev", "vpod.berth.dev"} & set(off)
    job_resources = {r for rule in on["mjob.berth.dev"]["rules"] for r in rule["resources"]}
    assert "pods" not in job_resources
    assert on["mpod.berth.dev"]["objectSelector"]["matchExpressions"][0]["key"] == (QUEUE_LABEL)
    assert on["vpod.berth.dev"]["objectSelector"]["matchExpressions"][0]["key"] == (
        podgroup.MANAGED_LABEL
    )
