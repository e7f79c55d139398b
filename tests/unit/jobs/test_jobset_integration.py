"""The pure half of the JobSet integration, after Kueue's ``jobs/jobset/jobset_controller.go``.

Pod sets (one per replicated job, count replicas x pods per child Job), the start and restore
patches (each role's template on its own flavors, the whole replicatedJobs list as JSON merge
patch needs it), reading its status, and how its child Jobs are told apart from jobs of their
own (``jobs.rules.job_sync.parent``, ``jobs.rules.managed``).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import builders
from berth.api import configuration
from berth.api.labels import POD_SET_LABEL
from berth.jobs import jobset, registry
from berth.jobs.framework import podsets, protocol, workload_body
from berth.jobs.rules import job_sync, managed

JOBSET = jobset.JobSetJob()
ENABLED = registry.for_configuration(
    configuration.Configuration(
        integrations=configuration.Integrations(
            frameworks=[configuration.Framework.BATCH_JOB, configuration.Framework.JOBSET]
        )
    )
)
H100_TOLERATION = {"key": "berth.dev/flavor", "operator": "Equal", "value": "h100"}


def trainer() -> builders.JobSetBuilder:
    """A driver of 1 pod and 2 workers of 4 pods (8 GPUs each way), queued in ``lq``."""
    return (
        builders.JobSetBuilder("train", "team")
        .queue("lq")
        .suspend()
        .replicated_job("driver", requests={"cpu": "1"}, node_selector={"team": "a"})
        .replicated_job("workers", replicas=2, parallelism=4, requests={"nvidia.com/gpu": "1"})
    )


@dataclasses.dataclass(frozen=True)
class PodSetCase:
    id: str
    jobset: dict[str, Any]
    want: list[tuple[str, int]]
    """(name, count) of each pod set, in order; empty when the JobSet is refused."""
    want_errors: list[str] = dataclasses.field(default_factory=list)
    """Paths of the field errors."""


POD_SET_CASES = [
    PodSetCase("one-pod-set-per-replicated-job", trainer().obj(), [("driver", 1), ("workers", 8)]),
    PodSetCase(
        "completions-bound-each-child-jobs-pods",
        builders.JobSetBuilder("js")
        .replicated_job("r", replicas=3, parallelism=4, completions=2)
        .obj(),
        [("r", 6)],
    ),
    PodSetCase(
        "replicas-default-to-one",
        builders.JobSetBuilder("js")
        .replicated_job("r", parallelism=2)
        .remove("spec.replicatedJobs[0].replicas")
        .obj(),
        [("r", 2)],
    ),
    PodSetCase(
        "no-replicated-jobs-is-an-error",
        builders.JobSetBuilder("js").obj(),
        [],
        ["spec.replicatedJobs"],
    ),
    PodSetCase(
        "a-bad-size-names-its-replicated-job",
        builders.JobSetBuilder("js")
        .replicated_job("a")
        .replicated_job("b")
        .set("spec.replicatedJobs[1].replicas", -1)
        .set("spec.replicatedJobs[1].template.spec.parallelism", "two")
        .obj(),
        [],
        ["spec.replicatedJobs[1].replicas", "spec.replicatedJobs[1].template.spec.parallelism"],
    ),
    PodSetCase(
        "a-missing-pod-template-names-its-replicated-job",
        builders.JobSetBuilder("js")
        .replicated_job("a")
        .remove("spec.replicatedJobs[0].template.spec.template")
        .obj(),
        [],
        ["spec.replicatedJobs[0].template.spec.template"],
    ),
    PodSetCase(
        "a-job-template-that-is-no-mapping-is-a-field-error",
        builders.JobSetBuilder("js")
        .replicated_job("a")
        .set("spec.replicatedJobs[0].template", "z")
        .obj(),
        [],
        ["spec.replicatedJobs[0].template.spec.template"],
    ),
]


@pytest.mark.parametrize("case", POD_SET_CASES, ids=lambda c: c.id)
def test_pod_sets_follow_kueues_jobset_integration(case: PodSetCase) -> None:
    obj, problems = JOBSET.to_workload(case.jobset, uid="uid-1")
    assert [p.path for p in problems] == case.want_errors
    got = [] if obj is None else [(ps.name, ps.count) for ps in obj.spec.pod_sets]
    assert got == case.want


def test_the_workload_is_named_and_queued_as_kueue_names_it() -> None:
    obj, _ = JOBSET.to_workload(trainer().obj(), uid="uid-1")
    assert obj is not None
    # jobframework.GetWorkloadNameForOwnerWithGVK: lower-cased kind, name, SHA-1 of kind, group,
    # name and uid.
    assert obj.metadata.name == "jobset-train-74644"
    assert obj.spec.queue_name == "lq"
    assert JOBSET.pod_count(trainer().obj()) == 9


def _template(js: dict[str, Any], index: int) -> dict[str, Any]:
    found: dict[str, Any] = js["spec"]["replicatedJobs"][index]["template"]["spec"]["template"]
    return found


def _originals(js: dict[str, Any]) -> list[protocol.PodSetOriginal]:
    obj, _ = JOBSET.to_workload(js, uid="uid-1")
    assert obj is not None
    return workload_body.originals(obj.to_yaml_dict()["spec"]["podSets"])


def _merged(js: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The JobSet after a merge patch of ``spec`` (replicatedJobs replaced whole)."""
    out = copy.deepcopy(js)
    out["spec"].update(patch.get("spec") or {})
    return out


def test_start_puts_each_role_on_its_own_flavor_and_unsuspends() -> None:
    js = trainer().obj()
    runs = [
        protocol.PodSetRun("driver", 1, (podsets.FlavorPlacement({"pool": "cpu"}),)),
        protocol.PodSetRun(
            "workers", 8, (podsets.FlavorPlacement({"gpu": "h100"}, (H100_TOLERATION,)),)
        ),
    ]
    patch = JOBSET.start_patch(js, _originals(js), runs)
    started = _merged(js, patch)
    assert started["spec"]["suspend"] is False
    driver, workers = _template(started, 0), _template(started, 1)
    assert driver["spec"]["nodeSelector"] == {"team": "a", "pool": "cpu"}
    assert "tolerations" not in driver["spec"]
    assert workers["spec"]["nodeSelector"] == {"gpu": "h100"}
    assert workers["spec"]["tolerations"] == [H100_TOLERATION]
    assert driver["metadata"]["labels"] == {POD_SET_LABEL: "driver"}
    assert workers["metadata"]["labels"] == {POD_SET_LABEL: "workers"}
    # Nothing but those fields changes: JobSet's webhook refuses any other change.
    for before, after in zip(
        js["spec"]["replicatedJobs"], started["spec"]["replicatedJobs"], strict=True
    ):
        for key in ("name", "replicas"):
            assert before[key] == after[key]
        job_before, job_after = before["template"]["spec"], after["template"]["spec"]
        assert {k: v for k, v in job_before.items() if k != "template"} == {
            k: v for k, v in job_after.items() if k != "template"
        }
        assert (
            job_before["template"]["spec"]["containers"]
            == (job_after["template"]["spec"]["containers"])
        )


def test_restore_gives_back_every_recorded_template() -> None:
    js = trainer().obj()
    originals = _originals(js)
    runs = [
        protocol.PodSetRun("driver", 1, (podsets.FlavorPlacement({"pool": "cpu"}),)),
        protocol.PodSetRun(
            "workers", 8, (podsets.FlavorPlacement({"gpu": "h100"}, (H100_TOLERATION,)),)
        ),
    ]
    started = _merged(js, JOBSET.start_patch(js, originals, runs))
    started["spec"]["suspend"] = True
    restored = _merged(started, JOBSET.restore_patch(started, originals) or {})
    assert restored["spec"]["replicatedJobs"] == js["spec"]["replicatedJobs"]
    assert JOBSET.restore_patch(restored, originals) is None


@dataclasses.dataclass(frozen=True)
class StatusCase:
    id: str
    status: dict[str, Any]
    want_finished: tuple[bool, bool]
    want_ready: bool
    want_active: int


STATUS_CASES = [
    StatusCase("new", {}, (False, False), False, 0),
    StatusCase(
        "every-child-job-ready",
        {
            "replicatedJobsStatus": [
                {"name": "driver", "ready": 1, "active": 1},
                {"name": "workers", "ready": 2, "active": 2},
            ]
        },
        (False, False),
        True,
        3,
    ),
    StatusCase(
        "one-worker-not-ready",
        {
            "replicatedJobsStatus": [
                {"name": "driver", "ready": 1, "active": 1},
                {"name": "workers", "ready": 1, "active": 2},
            ]
        },
        (False, False),
        False,
        3,
    ),
    StatusCase(
        "succeeded-counts-as-ready",
        {
            "replicatedJobsStatus": [
                {"name": "driver", "succeeded": 1},
                {"name": "workers", "ready": 2, "active": 2},
            ]
        },
        (False, False),
        True,
        2,
    ),
    StatusCase(
        "completed",
        {"conditions": [{"type": "Completed", "status": "True"}]},
        (True, True),
        False,
        0,
    ),
    StatusCase(
        "failed", {"conditions": [{"type": "Failed", "status": "True"}]}, (True, False), False, 0
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES, ids=lambda c: c.id)
def test_jobset_status(case: StatusCase) -> None:
    js = trainer().set("status", case.status).obj()
    assert JOBSET.finished(js) == case.want_finished
    assert JOBSET.pods_ready(js, 9) == case.want_ready
    assert JOBSET.active_pods(js) == case.want_active


def child_job(
    owner_kind: str = "JobSet", api_version: str = "jobset.x-k8s.io/v1alpha2"
) -> dict[str, Any]:
    """A child Job the JobSet controller made, labelled with the queue as its template was."""
    return (
        builders.JobBuilder("train-workers-0", "team")
        .queue("lq")
        .label(jobset.NAME_LABEL, "train")
        .set(
            "metadata.ownerReferences",
            [
                {
                    "apiVersion": api_version,
                    "kind": owner_kind,
                    "name": "train",
                    "uid": "js-uid",
                    "controller": True,
                }
            ],
        )
        .obj()
    )


@dataclasses.dataclass(frozen=True)
class ChildCase:
    id: str
    job: dict[str, Any]
    enabled: list[configuration.Framework]
    want_parent: str | None
    want_foreign: str | None
    want_why: managed.Why


BOTH = [configuration.Framework.BATCH_JOB, configuration.Framework.JOBSET]
CHILD_CASES = [
    ChildCase(
        "a-jobsets-child-is-part-of-it",
        child_job(),
        BOTH,
        "JobSet/train",
        None,
        managed.Why.PART_OF_PARENT,
    ),
    ChildCase(
        "without-the-integration-it-is-held-as-a-foreign-owners",
        child_job(),
        [configuration.Framework.BATCH_JOB],
        None,
        "JobSet/train",
        managed.Why.NAMES_A_QUEUE,
    ),
    ChildCase(
        "another-group-named-jobset-is-foreign",
        child_job(api_version="example.com/v1"),
        BOTH,
        None,
        "JobSet/train",
        managed.Why.NAMES_A_QUEUE,
    ),
    ChildCase(
        "a-cronjobs-job-is-a-job-of-its-own",
        child_job("CronJob", "batch/v1"),
        BOTH,
        None,
        None,
        managed.Why.NAMES_A_QUEUE,
    ),
]


@pytest.mark.parametrize("case", CHILD_CASES, ids=lambda c: c.id)
def test_child_jobs_belong_to_an_integrated_parent(case: ChildCase) -> None:
    config = configuration.Configuration(
        integrations=configuration.Integrations(frameworks=case.enabled)
    )
    enabled = registry.for_configuration(config)
    parent = job_sync.parent(case.job, enabled)
    assert (None if parent is None else f"{parent.kind}/{parent.name}") == case.want_parent
    assert job_sync.foreign_owner(case.job, enabled) == case.want_foreign
    assert managed.decide(case.job, {}, config).why == case.want_why


def test_frameworks_are_kueues_names_and_batch_job_is_always_on() -> None:
    assert set(ENABLED) == {"Job", "JobSet"}
    assert set(registry.for_configuration(configuration.Configuration())) == {"Job"}
    with pytest.raises(ValueError, match=r"integrations\.frameworks"):
        configuration.Configuration.model_validate(
            {"integrations": {"frameworks": ["kubeflow.org/mpijob"]}}
        )
