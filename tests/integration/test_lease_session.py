"""The Lease renewed through a session of its own, against a real kube-apiserver.

A session holds a bounded number of connections (``client.CONNECTIONS``); a request waits for
one when all are busy. Requests that hold a connection for long (here: watches the server keeps
open) starve a renewal made through the same session, while the Lease's own session
(``client.LEASE_CONNECTIONS``, what ``berth run`` renews through) renews at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from typing import Any

import pytest

from berth.adapters.kube import client, errors, leader
from berth.devtools.devcluster import launcher

BUSY = 2
"""Connections of the busy session, all held by watches."""


async def _busy_then_renew(plane: launcher.ControlPlane) -> dict[str, Any]:
    kubeconfig = str(plane.kubeconfig)
    busy = await client.Kube.open(kubeconfig, connections=BUSY)
    own = await client.Kube.open(kubeconfig, connections=client.LEASE_CONNECTIONS)
    namespace = f"lease-{secrets.token_hex(3)}"
    await own.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    watch = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&timeoutSeconds=20"
    holders = [asyncio.create_task(busy.request("GET", watch)) for _ in range(BUSY)]
    out: dict[str, Any] = {}
    try:
        await asyncio.sleep(1)  # the watches are open and hold every connection of ``busy``
        starved = leader.Elector(
            busy, name="starved", namespace=namespace, identity="a", lease_duration=15
        )
        try:
            async with asyncio.timeout(3):
                out["busy"] = await starved.try_acquire_or_renew()
        except TimeoutError:
            out["busy"] = "timed out"
        elector = leader.Elector(
            own, name="berth-leader", namespace=namespace, identity="a", lease_duration=15
        )
        async with asyncio.timeout(3):
            out["own"] = await elector.try_acquire_or_renew()
            out["renewed"] = await elector.try_acquire_or_renew()
    finally:
        for task in holders:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, errors.KubeError):
                await task
        with contextlib.suppress(errors.KubeError):
            await own.request("DELETE", f"/api/v1/namespaces/{namespace}")
        await busy.close()
        await own.close()
    return out


@pytest.mark.integration
async def test_a_session_of_its_own_renews_the_lease_while_another_is_busy(
    control_plane: launcher.ControlPlane,
) -> None:
    out = await _busy_then_renew(control_plane)
    assert out["busy"] == "timed out", "every connection of the busy session was held"
    assert out["own"] is True
    assert out["renewed"] is True
