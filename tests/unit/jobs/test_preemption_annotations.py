"""A job's ``berth.dev/checkpointed-at`` reaches its Workload; a priority boost on a job is refused.

The boost is KEP-7990's: Kueue reads ``kueue.x-k8s.io/priority-boost`` from Workloads only, so
that batch users, who may edit their jobs but not Workloads, cannot raise their own priority.
Berth refuses it on a job of every kind, naming the annotation, rather than dropping it silently.
"""

from __future__ import annotations

from typing import Any

import pytest

import builders
from berth.api import workload
from berth.jobs import batchjob, jobset


def _job(annotations: dict[str, str]) -> dict[str, Any]:
    return builders.JobBuilder("train", "ml").queue("lq").annotations(annotations).raw()


def _jobset(annotations: dict[str, str]) -> dict[str, Any]:
    job = _job({})
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {**job["metadata"], "annotations": annotations},
        "spec": {
            "replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": job["spec"]}}]
        },
    }


def test_the_checkpoint_time_is_copied_to_the_workload() -> None:
    when = "2026-12-02T10:00:00Z"
    wl, problems = batchjob.to_workload(_job({workload.CHECKPOINTED_AT_ANNOTATION: when}), uid="u")
    assert problems == []
    assert wl is not None
    assert wl.metadata.annotations[workload.CHECKPOINTED_AT_ANNOTATION] == when


@pytest.mark.parametrize(
    "annotation", [workload.PRIORITY_BOOST_ANNOTATION, workload.KUEUE_PRIORITY_BOOST_ANNOTATION]
)
@pytest.mark.parametrize("make", [_job, _jobset], ids=["Job", "JobSet"])
def test_a_priority_boost_on_a_job_is_refused_naming_it(annotation: str, make: Any) -> None:
    integration = batchjob if make is _job else jobset
    wl, problems = integration.to_workload(make({annotation: "1000"}), uid="u")
    assert wl is None
    assert [p.path for p in problems] == [f"metadata.annotations[{annotation}]"]
    assert "set on the job's Workload" in problems[0].message


def test_a_bad_checkpoint_time_on_a_job_is_refused_naming_it() -> None:
    wl, problems = batchjob.to_workload(
        _job({workload.CHECKPOINTED_AT_ANNOTATION: "10:00"}), uid="u"
    )
    assert wl is None
    assert [p.path for p in problems] == [
        f"metadata.annotations[{workload.CHECKPOINTED_AT_ANNOTATION}]"
    ]
