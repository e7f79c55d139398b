"""What each of the operator's tasks needs of ``World``: one narrow Protocol per task.

``World`` satisfies all of them; a task is typed against its own Protocol, so what it may read
and change is written down here and a test can hand it a smaller stand-in. Members are read-only
properties (the task never rebinds them; it may still change the objects they hold, such as a
mailbox or the state). Used by ``scheduler``, ``lifecycle``, ``jobcontroller``, ``ungater``,
``statuses``, ``finalizers``, ``webhooks`` and ``handlers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from berth.api import configuration, names, workload_view
from berth.api.bodies import Body
from berth.core import cycle, priority, workload
from berth.jobs.framework.protocol import Integration
from berth.jobs.rules import job_sync, job_updates
from berth.operator import mailbox
from berth.state import cache as cache_mod
from berth.state import lifecycle, priorities
from berth.state.queues import manager

if TYPE_CHECKING:
    from berth.operator import observe, placed_pods
    from berth.operator.mailbox import Wakeups

Mailbox = mailbox.Mailbox[names.WorkloadKey]


class Intake(Protocol):
    """Where watch events go (the kopf handlers and the Workload informer)."""

    def apply(self, kind: str, body: Body) -> None:
        """Take in an object that was added or changed."""

    def remove(self, kind: str, body: Body) -> None:
        """Take in an object that was deleted."""


class _Known(Protocol):
    """What every task reads: the clock, the cache, the Workloads and the wake-ups."""

    @property
    def clock(self) -> Callable[[], float]:
        """Seconds since the epoch, now."""

    @property
    def cache(self) -> cache_mod.Cache:
        """Queue objects and admissions."""

    @property
    def workloads(self) -> dict[names.WorkloadKey, workload_view.WorkloadView]:
        """The latest stored Workloads."""

    @property
    def wake(self) -> Wakeups:
        """The tasks' wake-up signals."""

    def apply(self, kind: str, body: Body) -> None:
        """Take in an object the task just stored (its own write's answer)."""


class SchedulerWorld(_Known, Protocol):
    """What the scheduler loop needs."""

    @property
    def state(self) -> lifecycle.Lifecycle:
        """The transitions between queues and cache."""

    @property
    def queues(self) -> manager.QueueManager:
        """The pending queues."""

    @property
    def policy(self) -> cycle.Policy:
        """The Configuration's policy for the core."""

    @property
    def observer(self) -> observe.Observer | None:
        """Metrics and history, on the leader."""

    @property
    def infos(self) -> dict[names.WorkloadKey, workload.WorkloadInfo]:
        """The core's view of each Workload."""

    @property
    def in_flight(self) -> Mailbox:
        """Admissions assumed and not yet written."""

    @property
    def ready(self) -> Mailbox:
        """Admitted workloads whose pods are ready."""

    def settle_workload(self, key: names.WorkloadKey) -> None:
        """Bring state in line with the latest body of a Workload."""

    def release(self, key: names.WorkloadKey) -> None:
        """Stop counting an admission."""


class LifecycleWorld(_Known, Protocol):
    """What the lifecycle task needs."""

    @property
    def config(self) -> configuration.Configuration:
        """The Configuration (``waitForPodsReady``)."""

    @property
    def infos(self) -> dict[names.WorkloadKey, workload.WorkloadInfo]:
        """The core's view of each Workload."""

    @property
    def priorities(self) -> priorities.Registry:
        """The priority classes known now."""

    @property
    def in_flight(self) -> Mailbox:
        """Admissions assumed and not yet written (not evicted meanwhile)."""

    @property
    def priority_rewrites(self) -> Mailbox:
        """Workloads whose priority class value changed."""

    @property
    def reactivated(self) -> Mailbox:
        """Workloads whose reactivation is to be written."""

    @property
    def requeue_holds(self) -> Mailbox:
        """Workloads whose Requeued condition is to turn True when due."""


class JobWorld(_Known, Protocol):
    """What the job controller needs."""

    @property
    def integrations(self) -> dict[str, Integration]:
        """The enabled job integrations by kind, bound to the Configuration."""

    @property
    def jobs(self) -> dict[names.JobKey, Body]:
        """The latest jobs of every integrated kind."""

    @property
    def dirty_jobs(self) -> mailbox.Mailbox[names.JobKey]:
        """Jobs to reconcile."""

    def classes(self) -> priority.PriorityClasses:
        """The priority classes known now."""

    def managed(self, job: Body) -> bool:
        """Tell whether Berth manages a Job."""

    def mark_job(self, key: names.JobKey) -> None:
        """Ask for a job to be reconciled again."""

    def pods_left(self, job_uid: str) -> int:
        """Pods of a job that exist and have not finished."""

    def workload_for_job(self, job: Body) -> names.WorkloadKey | None:
        """The Workload of a Job, if it exists."""


class UngaterWorld(_Known, Protocol):
    """What the ungater needs."""

    @property
    def jobs(self) -> dict[names.JobKey, Body]:
        """The latest jobs of every integrated kind."""

    @property
    def job_of_uid(self) -> dict[str, names.JobKey]:
        """Jobs by uid."""

    @property
    def placed_pods(self) -> placed_pods.PlacedPods:
        """Pods placed by topology, by the uid of the job that placed them."""

    @property
    def to_pin(self) -> mailbox.Mailbox[str]:
        """Uids of jobs whose placed pods wait at the topology gate."""

    def workload_for_job(self, job: Body) -> names.WorkloadKey | None:
        """The Workload of a Job, if it exists."""


class StatusWorld(Protocol):
    """What the queue status writer needs."""

    @property
    def clock(self) -> Callable[[], float]:
        """Seconds since the epoch, now."""

    @property
    def cache(self) -> cache_mod.Cache:
        """Queue objects and admissions."""

    @property
    def queues(self) -> manager.QueueManager:
        """The pending queues."""

    @property
    def workloads(self) -> dict[names.WorkloadKey, workload_view.WorkloadView]:
        """The latest stored Workloads."""

    @property
    def wake(self) -> Wakeups:
        """The tasks' wake-up signals."""


class FinalizerWorld(_Known, Protocol):
    """What the finalizer task needs."""

    @property
    def finalized(self) -> dict[tuple[str, str], Body]:
        """The latest ResourceFlavors and ClusterQueues, by (kind, name)."""

    def take_finalize_due(self) -> list[tuple[str, str]]:
        """Those to look at now: changed since the last look, or being deleted."""

    def finalize_again(self, key: tuple[str, str]) -> None:
        """Look at this one again on the next pass (its write failed)."""


class WebhookWorld(Protocol):
    """What the admission webhooks need."""

    @property
    def config(self) -> configuration.Configuration:
        """The Configuration."""

    @property
    def priorities(self) -> priorities.Registry:
        """The priority classes known now."""

    @property
    def integrations(self) -> dict[str, Integration]:
        """The enabled job integrations by kind, bound to the Configuration."""

    @property
    def jobs(self) -> Mapping[names.JobKey, Body]:
        """Every job of an enabled kind, as last seen."""

    def integration(self, job: Body) -> Integration:
        """The integration of a job body."""

    def managed(self, job: Body) -> bool:
        """Tell whether Berth manages a Job."""

    def parent_of(self, job: Body) -> job_sync.Parent | None:
        """The integrated parent a child job's controller reference names (None: no child)."""

    def job_seen(self, uid: str) -> Body | None:
        """The job of this uid, as last seen."""

    def local_queue_names(self, namespace: str) -> list[str]:
        """The LocalQueues of a namespace, by name."""

    def default_queue(self, job: Body) -> str | None:
        """The LocalQueue a managed job naming none is queued in, if any."""

    def admitted_for_job(self, job: Body) -> bool:
        """Tell whether a job's Workload is admitted now."""

    def pod_group(self, pod: Body) -> Body | None:
        """The group a member pod belongs to, as assembled now (None: not a member, or none)."""

    def workload_state(self, job: Body) -> job_updates.WorkloadState:
        """Where a Job's Workload stands."""
