"""What every job kind reads alike: its LocalQueue and WorkloadPriorityClass, from its labels.

``queue_name`` and ``priority_class`` read Berth's labels (and, under ``honorKueueLabels``,
Kueue's); ``Labelled`` is the part of every kind's ``Integration`` that answers them, bound to
that setting. Used by every kind, the Workload body and the rules.
"""

from __future__ import annotations

import dataclasses

from berth.api import bodies
from berth.api.bodies import Body
from berth.api.labels import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL, PRIORITY_LABEL, QUEUE_LABEL


def _label(job: Body, key: str, fallback: str | None, honor_kueue: bool) -> str | None:
    labels = bodies.labels_of(job)
    value = labels.get(key)
    if value is None and honor_kueue and fallback is not None:
        value = labels.get(fallback)
    return None if value is None else str(value)


def queue_name(job: Body, *, honor_kueue: bool = False) -> str | None:
    """The LocalQueue a Job names, if any."""
    return _label(job, QUEUE_LABEL, KUEUE_QUEUE_LABEL, honor_kueue)


def priority_class(job: Body, *, honor_kueue: bool = False) -> str | None:
    """The WorkloadPriorityClass a Job names, if any."""
    return _label(job, PRIORITY_LABEL, KUEUE_PRIORITY_LABEL, honor_kueue)


@dataclasses.dataclass(frozen=True, slots=True)
class Labelled:
    """What every kind reads alike: the queue and priority class from the job's labels."""

    honor_kueue_labels: bool = False
    """Also read Kueue's ``kueue.x-k8s.io/*`` labels and annotations (migration)."""

    def queue_name(self, job: Body) -> str | None:
        """The LocalQueue the job names, if any."""
        return queue_name(job, honor_kueue=self.honor_kueue_labels)

    def priority_class(self, job: Body) -> str | None:
        """The WorkloadPriorityClass the job names, if any."""
        return priority_class(job, honor_kueue=self.honor_kueue_labels)
