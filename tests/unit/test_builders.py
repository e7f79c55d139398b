from __future__ import annotations

import datetime as dt

import pytest

import builders
from berth.api import errors


def test_raw_returns_a_copy_the_builder_does_not_share() -> None:
    builder = builders.ClusterQueueBuilder("team-a").cohort("research")
    raw = builder.raw()
    raw["spec"]["cohortName"] = "changed"
    assert builder.raw()["spec"]["cohortName"] == "research"


def test_obj_refuses_an_invalid_document_with_every_error() -> None:
    builder = builders.ClusterQueueBuilder("Bad_Name").flavor_quotas("a100", {"cpu": (4, 2)})
    with pytest.raises(errors.ApiError) as caught:
        builder.obj()
    assert [e.path for e in caught.value.errors] == [
        "metadata.name",
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
    ]


def test_quota_tuples_set_nominal_borrowing_and_lending_limits() -> None:
    cq = (
        builders.ClusterQueueBuilder("team-a")
        .cohort("research")
        .flavor_quotas("a100", {"nvidia.com/gpu": (8, 4, 2), "cpu": "500m"})
        .obj()
    )
    gpu, cpu = cq.spec.resource_groups[0].flavors[0].resources
    assert (gpu.nominal_quota, gpu.borrowing_limit, gpu.lending_limit) == (8, 4, 2)
    assert (cpu.nominal_quota, cpu.borrowing_limit, cpu.lending_limit) == (500, None, None)
    assert cq.spec.resource_groups[0].covered_resources == ["nvidia.com/gpu", "cpu"]


def test_cluster_queues_accept_every_namespace_unless_told_not_to() -> None:
    assert builders.ClusterQueueBuilder("a").obj().spec.namespace_selector is not None
    assert (
        builders.ClusterQueueBuilder("a").no_namespace_selector().obj().spec.namespace_selector
        is None
    )


def test_workload_builder_sets_pod_sets_priority_and_creation_time() -> None:
    wl = (
        builders.WorkloadBuilder("train", "ml")
        .queue("q")
        .pod_set("workers", 4, requests={"nvidia.com/gpu": 1}, min_count=2)
        .priority_class("high", 1000)
        .created_at(dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
        .obj()
    )
    assert str(wl.key) == "ml/train"
    assert wl.metadata.creation_timestamp == "2026-01-02T03:04:05Z"
    assert wl.spec.priority == 1000
    assert wl.spec.priority_class_ref is not None
    assert wl.spec.priority_class_ref.name == "high"
    (ps,) = wl.spec.pod_sets
    assert (ps.name, ps.count, ps.min_count) == ("workers", 4, 2)
    assert ps.template.spec.pod_requests() == {"nvidia.com/gpu": 1}


def test_job_builder_uses_berth_labels_and_annotations() -> None:
    job = (
        builders.JobBuilder("train", "ml")
        .queue("q")
        .priority_class("high")
        .min_parallelism(2)
        .parallelism(4)
        .sim(at="5s", duration="1m")
        .raw()
    )
    assert job["metadata"]["labels"] == {
        "berth.dev/queue-name": "q",
        "berth.dev/priority-class": "high",
    }
    assert job["metadata"]["annotations"] == {
        "berth.dev/job-min-parallelism": "2",
        "sim.berth.dev/at": "5s",
        "sim.berth.dev/duration": "1m",
    }
    assert job["spec"]["parallelism"] == 4


def test_configuration_builder_can_turn_pods_ready_off() -> None:
    cfg = builders.ConfigurationBuilder().fair_sharing().no_wait_for_pods_ready().obj()
    assert cfg.wait_for_pods_ready is None
    assert cfg.to_yaml_dict()["waitForPodsReady"] is None
    assert cfg.fair_sharing is not None
