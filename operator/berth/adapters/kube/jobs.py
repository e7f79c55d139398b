"""Job writes: the merge patches that suspend, start and restore a ``batch/v1`` Job.

The patches themselves are computed by ``berth.core.batchjob``; this module only sends them.
Called by the operator's job controller.
"""

from __future__ import annotations

from typing import Any

from berth.adapters.kube import client


def path(namespace: str, name: str | None = None) -> str:
    """The API path of the Jobs of a namespace, or of one Job."""
    out = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    return out if name is None else f"{out}/{name}"


async def patch(
    kube: client.Kube, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch a Job's spec or metadata."""
    return await kube.request(
        "PATCH", path(namespace, name), body=body, content_type=client.MERGE_PATCH
    )


async def suspend(kube: client.Kube, namespace: str, name: str) -> dict[str, Any]:
    """Suspend a Job: the Job controller deletes its pods."""
    return await patch(kube, namespace, name, {"spec": {"suspend": True}})


async def clear_start_time(kube: client.Kube, namespace: str, name: str) -> dict[str, Any]:
    """Clear ``status.startTime`` so the suspended Job's template may change again."""
    return await kube.request(
        "PATCH",
        path(namespace, name) + "/status",
        body={"status": {"startTime": None}},
        content_type=client.MERGE_PATCH,
    )
