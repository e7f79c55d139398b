"""ClusterQueue and LocalQueue status writes (counts, flavor usage, share, Active condition).

The status bodies are built by the operator from its cache and queues; this module sends them as
merge patches of the status subresource. Called by the operator's status writer.
"""

from __future__ import annotations

from typing import Any

from berth.adapters.kube import client
from berth.api import base


async def patch_cluster_queue(
    kube: client.KubeRequests, name: str, status: dict[str, Any]
) -> dict[str, Any]:
    """Merge ``status`` into a ClusterQueue's status."""
    return await kube.request(
        "PATCH",
        f"/apis/{base.GROUP}/{base.VERSION}/clusterqueues/{name}/status",
        body={"status": status},
        content_type=client.MERGE_PATCH,
    )


async def patch_local_queue(
    kube: client.KubeRequests, namespace: str, name: str, status: dict[str, Any]
) -> dict[str, Any]:
    """Merge ``status`` into a LocalQueue's status."""
    return await kube.request(
        "PATCH",
        f"/apis/{base.GROUP}/{base.VERSION}/namespaces/{namespace}/localqueues/{name}/status",
        body={"status": status},
        content_type=client.MERGE_PATCH,
    )
