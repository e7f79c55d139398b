"""``api.bodies`` and ``api.job_view``: reading any JSON object's metadata never fails.

Objects come from the API server, admission reviews and hand-written scenario files, so any
field may be missing or of the wrong type; every reader returns the field or its empty value.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api import bodies, job_view, names

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "train",
        "namespace": "team",
        "uid": "u-1",
        "resourceVersion": "42",
        "labels": {"berth.dev/queue-name": "lq"},
        "annotations": {"note": "x"},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "c"},
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "js",
                "uid": "p",
                "controller": True,
            },
        ],
        "deletionTimestamp": "2026-12-02T10:00:00Z",
    },
}


def test_a_job_is_read_field_by_field() -> None:
    assert (bodies.name(JOB), bodies.namespace(JOB), bodies.uid(JOB)) == ("train", "team", "u-1")
    assert bodies.namespaced_name(JOB) == "team/train"
    assert bodies.resource_version(JOB) == "42"
    assert bodies.labels_of(JOB) == {"berth.dev/queue-name": "lq"}
    assert bodies.annotations_of(JOB) == {"note": "x"}
    assert [r.get("kind") for r in bodies.owner_references(JOB)] == ["ConfigMap", "JobSet"]
    controller = bodies.controller(JOB)
    assert controller is not None
    assert controller.get("uid") == "p"
    assert bodies.deleting(JOB)
    assert (bodies.kind(JOB), bodies.api_version(JOB)) == ("Job", "batch/v1")


def test_labels_are_a_copy() -> None:
    bodies.labels_of(JOB)["berth.dev/queue-name"] = "other"
    assert JOB["metadata"]["labels"]["berth.dev/queue-name"] == "lq"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"metadata": None},
        {"metadata": "a string"},
        {"metadata": {"name": 3, "labels": ["not", "a", "map"], "ownerReferences": {"x": 1}}},
        {"metadata": {"ownerReferences": ["junk", {"controller": "true", "uid": "s"}]}},
    ],
    ids=["empty", "null metadata", "string metadata", "wrong types", "junk references"],
)
def test_malformed_metadata_reads_as_empty(body: dict[str, Any]) -> None:
    assert (bodies.name(body), bodies.namespace(body, "default"), bodies.uid(body)) == (
        "",
        "default",
        "",
    )
    assert bodies.labels_of(body) == {}
    # Only a real boolean makes a controller, as the API server stores it.
    assert bodies.controller(body) is None
    assert not bodies.deleting(body)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=20,
)


# No deadline: the first examples pay for warming up the strategies, not for the readers.
@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(["metadata", "kind", "apiVersion", "spec"]), JSON))
def test_the_readers_never_raise(body: dict[str, Any]) -> None:
    view = job_view.JobView(body)
    assert isinstance(view.key, names.JobKey)
    assert isinstance(view.labels, dict)
    assert isinstance(view.annotations, dict)
    assert isinstance(bodies.owner_references(body), list)
    assert view.controller is None or view.controller.get("controller") is True
    assert isinstance(view.deleting, bool)


def test_a_job_view_names_the_job_by_its_integrated_kind() -> None:
    view = job_view.JobView(JOB, "Job")
    assert view.key == names.JobKey("Job", "team", "train")
    assert view.uid == "u-1"
    assert job_view.JobView(JOB).kind == "Job"
