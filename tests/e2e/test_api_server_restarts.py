"""The operator through API server and etcd restarts: a pause, never the process.

A leader and a standby run against a control plane of their own; kube-apiserver is restarted in
place, then etcd is killed and restarted. Both operator processes must still run afterwards, the
Lease must still be held, and a queued Job created after the restarts is admitted and started.
A replica stopped cleanly removes the webhook configurations that point at it, and releases the
Lease.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from berth.devtools.devcluster import kwok, launcher
from operator_env import (
    ROOT,
    OperatorProcess,
    cluster_queue,
    condition,
    flavor,
    get,
    gpu_job,
    local_queue,
    running_pods,
    workload_of,
)

pytestmark = pytest.mark.e2e


def test_leader_and_standby_survive_api_server_and_etcd_restarts(
    control_plane_factory: Callable[..., launcher.ControlPlane],
    new_namespace: Callable[[launcher.ControlPlane, str], str],
    wait_until: Callable[..., None],
    tmp_path: Path,
) -> None:
    plane = control_plane_factory("restarts", scheduling=True, node_pools=(kwok.A100_POOL,))
    admin = plane.kubectl()
    admin.run("apply", "-f", str(ROOT / "crds"))
    admin.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    leader = OperatorProcess(plane, tmp_path / "leader.log")
    standby = OperatorProcess(plane, tmp_path / "standby.log")
    leader.start()
    with standby.log.open("ab") as out:
        standby.process = standby._spawn(out)
    wait_until(lambda: "webhooks served at" in standby.log.read_text(errors="replace"), 60)
    try:
        ns = new_namespace(plane, "restarts")
        admin.apply(
            [
                flavor(f"{ns}-a100", dict(kwok.A100_LABELS)),
                cluster_queue(f"{ns}-cq", ns, {f"{ns}-a100": 8}),
                local_queue("lq", ns, f"{ns}-cq"),
            ]
        )
        admin.create([gpu_job("before", ns, "lq", 2, runs_for="2s")])
        wait_until(lambda: running_pods(plane, ns, "before") == 2, timeout=60)

        plane.restart("kube-apiserver")
        plane.restart("etcd", kill=True)
        plane.restart("kube-apiserver")
        for process in (leader, standby):
            assert process.process is not None
            assert process.process.poll() is None, f"the operator exited; see {process.log}"

        admin.create([gpu_job("after", ns, "lq", 4, runs_for="2s")])
        wait_until(
            lambda: condition(workload_of(plane, ns, "after"), "Admitted").get("status") == "True",
            timeout=120,
        )
        wait_until(
            lambda: condition(workload_of(plane, ns, "after"), "Finished").get("status") == "True",
            timeout=120,
        )
        lease = get(plane, "lease", "berth-leader", "-n", "berth-system")
        assert lease["spec"]["holderIdentity"], "a replica leads again"
        for process in (leader, standby):
            assert process.process is not None
            assert process.process.poll() is None, f"the operator exited; see {process.log}"
            assert "Traceback" not in process.log.read_text(errors="replace")
        # The standby registered last, so the configurations point at it: stopped cleanly, it
        # removes them (left with failurePolicy Fail they would refuse every labelled Job).
        assert standby.process is not None
        standby.process.terminate()
        assert standby.process.wait(timeout=30) == 0
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            assert admin.run("get", kind, "--ignore-not-found", "-o", "name") == ""
        # A clean stop gives the Lease up (client-go's ReleaseOnCancel): no successor waits it out.
        assert leader.process is not None
        leader.process.terminate()
        assert leader.process.wait(timeout=30) == 0
        lease = get(plane, "lease", "berth-leader", "-n", "berth-system")
        assert not lease["spec"].get("holderIdentity"), lease["spec"]
    finally:
        standby.stop()
        leader.stop()
