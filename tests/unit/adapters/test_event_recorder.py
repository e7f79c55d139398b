"""The operator's Event recorder: never waits, drops what its bounded queue cannot hold."""

from __future__ import annotations

from typing import Any

from prometheus_client import parser

from berth.adapters import metrics
from berth.adapters.kube import events


def _workload(name: str) -> dict[str, object]:
    return {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
    }


class _Unreached:
    """An API session no request reaches: no sender runs."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        del body, content_type, query
        raise AssertionError(f"{method} {path} was sent")


async def test_a_full_queue_drops_events_and_counts_them_in_the_metric() -> None:
    sink = metrics.Metrics()
    # No sender runs: nothing leaves the queue, so the API session is never used.
    recorder = events.Recorder(_Unreached(), capacity=2, on_drop=sink.report_event_dropped)
    for i in range(5):
        recorder.record(_workload(f"w{i}"), "QuotaReserved", "Quota reserved", 0.0)
    assert (recorder.queued, recorder.dropped) == (2, 3)
    values = {
        s.name: s.value
        for family in parser.text_string_to_metric_families(sink.exposition())
        for s in family.samples
    }
    assert values["berth_events_dropped_total"] == 3


def test_an_event_body_names_its_object_and_reason() -> None:
    body = events.event_body(_workload("w0"), "Preempted", "by ns/hi", 1_700_000_000.0)
    assert body["involvedObject"] == {
        "apiVersion": "berth.dev/v1beta1",
        "kind": "Workload",
        "name": "w0",
        "namespace": "ns",
        "uid": "uid-w0",
    }
    assert (body["reason"], body["message"], body["type"]) == ("Preempted", "by ns/hi", "Normal")
    assert body["metadata"]["namespace"] == "ns"
    assert body["firstTimestamp"] == "2023-11-14T22:13:20Z"
