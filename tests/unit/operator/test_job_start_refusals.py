"""A start refused by Berth's own Job webhook is tried again; one refused by anything else is not.

A replica serving the Job webhook may not have seen an admission yet (its watch reconnects
after an API server restart). The job controller asks again for a while before it counts the
start as refused for good (``StartFailed``), and so it does when the API server cannot reach
the webhook at all: a start that can never succeed must not hold the quota for ever. The
operator's tasks run against the API fake (``tests/parity.py``).
"""

from __future__ import annotations

import io
from typing import Any

import pytest

import parity
from berth.adapters.kube import errors
from berth.operator import jobcontroller
from berth.operator.webhooks import configurations
from berth.sim import documents

SCENARIO = """
apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: ml}
spec: {clusterQueue: cq}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  labels: {berth.dev/queue-name: lq}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: x
        resources: {requests: {nvidia.com/gpu: 2}}
"""


async def _run(
    refusal: str, times: int, status: int = 403
) -> tuple[list[parity.Decision], dict[str, Any], dict[str, Any]]:
    docs = documents.read_streams([("scenario", io.StringIO(SCENARIO))])
    driver = parity.Driver(docs)
    real = driver.fake.request
    left = {"n": times}

    async def refusing(method: str, path: str, **kw: Any) -> dict[str, Any]:
        if method == "PATCH" and path.endswith("/jobs/train") and left["n"] > 0:
            left["n"] -= 1
            if status >= 500:
                raise errors.TransientError(f"PATCH {path}: {status} {refusal}")
            raise errors.PermanentError(f"PATCH {path}: {status} {refusal}", status)
        return await real(method, path, **kw)

    driver.fake.request = refusing  # type: ignore[method-assign]
    saved = jobcontroller._STOP_SETTLE
    jobcontroller._STOP_SETTLE = 0.0
    try:
        decisions = await driver.run(until=60)
    finally:
        jobcontroller._STOP_SETTLE = saved
    [job] = driver.fake.objects("Job")
    [wl] = driver.fake.objects("Workload")
    return decisions, job, wl


@pytest.mark.parametrize(
    ("refusal", "started"),
    [
        (
            f'admission webhook "{configurations.JOB_WEBHOOK}" denied the request: spec.suspend',
            True,
        ),
        ('admission webhook "gatekeeper.example" denied the request: no GPUs on Fridays', False),
    ],
    ids=["our webhook, stale: tried again", "another webhook: refused for good"],
)
async def test_a_refused_start(refusal: str, started: bool) -> None:
    decisions, job, wl = await _run(refusal, times=2)
    assert [d.event for d in decisions][:1] == ["Admitted"]
    assert (job["spec"].get("suspend") is False) == started
    # Refused for good: the quota is given back and the Workload deactivated (StartFailed).
    assert wl["spec"].get("active", True) == started
    assert bool(wl.get("status", {}).get("admission")) == started


FOREVER = 10_000
"""More refusals than the bound lets through."""


@pytest.mark.parametrize(
    ("refusal", "status"),
    [
        (f'admission webhook "{configurations.JOB_WEBHOOK}" denied the request: spec.suspend', 403),
        (
            (
                f'Internal error occurred: failed calling webhook "{configurations.JOB_WEBHOOK}": '
                "the server responded with the status code 413"
            ),
            500,
        ),
    ],
    ids=["our webhook refuses for ever", "our webhook cannot be reached"],
)
async def test_a_start_our_webhook_keeps_refusing_gives_the_quota_back(
    refusal: str, status: int
) -> None:
    decisions, job, wl = await _run(refusal, times=FOREVER, status=status)
    assert [d.event for d in decisions][:1] == ["Admitted"]
    assert job["spec"].get("suspend") is True
    assert wl["spec"].get("active") is False
    assert not wl.get("status", {}).get("admission")
    reserved = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["reason"] == jobcontroller.START_FAILED
    assert configurations.JOB_WEBHOOK in reserved["message"]


async def test_a_start_that_fails_for_another_reason_is_tried_again_until_it_passes() -> None:
    """A 500 that is not our webhook's (the API server restarting) never deactivates the job."""
    _decisions, job, wl = await _run("etcdserver: request timed out", times=45, status=500)
    assert job["spec"].get("suspend") is False
    assert wl["spec"].get("active", True) is True
