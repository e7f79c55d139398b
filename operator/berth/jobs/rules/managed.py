"""Whether Berth manages a job: the one predicate every path asks (webhooks, World, controller).

Numbered rules, the first that applies decides:

1. A Job in ``kube-system`` or in the operator's own namespace is never managed, whatever its
   labels: Berth must never hold back the cluster's own work or itself.
2. A job controlled by another kind Berth integrates (a JobSet's child Job, a RayJob's
   RayCluster or submitter Job) is not managed on its own: its parent is
   (``jobs.rules.job_sync.parent``; Kueue's ``IsOwnerManagedByKueue``). The webhooks still keep it
   from running while its parent is not admitted (``operator.webhooks``).
3. A Job that names a LocalQueue (``berth.dev/queue-name``, and ``kueue.x-k8s.io/queue-name``
   when ``honorKueueLabels``) is managed.
4. A Job that names none is managed only with ``manageJobsWithoutQueueName`` and only in a
   namespace ``managedJobsNamespaceSelector`` selects (every namespace when it is unset).

Rule 4 is Kueue's (KEP-3589, "Uniformly filter manageJobsWithoutQueueName by namespace";
``pkg/controller/jobframework`` applies the selector to jobs without a queue name, and Kueue's
default selector leaves out ``kube-system`` and ``kueue-system``). Rule 1 is stricter than
Kueue, whose selector is the only guard: see docs/scheduling.md.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Any

from berth.api import bodies
from berth.jobs import registry
from berth.jobs.framework import labelled, protocol
from berth.jobs.rules import job_sync

if TYPE_CHECKING:
    from collections.abc import Mapping

    from berth.api import configuration

NEVER_MANAGED_NAMESPACES = frozenset({"kube-system"})
"""Beside the operator's own namespace (the Configuration's ``namespace``)."""


class Why(enum.Enum):
    """Which rule decided."""

    PROTECTED_NAMESPACE = "ProtectedNamespace"
    PART_OF_PARENT = "PartOfParent"
    NAMES_A_QUEUE = "NamesLocalQueue"
    NO_QUEUE_NOT_MANAGED = "NoQueueName"
    NO_QUEUE_NAMESPACE_NOT_SELECTED = "NamespaceNotSelected"
    NO_QUEUE_MANAGED = "ManagedWithoutQueueName"


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """Whether a Job is managed, and by which rule."""

    managed: bool
    why: Why


def decide(
    job: Mapping[str, Any],
    namespace_labels: Mapping[str, str] | None,
    config: configuration.Configuration,
    enabled: Mapping[str, protocol.Integration] | None = None,
) -> Decision:
    """Decide whether Berth manages ``job``; ``namespace_labels`` are its namespace's labels.

    Unknown labels (a namespace not seen yet) count as just its ``kubernetes.io/metadata.name``.
    ``enabled`` are the Configuration's integrations when the caller holds them (the World, on
    every event and webhook call); without them they are made from ``config``.
    """
    meta = bodies.meta(job)
    namespace = str(meta.get("namespace") or "default")
    if namespace in NEVER_MANAGED_NAMESPACES or namespace == config.namespace:
        return Decision(managed=False, why=Why.PROTECTED_NAMESPACE)
    if job_sync.parent(
        dict(job), registry.for_configuration(config) if enabled is None else enabled
    ):
        return Decision(managed=False, why=Why.PART_OF_PARENT)
    if labelled.queue_name(dict(job), honor_kueue=config.honor_kueue_labels) is not None:
        return Decision(managed=True, why=Why.NAMES_A_QUEUE)
    if not config.manage_jobs_without_queue_name:
        return Decision(managed=False, why=Why.NO_QUEUE_NOT_MANAGED)
    selector = config.managed_jobs_namespace_selector
    labels = {"kubernetes.io/metadata.name": namespace, **(namespace_labels or {})}
    if selector is not None and not selector.matches(labels):
        return Decision(managed=False, why=Why.NO_QUEUE_NAMESPACE_NOT_SELECTED)
    return Decision(managed=True, why=Why.NO_QUEUE_MANAGED)
