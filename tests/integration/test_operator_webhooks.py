"""The operator against a real API server (no nodes): its TLS webhooks, and optimistic writes.

The API server calls the operator's webhooks over TLS with the CA bundle the operator registered,
so every answer here went through the real admission chain. The last test makes a Workload status
write with a resourceVersion someone else has since moved past and checks the API server refuses
it as a conflict rather than overwriting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from berth.adapters.kube import client, workloads
from berth.adapters.kube import errors as kube_errors
from berth.api import names
from berth.devtools.devcluster import errors as dc_errors
from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    ROOT,
    OperatorProcess,
    cluster_queue,
    flavor,
    gpu_job,
    local_queue,
    workload_of,
)

pytestmark = pytest.mark.integration
A100 = kwok.A100_LABELS


@pytest.fixture(scope="module")
def operator_on_apiserver(
    control_plane: launcher.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """``berth run`` against the session's bare API server, CRDs installed."""
    kubectl = control_plane.kubectl()
    kubectl.run("apply", "-f", str(ROOT / "crds"))
    kubectl.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    op = OperatorProcess(control_plane, tmp_path_factory.mktemp("operator") / "operator.log")
    op.start()
    yield op
    op.stop()


@pytest.fixture
def namespace(
    control_plane: launcher.ControlPlane,
    operator_on_apiserver: OperatorProcess,  # noqa: ARG001 - serves the webhooks
    new_namespace: Callable[[launcher.ControlPlane, str], str],
) -> Iterator[str]:
    ns = new_namespace(control_plane, "hooks")
    yield ns
    control_plane.kubectl().run("delete", "namespace", ns, "--wait=false")


def _queue(plane: launcher.ControlPlane, ns: str, gpus: int) -> None:
    plane.kubectl().apply(
        [
            flavor(f"{ns}-a100", A100),
            cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": gpus}),
            local_queue("lq", ns, f"{ns}-cq"),
        ]
    )


def _admitted(wl: dict[str, Any]) -> bool:
    conds = (wl.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conds)


def _yaml(obj: dict[str, Any]) -> str:
    import yaml  # noqa: PLC0415 - only this helper needs it

    return yaml.safe_dump(obj)


def test_job_created_unsuspended_is_stored_suspended(
    control_plane: launcher.ControlPlane, namespace: str
) -> None:
    created = control_plane.kubectl().run(
        "create",
        "-o",
        "jsonpath={.spec.suspend}",
        "-f",
        "-",
        stdin=_yaml(gpu_job("train", namespace, "lq", 2, runs_for="5s")),
    )
    assert created == "true"


def test_unsuspending_a_queued_job_is_denied(
    control_plane: launcher.ControlPlane,
    namespace: str,
    wait_until: Callable[..., None],
) -> None:
    control_plane.kubectl().create([gpu_job("queued", namespace, "lq", 2, runs_for="5s")])
    wait_until(lambda: workload_of(control_plane, namespace, "queued") != {}, timeout=30)
    with pytest.raises(dc_errors.CommandError) as denied:
        control_plane.kubectl().run(
            "patch",
            "job",
            "queued",
            "-n",
            namespace,
            "--type=merge",
            "-p",
            '{"spec":{"suspend":false}}',
        )
    assert "setting spec.suspend to false by hand is not allowed" in str(denied.value)


def test_queue_label_change_is_denied_while_admitted(
    control_plane: launcher.ControlPlane,
    namespace: str,
    wait_until: Callable[..., None],
) -> None:
    _queue(control_plane, namespace, 4)
    control_plane.kubectl().create([gpu_job("admitted", namespace, "lq", 2, runs_for="5s")])
    wait_until(lambda: _admitted(workload_of(control_plane, namespace, "admitted")), timeout=30)
    with pytest.raises(dc_errors.CommandError) as denied:
        control_plane.kubectl().run(
            "label", "job", "admitted", "-n", namespace, "berth.dev/queue-name=other", "--overwrite"
        )
    assert "its LocalQueue cannot be moved from lq to other while it runs" in str(denied.value)


def test_cluster_queue_with_several_errors_is_denied_with_every_field_path(
    control_plane: launcher.ControlPlane,
    operator_on_apiserver: OperatorProcess,  # noqa: ARG001 - serves the webhooks
) -> None:
    # Each error passes the CRD's schema, so only the webhook's validation can catch them.
    cq = cluster_queue("broken-cq", "nowhere", {"a100": 4})
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "6"
    cq["spec"]["preemption"] = {
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    }
    cq["spec"]["flavorFungibility"] = {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "BorrowingOverPreemption",
    }
    with pytest.raises(dc_errors.CommandError) as denied:
        control_plane.kubectl().create([cq])
    message = str(denied.value)
    for path in (
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "spec.preemption.borrowWithinCohort.policy",
        "spec.flavorFungibility.preference",
    ):
        assert path in message


async def test_workload_status_write_from_a_stale_read_is_refused_as_a_conflict(
    control_plane: launcher.ControlPlane,
    namespace: str,
    wait_until: Callable[..., None],
) -> None:
    # No LocalQueue: the Workload stays pending, so little else writes to it.
    control_plane.kubectl().create([gpu_job("stale", namespace, "missing", 1, runs_for="5s")])
    wait_until(lambda: workload_of(control_plane, namespace, "stale") != {}, timeout=30)
    stale = workload_of(control_plane, namespace, "stale")
    key = names.WorkloadKey(namespace, stale["metadata"]["name"])
    control_plane.kubectl().run("label", "workload", key.name, "-n", namespace, "moved=on")
    marker = workloads.condition("BerthTestMarker", True, "Stale", "written from a stale read", 0)
    rv = stale["metadata"]["resourceVersion"]
    kube = await client.Kube.open(str(control_plane.kubeconfig))
    try:
        with pytest.raises(kube_errors.ConflictError):
            await workloads.patch_status(kube, key, rv, {"conditions": [marker]})
    finally:
        await kube.close()
    after = workload_of(control_plane, namespace, "stale")
    types = {c["type"] for c in (after.get("status") or {}).get("conditions") or []}
    assert "BerthTestMarker" not in types
    assert after["metadata"]["labels"]["moved"] == "on"
