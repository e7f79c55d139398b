"""A read-only, typed view of a stored Workload body, as the API server returned it.

The operator keeps Workloads as the API server sends them: the whole body, so that a write can
be built on it and carry its resourceVersion. Every reader goes through ``WorkloadView``:
identity, owner, spec fields, conditions (``Condition``, with the transition time parsed),
``status.admission`` (the model ``core.admission.to_status`` writes, parsed at each read) and
``status.requeueState``. Nothing here writes; the bodies the view wraps are never changed. Used
by ``berth.operator`` (World, the scheduler, the job controller, the lifecycle task, observers)
and by the live source of ``berth explain``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pydantic

from berth.api import errors, kinds, names
from berth.api import workload as api_workload
from berth.api.bodies import Body


def parse_time(text: str | None) -> float:
    """Seconds since the epoch of an RFC 3339 time (0 when missing)."""
    if not text:
        return 0.0
    return dt.datetime.fromisoformat(text).timestamp()


@dataclasses.dataclass(frozen=True, slots=True)
class Condition:
    """One status condition."""

    type: str
    status: bool
    reason: str
    message: str
    last_transition: float
    """Seconds since the epoch of ``lastTransitionTime`` (0 when missing)."""


def _map(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


class WorkloadView:
    """A stored Workload body, read through typed properties (parsed on first use)."""

    __slots__ = ("_conditions", "body")

    def __init__(self, body: Body) -> None:
        self.body = body
        self._conditions: dict[str, Condition] | None = None

    # Metadata -----------------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        """``metadata`` (empty when missing)."""
        return _map(self.body.get("metadata"))

    @property
    def key(self) -> names.WorkloadKey:
        """Namespace and name."""
        meta = self.metadata
        return names.WorkloadKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    @property
    def uid(self) -> str:
        """``metadata.uid`` (empty when missing)."""
        return str(self.metadata.get("uid") or "")

    @property
    def resource_version(self) -> str | None:
        """``metadata.resourceVersion``, the precondition of every write built on this body."""
        rv = self.metadata.get("resourceVersion")
        return None if rv is None else str(rv)

    @property
    def creation_time(self) -> float:
        """``metadata.creationTimestamp`` in seconds since the epoch."""
        return parse_time(self.metadata.get("creationTimestamp"))

    @property
    def labels(self) -> dict[str, str]:
        """``metadata.labels``."""
        return {str(k): str(v) for k, v in _map(self.metadata.get("labels")).items()}

    @property
    def annotations(self) -> dict[str, str]:
        """``metadata.annotations``."""
        return {str(k): str(v) for k, v in _map(self.metadata.get("annotations")).items()}

    @property
    def owner_job_uid(self) -> str | None:
        """The uid of the job that owns the Workload, if any.

        Its controller (any job kind), else a ``batch`` Job it names; a pod group's Workload
        (owned by its pods, none the controller) says its group's uid in a label.
        """
        labels = _map(self.metadata.get("labels"))
        if api_workload.POD_GROUP_LABEL in labels and labels.get(api_workload.JOB_UID_LABEL):
            return str(labels[api_workload.JOB_UID_LABEL])
        refs = [_map(ref) for ref in _list(self.metadata.get("ownerReferences"))]
        for ref_map in refs:
            if ref_map.get("controller") is True and ref_map.get("uid"):
                return str(ref_map.get("uid"))
        for ref_map in refs:
            if ref_map.get("kind") == "Job" and str(ref_map.get("apiVersion", "")).startswith(
                "batch/"
            ):
                return str(ref_map.get("uid"))
        return None

    # Spec ---------------------------------------------------------------------------------------

    @property
    def spec(self) -> dict[str, Any]:
        """``spec`` (empty when missing)."""
        return _map(self.body.get("spec"))

    @property
    def priority(self) -> int:
        """``spec.priority`` (0 when unset)."""
        return int(self.spec.get("priority") or 0)

    @property
    def effective_priority(self) -> int:
        """``spec.priority`` plus its ``berth.dev/priority-boost`` (KEP-7990)."""
        return self.priority + api_workload.priority_boost(self.annotations)

    @property
    def checkpointed_at(self) -> float | None:
        """Its ``berth.dev/checkpointed-at`` in seconds since the epoch, if valid."""
        return api_workload.checkpointed_at(self.annotations)

    @property
    def active(self) -> bool:
        """``spec.active`` (true unless set false)."""
        return self.spec.get("active", True) is not False

    @property
    def queue_name(self) -> str | None:
        """``spec.queueName``."""
        value = self.spec.get("queueName")
        return None if value is None else str(value)

    @property
    def priority_class_ref(self) -> tuple[str, str] | None:
        """(kind, name) of ``spec.priorityClassRef``, if set."""
        ref = _map(self.spec.get("priorityClassRef"))
        if not ref:
            return None
        return str(ref.get("kind") or "WorkloadPriorityClass"), str(ref.get("name") or "")

    @property
    def pod_sets(self) -> list[dict[str, Any]]:
        """``spec.podSets`` as stored (their templates are patched into jobs as they are)."""
        return [_map(ps) for ps in _list(self.spec.get("podSets"))]

    # Status -------------------------------------------------------------------------------------

    @property
    def status(self) -> dict[str, Any]:
        """``status`` (empty when missing)."""
        return _map(self.body.get("status"))

    @property
    def raw_conditions(self) -> list[dict[str, Any]]:
        """``status.conditions`` as stored, for merging a change into them."""
        return [_map(c) for c in _list(self.status.get("conditions"))]

    @property
    def conditions(self) -> dict[str, Condition]:
        """Conditions by type."""
        if self._conditions is None:
            self._conditions = {
                str(c.get("type")): Condition(
                    str(c.get("type")),
                    c.get("status") == "True",
                    str(c.get("reason") or ""),
                    str(c.get("message") or ""),
                    parse_time(c.get("lastTransitionTime")),
                )
                for c in self.raw_conditions
            }
        return self._conditions

    def condition(self, kind: str) -> Condition | None:
        """The condition of this type, whatever its status."""
        return self.conditions.get(kind)

    def is_true(self, kind: str) -> bool:
        """Tell whether the condition of this type is True."""
        c = self.conditions.get(kind)
        return c is not None and c.status

    def transition_time(self, kind: str) -> float:
        """When the condition of this type last changed status (0 when absent)."""
        c = self.conditions.get(kind)
        return 0.0 if c is None else c.last_transition

    @property
    def raw_admission(self) -> dict[str, Any] | None:
        """``status.admission`` as stored (None when unset or empty)."""
        raw = _map(self.status.get("admission"))
        return raw or None

    @property
    def admission(self) -> api_workload.Admission | None:
        """``status.admission`` as the model (None when unset, or when it does not load).

        Parsed at each read, not kept: the operator holds a view of every Workload, and a kept
        model (about 1.4 KiB) outlived its use in every admitted and finished one. Read it once
        per use. One the schema lets through and the model refuses (status is written by the
        operator and cluster admins only) is no admission; ``admission_problems`` says why.
        """
        raw = self.raw_admission
        if raw is None:
            return None
        try:
            return api_workload.Admission.model_validate(raw)
        except pydantic.ValidationError:
            return None

    @property
    def admission_problems(self) -> list[errors.FieldError]:
        """Why a set ``status.admission`` does not load (empty when it loads or is unset)."""
        raw = self.raw_admission
        if raw is None:
            return []
        try:
            api_workload.Admission.model_validate(raw)
        except pydantic.ValidationError as exc:
            return kinds.errors_from_pydantic(exc, "status.admission")
        return []

    @property
    def requeue_count(self) -> int:
        """``status.requeueState.count`` (0 when unset)."""
        return int(_map(self.status.get("requeueState")).get("count") or 0)

    @property
    def requeue_at(self) -> float:
        """``status.requeueState.requeueAt`` in seconds since the epoch (0 when unset)."""
        return parse_time(_map(self.status.get("requeueState")).get("requeueAt"))
