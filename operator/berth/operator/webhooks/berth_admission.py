"""What the webhooks of Berth's own kinds answer: their defaults, and their validation.

- ``mutate_berth`` (``/mutate-berth``): Berth's kinds get their defaults filled in (the models'
  full dump of spec).
- ``validate_berth`` (``/validate-berth``): Berth's kinds are checked with
  ``berth.api.validation``, and a Workload update with ``jobs.rules.workload_updates`` (pod sets
  and queue fixed while quota is reserved, priority only through its class, a priority boost
  only from the controllers the Configuration names); every field error is returned.

Pure: the caller passes what of the ``World`` a check needs. Called by ``routes``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from berth.api import base, configuration, kinds, validation, workload
from berth.jobs.rules import queue_weights, workload_updates
from berth.operator.webhooks import reviews


def _load(request: dict[str, Any]) -> tuple[base.Object | None, list[str]]:
    obj, problems = kinds.try_load(request.get("object") or {})
    return obj, [str(p) for p in problems]


def mutate_berth(request: dict[str, Any]) -> dict[str, Any]:
    """Fill in the defaults of a Berth object's spec."""
    raw = request.get("object") or {}
    obj, problems = _load(request)
    if obj is None or problems or "spec" not in raw:
        return reviews.allow()  # validation explains what is wrong
    spec = obj.to_full_dict().get("spec")
    if spec is None or spec == raw.get("spec"):
        return reviews.allow()
    return reviews.allow([{"op": "replace", "path": "/spec", "value": spec}])


def validate_berth(
    request: dict[str, Any],
    class_values: Mapping[str, int] | None = None,
    job_class: Callable[[dict[str, Any]], str | None] | None = None,
    topologies: Collection[str] | None = None,
    *,
    boost_setters: Sequence[str] = (),
    weight_setters: Sequence[str] = configuration.DEFAULT_WEIGHT_SETTERS,
) -> dict[str, Any]:
    """Check a Berth object, and what a Workload update changes; deny with every field error.

        ``class_values`` are the WorkloadPriorityClasses' current values, and ``job_class`` tells
        which class a Workload's Job names now (``jobs.rules.workload_updates``); a Workload's
        priority boost may change only by a request of one of ``boost_setters`` (rule 4), and a
    LocalQueue's weight only by one of ``weight_setters`` (``jobs.rules.queue_weights``). A
        ResourceFlavor naming a Topology not among ``topologies`` is let through with a warning (it
        may come next in the same apply), saying what its ClusterQueues do meanwhile.
    """
    if request.get("operation") == "DELETE":
        return reviews.allow()
    obj, problems = _load(request)
    if request.get("operation") == "UPDATE" and _content(request.get("object")) == _content(
        request.get("oldObject")
    ):
        # Only metadata changed (the operator's finalizer, labels): the stored spec's problems
        # are not new, and an object stored invalid past the webhook must still get and lose
        # its finalizer. What an update of a Workload's metadata may change is checked below.
        problems = []
        if isinstance(obj, workload.Workload):
            problems = [
                str(p) for p in validation.validate_preemption_annotations(obj.metadata.annotations)
            ]
    elif obj is not None and not problems:
        problems = [str(p) for p in validation.validate(obj)]
    raw = request.get("object") or {}
    if request.get("operation") == "UPDATE" and raw.get("kind") == "Workload":
        old = request.get("oldObject") or {}
        named = None if job_class is None else job_class(raw)
        problems += [str(p) for p in workload_updates.refusals(old, raw, class_values or {}, named)]
    before = request.get("oldObject") if request.get("operation") == "UPDATE" else None
    user = request.get("userInfo") or {}
    if raw.get("kind") == "Workload":
        problems += [
            str(p) for p in workload_updates.boost_refusals(before, raw, user, boost_setters)
        ]
    elif raw.get("kind") == "LocalQueue":
        problems += [str(p) for p in queue_weights.refusals(before, raw, user, weight_setters)]
    if problems:
        return reviews.deny("; ".join(problems), 422)
    answer = reviews.allow()
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
