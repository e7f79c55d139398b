"""A start refused by Berth's own Job webhook is tried again; one refused by anything else is not.

A replica serving the Job webhook may not have seen an admission yet (its watch reconnects
after an API server restart). The job controller asks again for a while before it counts the
start as refused for good (``StartFailed``). The operator's tasks run against the API fake
(``tests/parity.py``).
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

import parity
from berth.adapters.kube import errors
from berth.operator import jobcontroller, webhooks
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


def _run(refusal: str, times: int) -> tuple[list[parity.Decision], dict[str, Any], dict[str, Any]]:
    docs = documents.read_streams([("scenario", io.StringIO(SCENARIO))])
    driver = parity.Driver(docs)
    real = driver.fake.request
    left = {"n": times}

    async def refusing(method: str, path: str, **kw: Any) -> dict[str, Any]:
        if method == "PATCH" and path.endswith("/jobs/train") and left["n"] > 0:
            left["n"] -= 1
            raise errors.PermanentError(f"PATCH {path}: 403 {refusal}", 403)
        return await real(method, path, **kw)

    driver.fake.request = refusing  # type: ignore[method-assign]
    saved = jobcontroller._STOP_SETTLE
    jobcontroller._STOP_SETTLE = 0.0

    async def scenario() -> list[parity.Decision]:
        return await driver.run(until=60)

    try:
        decisions = asyncio.run(scenario())
    finally:
        jobcontroller._STOP_SETTLE = saved
    [job] = driver.fake.objects("Job")
    [wl] = driver.fake.objects("Workload")
    return decisions, job, wl


@pytest.mark.parametrize(
    ("refusal", "started"),
    [
        (f'admission webhook "{webhooks.JOB_WEBHOOK}" denied the request: spec.suspend', True),
        ('admission webhook "gatekeeper.example" denied the request: no GPUs on Fridays', False),
    ],
    ids=["our webhook, stale: tried again", "another webhook: refused for good"],
)
def test_a_refused_start(refusal: str, started: bool) -> None:
    decisions, job, wl = _run(refusal, times=2)
    assert [d.event for d in decisions][:1] == ["Admitted"]
    assert (job["spec"].get("suspend") is False) == started
    # Refused for good: the quota is given back and the Workload deactivated (StartFailed).
    assert wl["spec"].get("active", True) == started
    assert bool(wl.get("status", {}).get("admission")) == started
