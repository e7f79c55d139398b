"""Job reads and writes, for every integrated kind: one job read fresh, and merge patches.

The patches themselves are computed by the job's integration (``berth.jobs.registry``); this
module only sends them to the job's resource path. Called by the operator's job controller, and
by the job webhooks (``get``: a child's parent as stored now, when the watch may lag).
"""

from __future__ import annotations

from typing import Any, Protocol

from berth.adapters.kube import client, errors


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
    root = "/api" if "/" not in resource.api_version else "/apis"  # the core group: v1 pods
    out = f"{root}/{resource.api_version}/namespaces/{namespace}/{resource.plural}"
    return out if name is None else f"{out}/{name}"


async def get(
    kube: client.KubeRequests, resource: Resource, namespace: str, name: str
) -> dict[str, Any] | None:
    """A job as stored now (None: there is none of that name)."""
    try:
        return await kube.request("GET", path(resource, namespace, name))
    except errors.NotFoundError:
        return None


async def patch(
    kube: client.KubeRequests, resource: Resource, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch a job's spec or metadata."""
    return await kube.request(
        "PATCH", path(resource, namespace, name), body=body, content_type=client.MERGE_PATCH
    )


async def patch_strategic(
    kube: client.KubeRequests, resource: Resource, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Strategic-merge-patch a built-in object (a pod group's member: its gate, its finalizer)."""
    return await kube.request(
        "PATCH", path(resource, namespace, name), body=body, content_type=client.STRATEGIC_PATCH
    )


async def delete(kube: client.KubeRequests, resource: Resource, namespace: str, name: str) -> None:
    """Delete one object of a job (a pod group's member); one already gone is no error."""
    try:
        await kube.request("DELETE", path(resource, namespace, name))
    except errors.NotFoundError:
        return


async def patch_status(
    kube: client.KubeRequests, resource: Resource, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch a job's status (a Job's ``startTime``, cleared before its template changes)."""
    return await kube.request(
        "PATCH",
        path(resource, namespace, name) + "/status",
        body=body,
        content_type=client.MERGE_PATCH,
    )
