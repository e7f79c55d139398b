"""Kubernetes Events about Workloads and Jobs, with Kueue's reasons (QuotaReserved, Admitted, ...).

Events are best effort: a failed write is reported to the caller, which logs it and goes on.
Called by the operator's scheduler loop and job controller.
"""

from __future__ import annotations

import secrets
from typing import Any

from berth.adapters.kube import client, workloads

COMPONENT = "berth-controller-manager"


async def emit(
    kube: client.Kube,
    involved: dict[str, Any],
    reason: str,
    message: str,
    now: float,
    *,
    warning: bool = False,
) -> None:
    """Record an Event about ``involved`` (an object with apiVersion, kind and metadata)."""
    meta = involved.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    stamp = workloads.timestamp(now)
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name', 'object')}.{secrets.token_hex(8)}",
            "namespace": namespace,
        },
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": meta.get("name"),
            "namespace": namespace,
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
    await kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
