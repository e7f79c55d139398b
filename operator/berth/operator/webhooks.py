"""Admission webhooks over TLS: suspend queued Jobs, guard their start, check Berth kinds.

Routes (AdmissionReview v1, served by aiohttp with a certificate this module issues):

- ``/mutate-job``: a job (any integrated kind) that Berth manages and that is not suspended is
  created suspended; so is a child Job of an integrated parent (a JobSet's) that is not
  admitted, or whose owner reference names no job Berth knows.
- ``/validate-job``: a new job must make a valid Workload (``berth.dev/job-min-parallelism``
  included); an update must keep the rules of ``jobs.rules.job_updates`` (no start by hand, no
  queue change while it runs or holds quota, no queue removal while its Workload is
  unfinished, no pod set above its admission, nothing its create would have been refused
  for). A child Job of an integrated parent may not be started while its parent is not
  admitted, nor lose the label that marks it as the parent's.
- ``/validate-scale``: a change through a job's ``scale`` subresource (an HPA's, or ``kubectl
  scale``) is checked as the job would be at that size, by the same rules; it has no labels
  for an object selector, so every such request comes, and the job is read as stored now.
- ``/mutate-berth``: Berth's kinds get their defaults filled in (the models' full dump of spec).
- ``/validate-berth``: Berth's kinds are checked with ``berth.api.validation``, and a Workload
  update with ``jobs.rules.workload_updates`` (pod sets and queue fixed while quota is reserved,
  priority only through its class); every field error is returned.

``configurations`` builds the Mutating/ValidatingWebhookConfiguration objects pointing at a URL
with the CA bundle; ``main`` applies them. Decisions read the ``World`` only.
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from aiohttp import web

from berth.adapters import tls
from berth.adapters.kube import errors as kube_errors
from berth.api import base, kinds, names, topology, validation
from berth.api.labels import KUEUE_QUEUE_LABEL, QUEUE_LABEL
from berth.core import topology as core_topology
from berth.jobs import registry
from berth.jobs.framework import merge, protocol
from berth.jobs.rules import child_jobs, job_sync, job_updates, managed, unqueued, workload_updates
from berth.operator import ports
from berth.operator import world as world_mod

NAME = "berth"
BERTH_PLURALS = (
    "topologies",
    "resourceflavors",
    "cohorts",
    "clusterqueues",
    "localqueues",
    "workloadpriorityclasses",
    "workloads",
)


def _review(request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": request.get("uid", ""), **response},
    }


def _allow(patch: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"allowed": True}
    if patch:
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return out


def _deny(message: str, code: int = 403) -> dict[str, Any]:
    return {"allowed": False, "status": {"code": code, "message": message}}


_JOB_HOOK = "vjob"
JOB_WEBHOOK = f"{_JOB_HOOK}.berth.dev"
"""The name of the validating Job webhook, as the API server quotes it in a refusal."""
MAX_REVIEW_BYTES = 8 << 20
"""The largest AdmissionReview body served. An UPDATE carries the object twice, and etcd
stores objects up to 1.5 MiB (its ``--max-request-bytes``), which the API server sends as JSON;
aiohttp's default of 1 MiB once refused the start of a 0.6 MiB Job for ever."""


def _job(request: dict[str, Any], key: str = "object") -> dict[str, Any]:
    """The job in a review, its ``kind`` filled in from the request's (older bodies omit it)."""
    body = dict(request.get(key) or {})
    body.setdefault("kind", (request.get("kind") or {}).get("kind") or "Job")
    return body


def _label_patch(body: dict[str, Any], key: str, value: str) -> list[dict[str, Any]]:
    """The JSON patch that sets one label (making the labels map when there is none)."""
    if not (body.get("metadata") or {}).get("labels"):
        return [{"op": "add", "path": "/metadata/labels", "value": {key: value}}]
    return [{"op": "add", "path": f"/metadata/labels/{_escape(key)}", "value": value}]


def _escape(key: str) -> str:
    """A map key as a JSON pointer step (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def mutate_job(
    world: ports.WebhookWorld, request: dict[str, Any], parent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Suspend a managed job at creation, and a child job that may not run (``why_child_waits``).

    A managed job naming no LocalQueue is queued in the namespace's ``default`` one, if any
    (``jobs.rules.unqueued`` rule 1). ``parent``: a child's parent as just read from the API,
    instead of as last seen.
    """
    job = _job(request)
    if request.get("operation") != "CREATE":
        return _allow()
    integ = world.integration(job)
    ops: list[dict[str, Any]] = []
    default = world.default_queue(job)
    if default is not None:
        ops = _label_patch(job, QUEUE_LABEL, default)
    if integ.is_suspended(job):
        return _allow(ops)
    warnings = []
    if world.parent_of(job) is not None:
        why = why_child_waits(world, job, parent)
        if not why:
            return _allow(ops)
        warnings.append(f"Berth created this {integ.kind} suspended: {why}")
    elif not world.managed(job):
        return _allow(ops)
    # The whole spec, suspended where the job's kind keeps the switch (a Job's spec.suspend, a
    # training job's spec.runPolicy.suspend): one patch for every kind, parent fields included.
    spec = merge.suspended_spec(integ, job)
    ops.append({"op": "add" if "spec" not in job else "replace", "path": "/spec", "value": spec})
    answer = _allow(ops)
    if warnings:
        answer["warnings"] = warnings
    return answer


def why_child_waits(
    world: ports.WebhookWorld,
    job: dict[str, Any],
    parent: dict[str, Any] | None = None,
    *,
    running: bool = False,
) -> str:
    """Why a child job of an integrated parent may not run now ('' when it may).

    It runs only while its parent is admitted, and only if it is a child the parent's
    controller makes, no larger (``jobs.rules.child_jobs``). ``parent``: the parent as just read
    from the API, instead of as last seen. ``running``: the child runs already and changes; its
    parent's admission is not asked again (a parent gone or evicted stops it anyway).
    """
    ref = world.parent_of(job)
    if ref is None:
        return ""
    namespace = (job.get("metadata") or {}).get("namespace")
    name = f"{ref.kind} {namespace}/{ref.name}"
    found = parent if parent is not None else world.job_seen(ref.uid)
    if found is None or (found.get("metadata") or {}).get("uid") != ref.uid:
        if running:
            return ""
        return f"metadata.ownerReferences: its controller {name} (uid {ref.uid}) does not exist"
    if not running and not world.admitted_for_job(found):
        kind = world.integration(job).kind
        return (
            f"{name} is not admitted; its controller starts the {kind} once Berth admits it, "
            "and unsuspending it by hand is not allowed"
        )
    refused = child_jobs.refusal(found, job, world.integration(job), world.integration(found))
    return "" if refused is None else f"it is no child {name}'s controller makes: {refused}"


def _child_refusals(
    world: ports.WebhookWorld,
    old: dict[str, Any],
    job: dict[str, Any],
    parent: dict[str, Any] | None,
) -> list[str] | None:
    """What a child job of an integrated parent may not do (None: the job is no such child)."""
    if world.parent_of(job) is None and world.parent_of(old) is None:
        return None
    integ = world.integration(job)
    problems = []
    kind = integ.kind
    if not integ.is_suspended(job):
        field, why = "spec.suspend", ""
        if integ.is_suspended(old) and world.parent_of(job) is None:
            field = "metadata.ownerReferences"
            why = (
                "its controller reference may be dropped only while it stays suspended (it then "
                "queues as a job of its own); dropping it to start the job is not allowed"
            )
        elif integ.is_suspended(old):
            why = why_child_waits(world, job, parent)
        elif job.get("spec") != old.get("spec"):
            # A running child may change only within what its controller makes (a Job's
            # parallelism may change while it runs).
            field, why = "spec", why_child_waits(world, job, parent, running=True)
        if why:
            problems.append(f"{field}: this {kind} is part of a job Berth queues: {why}")
    for label in {c.label for c in registry.CHILD_KINDS if c.label is not None}:
        had = label in ((old.get("metadata") or {}).get("labels") or {})
        if had and label not in ((job.get("metadata") or {}).get("labels") or {}):
            problems.append(
                f"metadata.labels[{label}]: this {kind} is part of a job Berth queues; the "
                "label may not be removed while its ownerReferences name that controller"
            )
    return problems


def validate_job(
    world: ports.WebhookWorld, request: dict[str, Any], parent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Check a new job makes a valid Workload, and an update keeps the rules of job updates.

    ``parent``: a child's parent as just read from the API, instead of as last seen.
    """
    job = _job(request)
    old = _job(request, "oldObject")
    integ = world.integration(job)
    if request.get("operation") == "CREATE":
        if not world.managed(job):
            return _allow()
        if integ.queue_name(job) is None:
            # Managed without a queue, and no default LocalQueue took it (jobs.rules.unqueued 1).
            namespace = str((job.get("metadata") or {}).get("namespace") or "default")
            no_queue = unqueued.no_queue(integ.kind, namespace, world.local_queue_names(namespace))
            return _deny(str(no_queue), 422)
        problems = job_updates.create_problems(job, integ)
        if problems:
            return _deny("; ".join(str(p) for p in problems), 422)
        return _allow()
    if request.get("operation") != "UPDATE":
        return _allow()
    child = _child_refusals(world, old, job, parent)
    if child is not None:
        return _deny("; ".join(child)) if child else _allow()
    # A job gaining a queue label is managed as the new object: it is checked too.
    if not (world.managed(job) or world.managed(old)):
        return _allow()
    refused = job_updates.refusals(old, job, world.workload_state(old), integ)
    if refused:
        return _deny("; ".join(f"{p.path}: {p.message}" for p in refused))
    return _allow()


def scaled_integration(
    world: ports.WebhookWorld, request: dict[str, Any]
) -> protocol.Integration | None:
    """The enabled integration whose ``scale`` subresource a review is about, if any."""
    resource = request.get("resource") or {}
    for integ in world.integrations.values():
        group = integ.api_version.rpartition("/")[0]
        if integ.plural == resource.get("resource") and group == resource.get("group"):
            return integ
    return None


def validate_scale(
    world: ports.WebhookWorld, request: dict[str, Any], job: dict[str, Any] | None
) -> dict[str, Any]:
    """Check a change of a job's replicas through ``/scale`` as the job's own update would be.

    ``job`` is the job as stored now (None: it does not exist, and the API server says so).
    """
    integ = scaled_integration(world, request)
    if (
        request.get("operation") != "UPDATE"
        or request.get("subResource") != "scale"
        or job is None
        or not isinstance(integ, protocol.Scalable)
    ):
        return _allow()
    replicas = ((request.get("object") or {}).get("spec") or {}).get("replicas")
    new = None if not isinstance(replicas, int) else integ.scaled(job, replicas)
    if new is None or not world.managed(job):
        return _allow()
    refused = job_updates.refusals(job, new, world.workload_state(job), integ)
    if refused:
        return _deny("; ".join(f"{p.path}: {p.message}" for p in refused))
    return _allow()


def _composed_of(
    world: ports.WebhookWorld, member: dict[str, Any]
) -> protocol.ComposedIntegration | None:
    """The enabled composed kind whose jobs are made of objects like ``member`` (pods), if any."""
    kind = str(member.get("kind") or "")
    for integ in world.integrations.values():
        if isinstance(integ, protocol.ComposedIntegration) and integ.member_kind == kind:
            return integ
    return None


def mutate_pod(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Make a new managed Pod a pod group's member: held by Berth's gate (the pod integration).

    A pod a controller owns (a Job's) is its controller's business, never a member.
    """
    pod = _job(request)
    integ = _composed_of(world, pod)
    if request.get("operation") != "CREATE" or integ is None:
        return _allow()  # not a create, or the pod integration is off
    if integ.group_of_new(pod) is None or not world.managed(pod):
        return _allow()
    default = world.default_queue(pod)
    if default is None:
        return _allow(integ.admit_member(pod))
    # Queued in the namespace's default LocalQueue (jobs.rules.unqueued 1), then made a member.
    labelled = copy.deepcopy(pod)
    labelled.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_LABEL] = default
    return _allow(_label_patch(pod, QUEUE_LABEL, default) + integ.admit_member(labelled))


def validate_unqueued_pod(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Refuse a Pod naming no queue in a managed namespace unless a queued job's controller made it.

    ``jobs.rules.unqueued`` rule 3; the hook sees only namespaces Berth manages without a queue
    name.
    """
    pod = _job(request)
    if request.get("operation") != "CREATE" or not world.config.manage_jobs_without_queue_name:
        return _allow()
    if world.integration(pod).queue_name(pod) is not None:
        return _allow()
    if not world.managed({"kind": "Pod", "metadata": _unlabelled(pod)}):
        return _allow()  # kube-system, the operator's namespace, or one the selector leaves out
    refused = unqueued.pod_refusal(pod, world.integrations, world.job_seen)
    return _allow() if refused is None else _deny(str(refused), 422)


def validate_unqueued_kind(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Refuse a workload kind Berth does not queue in a managed namespace (``unqueued`` rule 2)."""
    obj = _job(request)
    if request.get("operation") != "CREATE" or not world.config.manage_jobs_without_queue_name:
        return _allow()
    kind = str((request.get("kind") or {}).get("kind") or obj.get("kind") or "")
    if not world.managed({"kind": kind, "metadata": _unlabelled(obj)}):
        return _allow()
    namespace = str((obj.get("metadata") or {}).get("namespace") or request.get("namespace") or "")
    return _deny(str(unqueued.unqueued_kind(kind, namespace)), 422)


def _unlabelled(obj: dict[str, Any]) -> dict[str, Any]:
    """An object's metadata without its queue labels: whether its namespace is managed at all."""
    meta = dict(obj.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    labels.pop(QUEUE_LABEL, None)
    labels.pop(KUEUE_QUEUE_LABEL, None)
    meta["labels"] = labels
    meta.pop("ownerReferences", None)
    return meta


def mutate_placed_pod(request: dict[str, Any]) -> dict[str, Any]:
    """Hold a new pod of a pod set placed by topology at Berth's topology gate.

    The ungater (``operator.ungater``) pins it to its domain and removes the gate.
    """
    pod = _job(request)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if request.get("operation") != "CREATE" or topology.PLACED_LABEL not in labels:
        return _allow()
    return _allow(core_topology.gate_patch(pod))


def validate_pod(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Check a new member's group metadata, and that a change keeps ``jobs.pod.group``'s rules.

    Berth's scheduling gate comes off only while the member's group is admitted.
    """
    pod = _job(request)
    old = _job(request, "oldObject")
    integ = _composed_of(world, pod)
    if integ is None or not (integ.is_member(pod) or integ.is_member(old)):
        return _allow()
    if request.get("operation") == "CREATE":
        problems = integ.new_member_problems(pod)
    elif request.get("operation") == "UPDATE":
        group = world.pod_group(old)
        admitted = group is not None and world.admitted_for_job(group)
        problems = integ.member_update_problems(
            old, pod, admitted=admitted, may_drop_finalizer=_may_drop(world, integ, group, old)
        )
    else:
        return _allow()
    if problems:
        return _deny("; ".join(str(p) for p in problems), 422)
    return _allow()


def _may_drop(
    world: ports.WebhookWorld,
    integ: protocol.ComposedIntegration,
    group: dict[str, Any] | None,
    pod: dict[str, Any],
) -> bool:
    """Tell whether a member's finalizer may come off now (the job controller's own rule)."""
    if group is None:
        return True  # no group to count it any more
    state = world.workload_state(group)
    done = state.exists_finished or (not state.exists_unfinished and integ.finished(group)[0])
    return integ.may_drop_finalizer(group, pod, finished_workload=done)


def _load(request: dict[str, Any]) -> tuple[base.Object | None, list[str]]:
    obj, problems = kinds.try_load(request.get("object") or {})
    return obj, [str(p) for p in problems]


def mutate_berth(request: dict[str, Any]) -> dict[str, Any]:
    """Fill in the defaults of a Berth object's spec."""
    raw = request.get("object") or {}
    obj, problems = _load(request)
    if obj is None or problems or "spec" not in raw:
        return _allow()  # validation explains what is wrong
    spec = obj.to_full_dict().get("spec")
    if spec is None or spec == raw.get("spec"):
        return _allow()
    return _allow([{"op": "replace", "path": "/spec", "value": spec}])


def validate_berth(
    request: dict[str, Any],
    class_values: Mapping[str, int] | None = None,
    job_class: Callable[[dict[str, Any]], str | None] | None = None,
    topologies: Collection[str] | None = None,
) -> dict[str, Any]:
    """Check a Berth object, and what a Workload update changes; deny with every field error.

    ``class_values`` are the WorkloadPriorityClasses' current values, and ``job_class`` tells
    which class a Workload's Job names now (``jobs.rules.workload_updates``). A ResourceFlavor
    naming a Topology not among ``topologies`` is let through with a warning (it may come next
    in the same apply), saying what its ClusterQueues do meanwhile.
    """
    if request.get("operation") == "DELETE":
        return _allow()
    obj, problems = _load(request)
    if request.get("operation") == "UPDATE" and _content(request.get("object")) == _content(
        request.get("oldObject")
    ):
        # Only metadata changed (the operator's finalizer, labels): the stored spec's problems
        # are not new, and an object stored invalid past the webhook must still get and lose
        # its finalizer. What an update of a Workload's metadata may change is checked below.
        problems = []
    elif obj is not None and not problems:
        problems = [str(p) for p in validation.validate(obj)]
    raw = request.get("object") or {}
    if request.get("operation") == "UPDATE" and raw.get("kind") == "Workload":
        old = request.get("oldObject") or {}
        named = None if job_class is None else job_class(raw)
        problems += [str(p) for p in workload_updates.refusals(old, raw, class_values or {}, named)]
    if problems:
        return _deny("; ".join(problems), 422)
    answer = _allow()
    named = raw.get("spec", {}).get("topologyName") if raw.get("kind") == "ResourceFlavor" else None
    if topologies is not None and isinstance(named, str) and named not in topologies:
        warning = (
            f"spec.topologyName: Topology {named} does not exist (yet); the ClusterQueues "
            "using this flavor admit nothing (TopologyNotFound) until it does"
        )
        answer["warnings"] = [warning]
    return answer


def _content(body: dict[str, Any] | None) -> dict[str, Any]:
    """An object without its metadata and status: what the Berth-kind checks look at."""
    return {k: v for k, v in (body or {}).items() if k not in {"metadata", "status"}}


ParentReader = Callable[[job_sync.Parent, str], Awaitable[dict[str, Any] | None]]
"""Reads a child's parent (named by its owner reference, in a namespace) as stored now."""
WatchedReader = Callable[[dict[str, Any]], Awaitable[bool]]
"""Reads the object a job reads (a TrainJob's runtime) into the World; True when it read one."""
JobReader = Callable[[protocol.Integration, str, str], Awaitable[dict[str, Any] | None]]
"""Reads a job of a kind by namespace and name as stored now (None: it does not exist); raises
``berth.adapters.kube.errors.KubeError`` when it cannot tell."""


def app(
    world: world_mod.World,
    read_parent: ParentReader | None = None,
    read_watched: WatchedReader | None = None,
    read_job: JobReader | None = None,
) -> web.Application:
    """The aiohttp application serving every route.

    A scale request is decided on its job as ``read_job`` reads it now (the watch may not have
    shown the job yet); without a reader, on the job as last seen. A job that cannot be read is
    refused: the check fails closed.

    A child job that its parent as last seen would hold back is decided again on its parent as
    ``read_parent`` reads it now: the watch may lag behind the parent's controller (KubeRay names
    the cluster in the RayJob's status just before it makes it). A TrainJob refused for a runtime
    not seen yet is decided again once ``read_watched`` has read it.
    """

    def route(decide: Any) -> Any:  # noqa: ANN401 - an aiohttp handler
        async def handle(request: web.Request) -> web.Response:
            review = await request.json()
            req = review.get("request") or {}
            return web.json_response(_review(req, decide(req)))

        return handle

    def job_route(decide: Callable[..., dict[str, Any]]) -> Any:  # noqa: ANN401 - an aiohttp handler
        async def handle(request: web.Request) -> web.Response:
            review = await request.json()
            req = review.get("request") or {}
            answer = decide(world, req)
            if not answer["allowed"] and read_watched is not None and await read_watched(_job(req)):
                answer = decide(world, req)
            held = not answer["allowed"] or "patch" in answer
            if held and read_parent is not None:  # only a held-back job: most pass untouched
                job = _job(req)
                ref = world.parent_of(job) or world.parent_of(_job(req, "oldObject"))
                if ref is not None:
                    namespace = str((job.get("metadata") or {}).get("namespace") or "")
                    parent = await read_parent(ref, namespace)
                    if parent is not None:
                        answer = decide(world, req, parent)
            return web.json_response(_review(req, answer))

        return handle

    application = web.Application(client_max_size=MAX_REVIEW_BYTES)
    application.router.add_post("/mutate-job", job_route(mutate_job))
    application.router.add_post("/validate-scale", _scale_route(world, read_job))
    application.router.add_post("/validate-job", job_route(validate_job))
    application.router.add_post("/mutate-pod", route(lambda r: mutate_pod(world, r)))
    application.router.add_post("/validate-pod", route(lambda r: validate_pod(world, r)))
    application.router.add_post(
        "/validate-unqueued-pod", route(lambda r: validate_unqueued_pod(world, r))
    )
    application.router.add_post(
        "/validate-unqueued-kind", route(lambda r: validate_unqueued_kind(world, r))
    )
    application.router.add_post("/mutate-placed-pod", route(mutate_placed_pod))
    application.router.add_post("/mutate-berth", route(mutate_berth))
    application.router.add_post(
        "/validate-berth",
        route(
            lambda r: validate_berth(
                r,
                world.priorities.workload_classes,
                world.job_priority_class,
                world.cache.topologies,
            )
        ),
    )
    return application


def _scale_route(world: world_mod.World, read_job: JobReader | None) -> Any:  # noqa: ANN401 - an aiohttp handler
    """``/validate-scale``: ``validate_scale`` on the job read as stored now."""

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        req = review.get("request") or {}
        integ = scaled_integration(world, req)
        namespace, name = str(req.get("namespace") or ""), str(req.get("name") or "")
        job = None
        if integ is not None:
            try:
                job = (
                    world.jobs.get(names.JobKey(integ.kind, namespace, name))
                    if read_job is None
                    else await read_job(integ, namespace, name)
                )
            except kube_errors.KubeError as e:
                what = f"{integ.kind} {namespace}/{name}"
                why = f"Berth could not read {what} to check its new scale ({e}); try again"
                return web.json_response(_review(req, _deny(why, 503)))
            if job is not None:
                job = {**job, "kind": integ.kind, "apiVersion": integ.api_version}
        return web.json_response(_review(req, validate_scale(world, req, job)))

    return handle


class Certificates:
    """Local mode: a CA and a serving certificate for the webhook host, kept in memory only.

    The private key is never written to disk (``tls.ServingContext`` hands it to ``ssl`` and
    removes the file at once), so a killed operator leaves no key behind.
    """

    def __init__(self, host: str) -> None:
        self.ca = tls.new_certificate_authority("berth-webhook-ca")
        self.serving = tls.issue_serving_certificate(self.ca, [host], "berth-webhook")

    def ssl_context(self) -> ssl.SSLContext:
        """A server-side TLS context with the serving certificate."""
        context = tls.ServingContext()
        context.load(self.serving)
        return context.context

    @property
    def ca_bundle(self) -> str:
        """The CA certificate, base64 encoded, for ``clientConfig.caBundle``."""
        return base64.b64encode(self.ca.cert_pem).decode()


def scalable(enabled: Mapping[str, protocol.Integration]) -> list[tuple[str, str, str]]:
    """The API group, version and plural of each enabled kind with a ``scale`` subresource."""
    out = []
    for integ in enabled.values():
        if isinstance(integ, protocol.Scalable) and integ.scaled({}, 1) is not None:
            group, _, version = integ.api_version.rpartition("/")
            out.append((group, version, integ.plural))
    return out


def configurations(base_url: str, ca_bundle: str, world: world_mod.World) -> list[dict[str, Any]]:
    """The webhook configurations that send admission requests to ``base_url``."""

    def hook(name: str, path: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:  # noqa: ANN401 - selectors, as JSON
        return {
            "name": f"{name}.berth.dev",
            "clientConfig": {"url": f"{base_url}{path}", "caBundle": ca_bundle},
            "rules": rules,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            **extra,
        }

    def rule(
        group: str, plurals: list[str], operations: list[str], version: str = base.VERSION
    ) -> dict[str, Any]:
        return {
            "apiGroups": [group],
            "apiVersions": [version],
            "resources": plurals,
            "operations": operations,
        }

    def job_rules(operations: list[str]) -> list[dict[str, Any]]:
        out = []
        for integ in world.integrations.values():
            if isinstance(integ, protocol.Composed):
                continue  # members have hooks of their own (below)
            group, _, version = integ.api_version.rpartition("/")
            out.append(rule(group, [integ.plural], operations, version))
        return out

    queued = {"matchExpressions": [{"key": QUEUE_LABEL, "operator": "Exists"}]}
    pod_kind = _composed_of(world, {"kind": "Pod"})
    # The managed rule 1 (jobs.rules.managed), stated to the API server too: these namespaces
    # never reach the hooks.
    protected = {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": sorted({*managed.NEVER_MANAGED_NAMESPACES, world.config.namespace}),
    }
    job_namespaces = {"matchExpressions": [protected]}
    no_queue = {"matchExpressions": [{"key": QUEUE_LABEL, "operator": "DoesNotExist"}]}

    def selects(child: registry.ChildKind) -> dict[str, Any]:
        # A child its controller labels with nothing of its own: every one that names no queue
        # (one that does is sent by the job hooks below already).
        if child.label is None:
            return no_queue
        return {"matchExpressions": [{"key": child.label, "operator": "Exists"}]}

    children = [
        hook(
            f"{prefix}{child.plural.removesuffix('s')}-{child.parent.lower()}-children",
            path,
            [rule(child.group, [child.plural], operations, child.version)],
            objectSelector=selects(child),
            namespaceSelector=job_namespaces,
        )
        for child in registry.CHILD_KINDS
        if child.parent in world.integrations
        for prefix, path, operations in (
            ("m", "/mutate-job", ["CREATE"]),
            ("v", "/validate-job", ["UPDATE"]),
        )
    ]
    job_hooks = [
        hook(
            "mjob",
            "/mutate-job",
            job_rules(["CREATE"]),
            objectSelector=queued,
            namespaceSelector=job_namespaces,
        ),
        *(h for h in children if h["name"].startswith("m")),
    ]
    selector = world.config.managed_jobs_namespace_selector
    closed: list[dict[str, Any]] = []  # jobs.rules.unqueued's: a managed namespace runs queued work

    if world.config.manage_jobs_without_queue_name:
        managed_namespaces = selector.to_yaml_dict() if selector is not None else {}
        managed_namespaces["matchExpressions"] = [
            protected,
            *managed_namespaces.get("matchExpressions", []),
        ]
        unqueued_in = {"namespaceSelector": managed_namespaces, "objectSelector": no_queue}
        job_hooks.append(
            hook("mjob-managed-namespaces", "/mutate-job", job_rules(["CREATE"]), **unqueued_in)
        )
        pods = [rule("", ["pods"], ["CREATE"], "v1")]
        if pod_kind is not None:
            job_hooks.append(hook("mpod-managed-namespaces", "/mutate-pod", pods, **unqueued_in))
        kinds = [rule(k.group, [k.plural], ["CREATE"], k.version) for k in unqueued.UNQUEUED_KINDS]
        closed = [
            hook(
                "vjob-managed-namespaces",
                "/validate-job",
                job_rules(["CREATE", "UPDATE"]),
                **unqueued_in,
            ),
            hook("vpod-managed-namespaces", "/validate-unqueued-pod", pods, **unqueued_in),
            hook(
                "vkinds-managed-namespaces",
                "/validate-unqueued-kind",
                kinds,
                namespaceSelector=managed_namespaces,
            ),
        ]
    berth_rules = [rule(base.GROUP, list(BERTH_PLURALS), ["CREATE", "UPDATE"])]
    pod_hooks = (
        [
            hook(
                "mpod",
                "/mutate-pod",
                [rule("", ["pods"], ["CREATE"], "v1")],
                objectSelector=queued,
                namespaceSelector=job_namespaces,
            ),
            hook(
                "vpod",
                "/validate-pod",
                [rule("", ["pods"], ["CREATE", "UPDATE"], "v1")],
                objectSelector={
                    "matchExpressions": [{"key": pod_kind.member_label, "operator": "Exists"}]
                },
                namespaceSelector=job_namespaces,
            ),
        ]
        if pod_kind is not None
        else []
    )
    # A Scale has no labels of its own: no object selector could pick the queued ones.
    scales = [
        rule(group, [f"{plural}/scale"], ["UPDATE"], version)
        for group, version, plural in scalable(world.integrations)
    ]
    scale_hooks = (
        [hook("vjob-scale", "/validate-scale", scales, namespaceSelector=job_namespaces)]
        if scales
        else []
    )
    placed = {"matchExpressions": [{"key": topology.PLACED_LABEL, "operator": "Exists"}]}
    placed_hook = hook(
        "mtas",
        "/mutate-placed-pod",
        [rule("", ["pods"], ["CREATE"], "v1")],
        objectSelector=placed,
        namespaceSelector=job_namespaces,
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [
                *job_hooks,
                *(h for h in pod_hooks if h["name"].startswith("m")),
                placed_hook,
                hook("mberth", "/mutate-berth", berth_rules),
            ],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [
                hook(
                    _JOB_HOOK,
                    "/validate-job",
                    job_rules(["CREATE", "UPDATE"]),
                    objectSelector=queued,
                    namespaceSelector=job_namespaces,
                ),
                *(h for h in children if h["name"].startswith("v")),
                *scale_hooks,
                *closed,
                *(h for h in pod_hooks if h["name"].startswith("v")),
                hook("vberth", "/validate-berth", berth_rules),
            ],
        },
    ]
