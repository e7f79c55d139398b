"""Watch events of every kind Berth reads, fed into the ``World``: kopf handlers, and informers.

Workloads are watched by an ``informer.Informer`` (``INFORMED``), every other kind by kopf.

Only ``on.event`` handlers are registered, so kopf never adds finalizers, and the progress and
diff-base storages below store nothing (nor build a diff base), so kopf never writes annotations
or status onto any object — neither users' Jobs and Pods nor Berth's own kinds. kopf's own
Events are off.
Called by ``main``, which runs kopf in the operator's event loop.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import kopf

from berth.adapters.kube import client, informer
from berth.api import base
from berth.operator import world as world_mod

WATCHED = (
    ("Topology", base.GROUP, base.VERSION, "topologies"),
    ("ResourceFlavor", base.GROUP, base.VERSION, "resourceflavors"),
    ("Cohort", base.GROUP, base.VERSION, "cohorts"),
    ("ClusterQueue", base.GROUP, base.VERSION, "clusterqueues"),
    ("LocalQueue", base.GROUP, base.VERSION, "localqueues"),
    ("WorkloadPriorityClass", base.GROUP, base.VERSION, "workloadpriorityclasses"),
    ("Workload", base.GROUP, base.VERSION, "workloads"),
    ("Job", "batch", "v1", "jobs"),
    ("Node", "", "v1", "nodes"),
    ("Pod", "", "v1", "pods"),
    ("Namespace", "", "v1", "namespaces"),
    ("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses"),
)
"""(kind, group, version, plural) of everything the operator always watches, in priming order;
``watched`` adds the job kinds the Configuration integrates beside ``batch/v1`` Job (and the
objects those kinds read: a TrainJob's training runtimes)."""


def watched(world: world_mod.World) -> list[tuple[str, str, str, str]]:
    """Everything the operator watches: ``WATCHED`` and every other integrated job kind.

    A kind whose CRD is not installed is resolved by kopf once it is (kopf rescans the API's
    resources), so enabling an integration before installing its framework is harmless.
    """
    out = list(WATCHED)
    for integ in world.integrations.values():
        group, _, version = integ.api_version.rpartition("/")
        entry = (integ.kind, group, version, integ.plural)
        if entry not in out:
            out.insert(out.index(("Pod", "", "v1", "pods")), entry)
    for kind, reader in world.watched_kinds.items():
        # Before the jobs: a job's pod sets may be read from what it names (a TrainJob's runtime).
        watched = next(w for w in reader.watched if w.kind == kind)
        group, _, version = watched.api_version.rpartition("/")
        out.insert(
            out.index(("Job", "batch", "v1", "jobs")), (kind, group, version, watched.plural)
        )
    return out


INFORMED = frozenset({"Workload"})
"""Kinds watched by an ``informer.Informer`` of their own instead of kopf: those whose events
come by the tens of thousands, where kopf's per-event machinery was the operator's largest cost."""


class _NoProgress(kopf.ProgressStorage):
    """Stores nothing: event handlers have no progress to keep."""

    def fetch(self, **_: Any) -> None:  # noqa: ANN401 - kopf passes keywords of many types
        return None

    def store(self, **_: Any) -> None:  # noqa: ANN401 - kopf passes keywords of many types
        return None

    def purge(self, **_: Any) -> None:  # noqa: ANN401 - kopf passes keywords of many types
        return None

    def touch(self, **_: Any) -> None:  # noqa: ANN401 - kopf passes keywords of many types
        return None

    def clear(self, *, essence: Any) -> Any:  # noqa: ANN401 - kopf's body essence
        return essence


class _NoDiffBase(kopf.DiffBaseStorage):
    """Stores nothing: no change handlers need a last-handled state."""

    def build(self, **_: Any) -> kopf.BodyEssence:  # noqa: ANN401 - kopf passes keywords of many types
        # kopf deep-copies every body into an essence to detect changes for create/update
        # handlers; with event handlers only, nothing reads it (a sixth of kopf's time).
        return kopf.BodyEssence()

    def fetch(self, **_: Any) -> None:  # noqa: ANN401 - kopf passes keywords of many types
        return None

    def store(self, **_: Any) -> None:  # noqa: ANN401 - kopf passes keywords of many types
        return None


def settings() -> kopf.OperatorSettings:
    """Kopf settings that write nothing onto watched objects."""
    s = kopf.OperatorSettings()
    s.persistence.progress_storage = _NoProgress()
    s.persistence.diffbase_storage = _NoDiffBase()
    s.posting.enabled = False
    s.watching.server_timeout = 300
    s.watching.client_timeout = 330
    s.watching.connect_timeout = 10
    return s


def registry(world: world_mod.World, kube: client.Kube) -> kopf.OperatorRegistry:
    """A kopf registry with a login handler and one event handler per watched kind."""
    reg = kopf.OperatorRegistry()

    @kopf.on.login(registry=reg)
    async def login(**_: Any) -> kopf.ConnectionInfo:  # noqa: ANN401 - kopf passes keywords of many types
        # The session's credentials, renewed (a token file read again, a plugin run again) since
        # kopf asks after a 401; the expiry they carry makes kopf ask again before it.
        c = await kube.login()
        return kopf.ConnectionInfo(
            server=c.server,
            ca_path=c.ca_path,
            ca_data=c.ca_data,
            insecure=c.insecure,
            scheme="Bearer" if c.token else None,
            token=c.token,
            certificate_path=c.certificate_path,
            certificate_data=c.certificate_data,
            private_key_path=c.private_key_path,
            private_key_data=c.private_key_data,
            expiration=c.expiration,
            proxy_url=c.proxy_url,
            # As Berth's own session: $HTTPS_PROXY and $NO_PROXY when set.
            trust_env=bool(urllib.request.getproxies()),
        )

    for kind, group, version, plural in watched(world):
        if kind not in INFORMED:
            _register(reg, world, kind, group, version, plural)
    return reg


def informers(world: world_mod.World, kube: client.Kube) -> list[informer.Informer]:
    """One list-then-watch per informed kind, feeding the world as kopf's handlers do."""
    out = []
    for kind, group, version, plural in watched(world):
        if kind not in INFORMED:
            continue
        api_version = f"{group}/{version}" if group else version
        prefix = f"/apis/{api_version}" if group else f"/api/{version}"

        def apply(body: dict[str, Any], kind: str = kind) -> None:
            world.apply(kind, body)

        def remove(body: dict[str, Any], kind: str = kind) -> None:
            world.remove(kind, body)

        out.append(
            informer.Informer(
                kube,
                path=f"{prefix}/{plural}",
                api_version=api_version,
                kind=kind,
                apply=apply,
                remove=remove,
            )
        )
    return out


def _register(  # noqa: PLR0917 - one watched kind's coordinates, as WATCHED lists them
    reg: kopf.OperatorRegistry,
    world: world_mod.World,
    kind: str,
    group: str,
    version: str,
    plural: str,
) -> None:
    # A coroutine, not a plain function: kopf runs plain handlers in worker threads, and the
    # world (cache, queues, wake-up event) must only change on the loop the scheduler runs on.
    async def on_event(*, event: kopf.RawEvent, **_: Any) -> None:  # noqa: ANN401 - kopf's keywords
        body = dict(event["object"])
        if event.get("type") == "DELETED":
            world.remove(kind, body)
        else:
            world.apply(kind, body)

    kopf.on.event(group=group, version=version, plural=plural, registry=reg, id=f"berth-{plural}")(
        on_event
    )
