"""Admission webhooks over TLS: suspend queued Jobs, guard their start, check Berth kinds.

Routes (AdmissionReview v1, served by aiohttp with a certificate this module issues):

- ``/mutate-job``: a Job that Berth manages and that is not suspended is created suspended.
- ``/validate-job``: a Job's ``berth.dev/job-min-parallelism`` must make sense on create; an
  update must keep ``core.job_updates``' rules (no start by hand, no queue change while it runs
  or holds quota, no queue removal while its Workload is unfinished, no size above its
  admission).
- ``/mutate-berth``: Berth's kinds get their defaults filled in (the models' full dump of spec).
- ``/validate-berth``: Berth's kinds are checked with ``berth.api.validation``, and a Workload
  update with ``core.workload_updates`` (pod sets and queue fixed while quota is reserved,
  priority only through its class); every field error is returned.

``configurations`` builds the Mutating/ValidatingWebhookConfiguration objects pointing at a URL
with the CA bundle; ``main`` applies them. Decisions read the ``World`` only.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from berth.adapters import tls
from berth.api import base, kinds, validation
from berth.core import batchjob, job_updates, managed, workload_updates
from berth.operator import ports
from berth.operator import world as world_mod

NAME = "berth"
BERTH_PLURALS = (
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


def mutate_job(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Suspend a managed Job at creation."""
    job = request.get("object") or {}
    if request.get("operation") != "CREATE" or not world.managed(job):
        return _allow()
    if world.job.is_suspended(job):
        return _allow()
    spec = job.get("spec") or {}
    op = "replace" if "suspend" in spec else "add"
    return _allow([{"op": op, "path": "/spec/suspend", "value": True}])


def validate_job(world: ports.WebhookWorld, request: dict[str, Any]) -> dict[str, Any]:
    """Check a new Job makes a valid Workload, and an update keeps ``core.job_updates``' rules."""
    job = request.get("object") or {}
    old = request.get("oldObject") or {}
    meta = job.get("metadata") or {}
    if request.get("operation") == "CREATE":
        if not world.managed(job):
            return _allow()
        _obj, problems = world.job.to_workload(job, uid=str(meta.get("uid") or "new"))
        if problems:
            return _deny("; ".join(str(p) for p in problems), 422)
        return _allow()
    # A Job gaining a queue label is managed as the new object: it is checked too.
    if request.get("operation") != "UPDATE" or not (world.managed(job) or world.managed(old)):
        return _allow()
    problems = job_updates.refusals(old, job, world.workload_state(old), world.job)
    if problems:
        return _deny("; ".join(f"{p.path}: {p.message}" for p in problems))
    return _allow()


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
) -> dict[str, Any]:
    """Check a Berth object, and what a Workload update changes; deny with every field error.

    ``class_values`` are the WorkloadPriorityClasses' current values, and ``job_class`` tells
    which class a Workload's Job names now (``core.workload_updates``).
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
    return _allow()


def _content(body: dict[str, Any] | None) -> dict[str, Any]:
    """An object without its metadata and status: what the Berth-kind checks look at."""
    return {k: v for k, v in (body or {}).items() if k not in {"metadata", "status"}}


def app(world: world_mod.World) -> web.Application:
    """The aiohttp application serving every route."""

    def route(decide: Any) -> Any:  # noqa: ANN401 - an aiohttp handler
        async def handle(request: web.Request) -> web.Response:
            review = await request.json()
            req = review.get("request") or {}
            return web.json_response(_review(req, decide(req)))

        return handle

    application = web.Application()
    application.router.add_post("/mutate-job", route(lambda r: mutate_job(world, r)))
    application.router.add_post("/validate-job", route(lambda r: validate_job(world, r)))
    application.router.add_post("/mutate-berth", route(mutate_berth))
    application.router.add_post(
        "/validate-berth",
        route(
            lambda r: validate_berth(r, world.priorities.workload_classes, world.job_priority_class)
        ),
    )
    return application


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

    def rule(group: str, plurals: list[str], operations: list[str]) -> dict[str, Any]:
        return {
            "apiGroups": [group],
            "apiVersions": ["v1" if group == "batch" else base.VERSION],
            "resources": plurals,
            "operations": operations,
        }

    queued = {"matchExpressions": [{"key": batchjob.QUEUE_LABEL, "operator": "Exists"}]}
    # core.managed's rule 1, stated to the API server too: these namespaces never reach the hooks.
    protected = {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": sorted({*managed.NEVER_MANAGED_NAMESPACES, world.config.namespace}),
    }
    job_namespaces = {"matchExpressions": [protected]}
    job_hooks = [
        hook(
            "mjob",
            "/mutate-job",
            [rule("batch", ["jobs"], ["CREATE"])],
            objectSelector=queued,
            namespaceSelector=job_namespaces,
        ),
    ]
    selector = world.config.managed_jobs_namespace_selector
    if world.config.manage_jobs_without_queue_name:
        managed_namespaces = selector.to_yaml_dict() if selector is not None else {}
        managed_namespaces["matchExpressions"] = [
            protected,
            *managed_namespaces.get("matchExpressions", []),
        ]
        job_hooks.append(
            hook(
                "mjob-managed-namespaces",
                "/mutate-job",
                [rule("batch", ["jobs"], ["CREATE"])],
                namespaceSelector=managed_namespaces,
                objectSelector={
                    "matchExpressions": [{"key": batchjob.QUEUE_LABEL, "operator": "DoesNotExist"}]
                },
            )
        )
    berth_rules = [rule(base.GROUP, list(BERTH_PLURALS), ["CREATE", "UPDATE"])]
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [*job_hooks, hook("mberth", "/mutate-berth", berth_rules)],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [
                hook(
                    _JOB_HOOK,
                    "/validate-job",
                    [rule("batch", ["jobs"], ["CREATE", "UPDATE"])],
                    objectSelector=queued,
                    namespaceSelector=job_namespaces,
                ),
                hook("vberth", "/validate-berth", berth_rules),
            ],
        },
    ]
