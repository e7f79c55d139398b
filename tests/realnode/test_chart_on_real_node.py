"""The Helm chart installed for real: Berth's image in pods on the real node, webhooks via Services.

What runs: ``scripts/image`` builds Berth's image from the committed HEAD, it is imported into the
node's containerd, and ``helm install`` of helm/berth runs its two replicas as the image's
non-root user, with the chart's probes on ``/readyz`` and ``/healthz``. The leader writes the
webhook certificate; the API server calls the webhooks through the webhook Service, routed by
kube-proxy to the pods. The tests then act as an ordinary namespace user, kill the leader's pod,
roll the pods with ``helm upgrade`` while Jobs keep arriving, and uninstall.

The steps share one installation and run in file order: install, admission through the Service,
metrics through the metrics Service, leader failover, upgrade, uninstall.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

import pytest

import adversary
from berth.devtools.devcluster import binaries, errors, images, kwok, launcher, realnode
from operator_env import ROOT, cluster_queue, condition, flavor, get, local_queue, workload_of
from realnode.test_real_pods import STAY_UP, real_job

pytestmark = pytest.mark.realnode
NAMESPACE = "berth-system"
CHART = str(ROOT / "helm" / "berth")
# The chart's image, imported rather than pulled; a short lease so a failover takes seconds.
SETTINGS = (
    "--set",
    "controllerManager.manager.image.pullPolicy=Never",
    "--set",
    "controllerManager.manager.leaseDurationSeconds=6",
)


def _helm(plane: launcher.ControlPlane, *args: str, timeout: float = 300) -> str:
    helm = binaries.BinaryCache.default().find("helm")
    done = subprocess.run(  # noqa: S603 - argv built here
        [str(helm), f"--kubeconfig={plane.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _berth_pods(plane: launcher.ControlPlane) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = get(
        plane, "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=berth"
    )["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions", [])
    )


def _leader(plane: launcher.ControlPlane) -> str:
    lease = get(plane, "leases", "-n", NAMESPACE)["items"]
    holders = [item["spec"].get("holderIdentity") or "" for item in lease]
    return next((h for h in holders if h), "")


@pytest.fixture(scope="module")
def berth_image() -> Path:
    """Berth's image for the committed HEAD, built by scripts/image and imported into the node."""
    done = subprocess.run(  # noqa: S603 - the project's own script
        [str(ROOT / "scripts" / "image")],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    archive = Path(done.stdout.strip().splitlines()[-1])
    realnode.import_archive(archive)
    return archive


@pytest.fixture(scope="module")
def chart(real_cluster: launcher.ControlPlane, berth_image: Path) -> Iterator[str]:
    """The chart installed with ``helm install --wait``; uninstalled by the last test or here."""
    del berth_image
    started = time.monotonic()
    _helm(
        real_cluster,
        "install",
        "berth",
        CHART,
        "-n",
        NAMESPACE,
        "--create-namespace",
        "--wait",
        "--timeout=300s",
        *SETTINGS,
    )
    print(f"\nhelm install --wait on the real node: {time.monotonic() - started:.1f}s")  # noqa: T201 - a figure
    yield "berth"
    with_release = subprocess.run(  # noqa: S603 - argv built here
        [
            str(binaries.BinaryCache.default().find("helm")),
            f"--kubeconfig={real_cluster.kubeconfig}",
            "status",
            "berth",
            "-n",
            NAMESPACE,
        ],
        capture_output=True,
        check=False,
    )
    if with_release.returncode == 0:
        _helm(real_cluster, "uninstall", "berth", "-n", NAMESPACE, "--wait")


@pytest.fixture(scope="module")
def team(
    real_cluster: launcher.ControlPlane,
    chart: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> adversary.NamespaceUser:
    """A team member with a queue over the real node's 8 GPUs."""
    del chart
    user = adversary.namespace_user(
        real_cluster, "chart-team", tmp_path_factory.mktemp("chart-team")
    )
    real_cluster.kubectl().apply(
        [
            flavor("chart-a100", kwok.A100_LABELS),
            cluster_queue("chart-cq", user.namespace, {"chart-a100": 8}),
            local_queue("lq", user.namespace, "chart-cq"),
        ]
    )
    return user


def _suspended_by_the_webhook(user: adversary.NamespaceUser, job: dict[str, Any]) -> bool:
    """A server-side dry run: the API server calls the mutating webhook and returns its answer."""
    answer = user.kubectl.run(
        "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(job)
    )
    return bool(json.loads(answer)["spec"].get("suspend"))


class WebhookProbe:
    """Asks the mutating webhook (a server-side dry run as ``user``) every 0.25 s, in a thread.

    ``refused`` counts the requests the API server could not get answered: the refusals a user
    creating a Job at that moment would have seen (failurePolicy Fail: refused, never let past).
    """

    def __init__(self, user: adversary.NamespaceUser) -> None:
        self._job = real_job("probe", user.namespace, 1, "true")
        self._user = user
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.asked = 0
        self.refused: list[str] = []

    def _run(self) -> None:
        while not self._stop.is_set():
            self.asked += 1
            try:
                _suspended_by_the_webhook(self._user, self._job)
            except errors.CommandError as e:
                self.refused.append(str(e).rsplit(": ", 1)[-1].strip())
            self._stop.wait(0.25)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _started_outside_the_queue(plane: launcher.ControlPlane, namespace: str, name: str) -> bool:
    """Whether a Job has a pod made before its Workload was admitted, or without an admission."""
    pods = get(plane, "pods", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={name}")
    if not pods["items"]:
        return False
    admitted = condition(workload_of(plane, namespace, name), "Admitted")
    if admitted.get("status") != "True":
        return True
    since = dt.datetime.fromisoformat(admitted["lastTransitionTime"])
    return any(
        dt.datetime.fromisoformat(p["metadata"]["creationTimestamp"]) < since for p in pods["items"]
    )


def _run_a_job(
    plane: launcher.ControlPlane,
    user: adversary.NamespaceUser,
    name: str,
    wait_until: Callable[..., None],
) -> None:
    """Submit a 2-pod Job as ``user`` without suspend; the webhook suspends it; it finishes."""
    job = real_job(name, user.namespace, 2, "sleep 1")
    for _attempt in range(60):  # through a failover's moments without a serving endpoint
        try:
            assert _suspended_by_the_webhook(user, job)
            break
        except errors.CommandError:
            time.sleep(0.5)
    user.apply(job)
    wait_until(
        lambda: (
            condition(workload_of(plane, user.namespace, name), "Finished").get("status") == "True"
        ),
        timeout=120,
    )
    assert not _started_outside_the_queue(plane, user.namespace, name)


def test_the_replicas_run_the_image_as_its_user_and_the_leader_writes_the_certificate(
    real_cluster: launcher.ControlPlane, chart: str, wait_until: Callable[..., None]
) -> None:
    del chart
    pods = _berth_pods(real_cluster)
    assert len(pods) == 2
    assert all(_ready(p) and p["spec"]["nodeName"] == "real-0" for p in pods)
    for pod in pods:
        name = pod["metadata"]["name"]
        uid = real_cluster.kubectl().run("exec", name, "-n", NAMESPACE, "--", "id", "-u")
        assert uid.strip() == "65532"
        probes = pod["spec"]["containers"][0]
        assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"
    wait_until(lambda: bool(_leader(real_cluster)), timeout=60)
    secret = get(real_cluster, "secret", "berth-webhook-tls", "-n", NAMESPACE)
    assert secret["data"]["tls.crt"]
    hooks = get(real_cluster, "mutatingwebhookconfiguration", "berth")["webhooks"]
    assert all(h["clientConfig"].get("caBundle") for h in hooks)
    assert all(h["clientConfig"]["service"]["name"] == "berth-webhook" for h in hooks)


def test_a_team_members_job_is_suspended_by_the_webhook_through_the_service_and_runs(
    real_cluster: launcher.ControlPlane,
    team: adversary.NamespaceUser,
    wait_until: Callable[..., None],
) -> None:
    _run_a_job(real_cluster, team, "first", wait_until)
    pods = get(
        real_cluster, "pods", "-n", team.namespace, "-l", "batch.kubernetes.io/job-name=first"
    )
    assert {p["status"]["phase"] for p in pods["items"]} == {"Succeeded"}
    # A GPU pod without a queue, in a managed namespace, is refused by the validating webhook
    # (manageJobsWithoutQueueName), also reached through the Service.
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bare", "namespace": team.namespace},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "berth.dev/busybox:1",
                    "command": ["sleep", "1"],
                    "resources": {"limits": {kwok.GPU_RESOURCE: "1"}},
                }
            ]
        },
    }
    refused = team.denied("create", "-f", "-", stdin=json.dumps(bare))
    assert "metadata.labels[berth.dev/queue-name]: required" in refused


def test_metrics_are_served_through_the_metrics_service_to_a_metrics_reader(
    real_cluster: launcher.ControlPlane, chart: str
) -> None:
    del chart
    admin = real_cluster.kubectl()
    admin.run("create", "serviceaccount", "scraper", "-n", NAMESPACE)
    admin.run(
        "create",
        "clusterrolebinding",
        "scraper-reads-metrics",
        "--clusterrole=berth-metrics-reader",
        f"--serviceaccount={NAMESPACE}:scraper",
    )
    token = admin.run("create", "token", "scraper", "-n", NAMESPACE).strip()
    service = get(real_cluster, "service", "berth-metrics", "-n", NAMESPACE)
    url = f"https://{service['spec']['clusterIP']}:{service['spec']['ports'][0]['port']}/metrics"
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the operator's self-issued serving certificate
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10, context=context) as answer:  # noqa: S310 - same
        text = answer.read().decode()
    assert "berth_" in text
    anonymous = urllib.request.Request(url)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(anonymous, timeout=10, context=context)  # noqa: S310 - same
    refused.value.close()  # the error holds the answer's socket
    assert refused.value.code in {401, 403}


def _leader_pod(plane: launcher.ControlPlane) -> dict[str, Any]:
    leader = _leader(plane)
    (pod,) = [p for p in _berth_pods(plane) if leader.startswith(p["metadata"]["name"])]
    return pod


def _failover(plane: launcher.ControlPlane, stop: Callable[[dict[str, Any]], None]) -> float:
    """Stop the leader's pod with ``stop``; return the seconds until the other replica leads."""
    leader = _leader(plane)
    pod = _leader_pod(plane)
    started = time.monotonic()
    stop(pod)
    deadline = started + 90
    while _leader(plane) in {"", leader}:
        assert time.monotonic() < deadline, "no other replica took the Lease"
        time.sleep(0.2)
    return time.monotonic() - started


def test_a_crashed_or_deleted_leader_hands_the_lease_to_the_other_replica(
    real_cluster: launcher.ControlPlane,
    team: adversary.NamespaceUser,
    wait_until: Callable[..., None],
) -> None:
    def all_ready() -> bool:
        return len([p for p in _berth_pods(real_cluster) if _ready(p)]) == 2

    def crash(pod: dict[str, Any]) -> None:
        # Every process of the leader's pod SIGKILLed on the node: its Lease must expire.
        assert realnode.kill_pod(pod["metadata"]["uid"]) > 0

    def delete(pod: dict[str, Any]) -> None:
        # The kubelet sends SIGTERM, and the leader gives its Lease up as it stops.
        name = pod["metadata"]["name"]
        real_cluster.kubectl().run("delete", "pod", name, "-n", NAMESPACE, "--wait=false")

    figures = []
    for stop in (crash, delete):
        wait_until(all_ready, timeout=120)
        with WebhookProbe(team) as probe:
            took = _failover(real_cluster, stop)
            _run_a_job(real_cluster, team, f"after-{stop.__name__}", wait_until)
            wait_until(all_ready, timeout=120)
        figures.append(
            f"{stop.__name__}: {took:.1f}s, webhook calls refused"
            f" {len(probe.refused)}/{probe.asked} {sorted(set(probe.refused))}"
        )
        # Past the lease and the renew deadline, but not by minutes.
        assert took < 30
    print("\nleader failover (lease 6s):", "; ".join(figures))  # noqa: T201 - docs/install.md's figures


def test_an_upgrade_rolls_the_pods_and_no_job_slips_past_the_queue(
    real_cluster: launcher.ControlPlane,
    team: adversary.NamespaceUser,
) -> None:
    before = {p["metadata"]["name"] for p in _berth_pods(real_cluster)}
    upgrade = subprocess.Popen(  # noqa: S603 - argv built here
        [
            str(binaries.BinaryCache.default().find("helm")),
            f"--kubeconfig={real_cluster.kubeconfig}",
            "upgrade",
            "berth",
            CHART,
            "-n",
            NAMESPACE,
            "--wait",
            "--timeout=300s",
            *SETTINGS,
            "--set",
            "controllerManager.manager.podAnnotations.rolled=yes",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    submitted: list[str] = []
    refused = 0
    deadline = time.monotonic() + 300
    while upgrade.poll() is None and time.monotonic() < deadline:
        name = f"during-{len(submitted)}"
        try:
            # Four GPUs each against the queue's eight: at most two may run at once.
            team.apply(real_job(name, team.namespace, 1, STAY_UP, gpus=4))
        except errors.CommandError:
            refused += 1  # refused while no replica served: the Job never existed, nothing slipped
            continue
        submitted.append(name)
        time.sleep(1)
    out = upgrade.communicate(timeout=30)[0].decode()
    assert upgrade.returncode == 0, out
    after = {p["metadata"]["name"] for p in _berth_pods(real_cluster)}
    assert before.isdisjoint(after), "every pod was replaced"
    assert len(submitted) >= 3, "Jobs kept arriving during the roll"
    slipped = [n for n in submitted if _started_outside_the_queue(real_cluster, team.namespace, n)]
    assert slipped == [], f"started without the queue: {slipped}"
    running = [
        n
        for n in submitted
        if get(
            real_cluster, "pods", "-n", team.namespace, "-l", f"batch.kubernetes.io/job-name={n}"
        )["items"]
    ]
    assert len(running) <= 2, running
    print(f"\nhelm upgrade: {len(submitted)} Jobs created during the roll, {refused} refused")  # noqa: T201 - a figure
    team.kubectl.run("delete", "jobs", "--all", "-n", team.namespace, "--wait=false")


def test_uninstall_leaves_nothing_that_refuses_or_blocks_job_creation(
    real_cluster: launcher.ControlPlane, chart: str
) -> None:
    _helm(real_cluster, "uninstall", chart, "-n", NAMESPACE, "--wait")
    admin = real_cluster.kubectl()
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        names = [item["metadata"]["name"] for item in get(real_cluster, kind)["items"]]
        assert not [n for n in names if "berth" in n], names
    admin.run("create", "namespace", "after-uninstall")
    admin.run(
        "create",
        "job",
        "plain",
        "-n",
        "after-uninstall",
        f"--image={images.WORKLOAD_IMAGE}",
        "--",
        "true",
    )
    job = get(real_cluster, "job", "plain", "-n", "after-uninstall")
    assert job["spec"].get("suspend") in {None, False}
