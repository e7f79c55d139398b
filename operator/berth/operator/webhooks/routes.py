"""The aiohttp application that answers AdmissionReviews: each path mapped to its decision.

| path | decision |
| --- | --- |
| ``/mutate-job``, ``/validate-job`` | ``job_admission.mutate_job``, ``validate_job`` |
| ``/validate-scale`` | ``job_admission.validate_scale`` on the job as stored now |
| ``/mutate-pod``, ``/validate-pod``, ``/mutate-placed-pod`` | ``pod_admission`` |
| ``/validate-unqueued-pod``, ``/validate-unqueued-kind`` | ``unqueued_admission`` |
| ``/mutate-berth``, ``/validate-berth`` | ``berth_admission`` |

The paths are the ones ``configurations`` points the API server at. Decisions read the
``World``; the readers passed in read the API when the watch may lag. Called by ``server``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from berth.adapters.kube import errors as kube_errors
from berth.api import bodies, configuration, names
from berth.jobs.framework import protocol
from berth.jobs.rules import job_sync
from berth.operator import world as world_mod
from berth.operator.webhooks import (
    berth_admission,
    job_admission,
    pod_admission,
    reviews,
    unqueued_admission,
)

MAX_REVIEW_BYTES = 8 << 20
"""The largest AdmissionReview body served. An UPDATE carries the object twice, and etcd
stores objects up to 1.5 MiB (its ``--max-request-bytes``), which the API server sends as JSON;
aiohttp's default of 1 MiB once refused the start of a 0.6 MiB Job for ever."""

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
            return web.json_response(reviews.envelope(req, decide(req)))

        return handle

    def job_route(decide: Callable[..., dict[str, Any]]) -> Any:  # noqa: ANN401 - an aiohttp handler
        async def handle(request: web.Request) -> web.Response:
            review = await request.json()
            req = review.get("request") or {}
            answer = decide(world, req)
            if (
                not answer["allowed"]
                and read_watched is not None
                and await read_watched(reviews.job_of(req))
            ):
                answer = decide(world, req)
            held = not answer["allowed"] or "patch" in answer
            if held and read_parent is not None:  # only a held-back job: most pass untouched
                job = reviews.job_of(req)
                ref = world.parent_of(job) or world.parent_of(reviews.job_of(req, "oldObject"))
                if ref is not None:
                    namespace = bodies.namespace(job)
                    parent = await read_parent(ref, namespace)
                    if parent is not None:
                        answer = decide(world, req, parent)
            return web.json_response(reviews.envelope(req, answer))

        return handle

    application = web.Application(client_max_size=MAX_REVIEW_BYTES)
    application.router.add_post("/mutate-job", job_route(job_admission.mutate_job))
    application.router.add_post("/validate-scale", _scale_route(world, read_job))
    application.router.add_post("/validate-job", job_route(job_admission.validate_job))
    application.router.add_post("/mutate-pod", route(lambda r: pod_admission.mutate_pod(world, r)))
    application.router.add_post(
        "/validate-pod", route(lambda r: pod_admission.validate_pod(world, r))
    )
    application.router.add_post(
        "/validate-unqueued-pod",
        route(lambda r: unqueued_admission.validate_unqueued_pod(world, r)),
    )
    application.router.add_post(
        "/validate-unqueued-kind",
        route(lambda r: unqueued_admission.validate_unqueued_kind(world, r)),
    )
    application.router.add_post("/mutate-placed-pod", route(pod_admission.mutate_placed_pod))
    application.router.add_post("/mutate-berth", route(berth_admission.mutate_berth))
    application.router.add_post(
        "/validate-berth",
        route(
            lambda r: berth_admission.validate_berth(
                r,
                world.priorities.workload_classes,
                world.job_priority_class,
                world.cache.topologies,
                boost_setters=world.config.priority_boost.setters,
                weight_setters=(
                    configuration.DEFAULT_WEIGHT_SETTERS
                    if world.config.admission_fair_sharing is None
                    else world.config.admission_fair_sharing.weight_setters
                ),
            )
        ),
    )
    return application


def _scale_route(world: world_mod.World, read_job: JobReader | None) -> Any:  # noqa: ANN401 - an aiohttp handler
    """``/validate-scale``: ``job_admission.validate_scale`` on the job read as stored now."""

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        req = review.get("request") or {}
        integ = job_admission.scaled_integration(world, req)
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
                return web.json_response(reviews.envelope(req, reviews.deny(why, 503)))
            if job is not None:
                job = {**job, "kind": integ.kind, "apiVersion": integ.api_version}
        return web.json_response(
            reviews.envelope(req, job_admission.validate_scale(world, req, job))
        )

    return handle
