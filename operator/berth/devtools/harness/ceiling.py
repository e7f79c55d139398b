"""The API server's own ceiling on this machine: what one client gets through, bounded.

Run before the operator starts (no webhooks yet, nobody watching), on Workloads of a namespace of
their own that name no queue: how many creates per second one client gets accepted, then how many
Workload status merge-patches per second — the write the operator makes for every admission —
with one request in flight and with ``concurrency`` in flight. Each phase stops after ``count``
requests or ``seconds``, whichever comes first. The harness's figures are then reported as a ratio
to it. Used by ``berth bench harness``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from berth.api import base
from berth.devtools.harness import api as api_mod
from berth.devtools.harness import runner

NAMESPACE = "berth-bench-ceiling"


def _probe(name: str) -> dict[str, Any]:
    return {
        "apiVersion": base.API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ]
        },
    }


async def _phase(
    concurrency: int,
    count: int,
    seconds: float,
    send: Any,  # noqa: ANN401 - async callable
) -> float:
    """Requests per second of ``send(i)`` with ``concurrency`` in flight, bounded."""
    start = time.monotonic()
    deadline = start + seconds
    next_index = 0
    done = 0

    async def worker() -> None:
        nonlocal next_index, done
        while next_index < count and time.monotonic() < deadline:
            i = next_index
            next_index += 1
            await send(i)
            done += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.monotonic() - start
    return done / elapsed if elapsed else 0.0


async def measure(
    api: api_mod.Api,
    *,
    objects: int = 300,
    count: int = 4000,
    seconds: float = 8.0,
    concurrency: int = 32,
) -> dict[str, float]:
    """Creates per second, and status patches per second serial and concurrent."""
    await api.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        exist_ok=True,
    )
    collection = runner.workloads_path(NAMESPACE)
    creates = await _phase(
        concurrency,
        objects,
        seconds,
        lambda i: api.create(collection, _probe(f"probe-{i}"), exist_ok=True),
    )

    def patcher(tag: str) -> Any:  # noqa: ANN401 - an async callable
        async def send(i: int) -> None:
            body = {
                "status": {
                    "conditions": [
                        {
                            "type": "Probe",
                            "status": "True",
                            "reason": "Probe",
                            "message": f"{tag} {i}",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ]
                }
            }
            await api.request(
                "PATCH",
                runner.workloads_path(NAMESPACE, f"probe-{i % objects}") + "/status",
                body,
                content_type=api_mod.MERGE_PATCH,
            )

        return send

    serial = await _phase(1, count, seconds / 2, patcher("serial"))
    parallel = await _phase(concurrency, count, seconds, patcher("parallel"))
    with contextlib.suppress(api_mod.ApiError):
        await api.request("DELETE", collection)
    return {
        "createsPerSecond": round(creates, 1),
        "statusPatchesPerSecondSerial": round(serial, 1),
        "statusPatchesPerSecond": round(parallel, 1),
        "concurrency": concurrency,
    }
