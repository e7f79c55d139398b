"""Job writes, for every integrated kind: merge patches of a job's spec and of its status.

The patches themselves are computed by the job's integration (``berth.core.integrations``); this
module only sends them to the job's resource path. Called by the operator's job controller.
"""

from __future__ import annotations

from typing import Any, Protocol

from berth.adapters.kube import client


class Resource(Protocol):
    """Where a kind of job lives in the API."""

    @property
    def api_version(self) -> str:
        """``group/version`` (``batch/v1``)."""

    @property
    def plural(self) -> str:
        """The resource name (``jobs``)."""


def path(resource: Resource, namespace: str, name: str | None = None) -> str:
    """The API path of a namespace's jobs of one kind, or of one job."""
    out = f"/apis/{resource.api_version}/namespaces/{namespace}/{resource.plural}"
    return out if name is None else f"{out}/{name}"


async def patch(
    kube: client.Kube, resource: Resource, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch a job's spec or metadata."""
    return await kube.request(
        "PATCH", path(resource, namespace, name), body=body, content_type=client.MERGE_PATCH
    )


async def patch_status(
    kube: client.Kube, resource: Resource, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch a job's status (a Job's ``startTime``, cleared before its template changes)."""
    return await kube.request(
        "PATCH",
        path(resource, namespace, name) + "/status",
        body=body,
        content_type=client.MERGE_PATCH,
    )
