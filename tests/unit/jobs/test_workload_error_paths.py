"""A Workload that does not load is refused with paths in the job's own terms, for every kind.

``workload_body.build_workload`` maps ``spec.podSets[i].template...`` to where role ``i``'s template
lives in the job (a Job's ``spec.template``, a JobSet's replicated job, a training job's replica
type, a Ray cluster's head or worker group), so the user is told which field of what they wrote.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

import builders
from berth.api import configuration
from berth.jobs import registry

BAD_CONTAINERS = "not a list"


def _bad(template: dict[str, Any]) -> None:
    template["spec"]["containers"] = BAD_CONTAINERS


def _job() -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "labels": {"berth.dev/queue-name": "lq"}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }
    _bad(job["spec"]["template"])
    return job


def _jobset() -> dict[str, Any]:
    js = (
        builders.JobSetBuilder("train", "ml")
        .queue("lq")
        .replicated_job("driver")
        .replicated_job("workers", replicas=2)
        .obj()
    )
    _bad(js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"])
    return js


def _pytorchjob() -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "labels": {"berth.dev/queue-name": "lq"}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 2, "template": copy.deepcopy(template)},
                "Master": {"replicas": 1, "template": copy.deepcopy(template)},
            }
        },
    }
    _bad(job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"])
    return job


def _raycluster() -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "ray", "image": "x"}]}}
    job: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "dev", "namespace": "ml", "labels": {"berth.dev/queue-name": "lq"}},
        "spec": {
            "headGroupSpec": {"template": copy.deepcopy(template)},
            "workerGroupSpecs": [
                {"groupName": "gpu", "replicas": 2, "template": copy.deepcopy(template)}
            ],
        },
    }
    _bad(job["spec"]["workerGroupSpecs"][0]["template"])
    return job


@pytest.mark.parametrize(
    ("framework", "make", "want_prefix"),
    [
        pytest.param(
            configuration.Framework.BATCH_JOB, _job, "spec.template.spec.containers", id="job"
        ),
        pytest.param(
            configuration.Framework.JOBSET,
            _jobset,
            "spec.replicatedJobs[1].template.spec.template.spec.containers",
            id="jobset",
        ),
        pytest.param(
            configuration.Framework.PYTORCHJOB,
            _pytorchjob,
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers",
            id="pytorchjob-worker-after-master",
        ),
        pytest.param(
            configuration.Framework.RAYCLUSTER,
            _raycluster,
            "spec.workerGroupSpecs[0].template.spec.containers",
            id="raycluster-worker",
        ),
    ],
)
def test_a_bad_template_is_named_where_the_user_wrote_it(
    framework: configuration.Framework, make: Callable[[], dict[str, Any]], want_prefix: str
) -> None:
    obj, problems = registry.make(framework).to_workload(make(), uid="u")
    assert obj is None
    assert problems
    assert all(p.path.startswith(want_prefix) for p in problems), [p.path for p in problems]
