"""Workload writes: create the Workload of a Job, and patch its status under optimistic concurrency.

Status patches carry the ``resourceVersion`` the decision was made from, so a write based on a
stale read fails with ``ConflictError`` instead of overwriting someone else's change. Conditions
are built here in Kueue's vocabulary (QuotaReserved, Admitted, Evicted, Preempted, Requeued,
PodsReady, Finished). Called by the operator's scheduler loop and job controller.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from berth.adapters.kube import client
from berth.api import base, names

PLURAL = "workloads"


def path(namespace: str, name: str | None = None) -> str:
    """The API path of the Workloads of a namespace, or of one Workload."""
    out = f"/apis/{base.GROUP}/{base.VERSION}/namespaces/{namespace}/{PLURAL}"
    return out if name is None else f"{out}/{name}"


def timestamp(now: float) -> str:
    """RFC 3339 time, whole seconds, as Kubernetes writes it."""
    return dt.datetime.fromtimestamp(now, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, status: bool, reason: str, message: str, now: float) -> dict[str, Any]:
    """A status condition."""
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": timestamp(now),
    }


def merge_conditions(
    current: list[dict[str, Any]], changes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Set ``changes`` into ``current``; a condition whose status holds keeps its time."""
    out = [dict(c) for c in current]
    for change in changes:
        for i, old in enumerate(out):
            if old.get("type") == change["type"]:
                if old.get("status") == change["status"]:
                    change = {**change, "lastTransitionTime": old.get("lastTransitionTime")}  # noqa: PLW2901 - keep the old time
                out[i] = change
                break
        else:
            out.append(change)
    return out


async def create(kube: client.KubeRequests, body: dict[str, Any]) -> dict[str, Any]:
    """Create a Workload; return it as stored."""
    namespace = body["metadata"]["namespace"]
    return await kube.request("POST", path(namespace), body=body)


async def _patch(
    kube: client.KubeRequests,
    key: names.WorkloadKey,
    resource_version: str | None,
    body: dict[str, Any],
    subresource: str = "",
) -> dict[str, Any]:
    """Merge-patch the Workload (or a subresource); fail on a stale ``resource_version``."""
    out: dict[str, Any] = dict(body)
    if resource_version is not None:
        out["metadata"] = {**(body.get("metadata") or {}), "resourceVersion": resource_version}
    return await kube.request(
        "PATCH",
        path(key.namespace, key.name) + subresource,
        body=out,
        content_type=client.MERGE_PATCH,
    )


async def patch_status(
    kube: client.KubeRequests,
    key: names.WorkloadKey,
    resource_version: str | None,
    status: dict[str, Any],
) -> dict[str, Any]:
    """Merge ``status`` into the Workload's status; fail on a stale ``resource_version``."""
    return await _patch(kube, key, resource_version, {"status": status}, "/status")


async def patch_spec(
    kube: client.KubeRequests,
    key: names.WorkloadKey,
    resource_version: str | None,
    spec: dict[str, Any],
) -> dict[str, Any]:
    """Merge ``spec`` into the Workload's spec; fail on a stale ``resource_version``."""
    return await _patch(kube, key, resource_version, {"spec": spec})


async def patch_metadata(
    kube: client.KubeRequests,
    key: names.WorkloadKey,
    resource_version: str | None,
    metadata: dict[str, Any],
) -> dict[str, Any]:
    """Merge ``metadata`` into the Workload's (its owners); fail on a stale ``resource_version``."""
    return await _patch(kube, key, resource_version, {"metadata": metadata})


async def delete(kube: client.KubeRequests, key: names.WorkloadKey, uid: str) -> None:
    """Delete the Workload, only if it is still the one with ``uid`` (a precondition)."""
    body = {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": uid},
        "propagationPolicy": "Background",
    }
    await kube.request("DELETE", path(key.namespace, key.name), body=body)
