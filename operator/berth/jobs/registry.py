"""Every job kind Berth integrates, made by Kueue's framework names: the only module naming them.

``make`` builds a kind's ``Integration`` (``jobs.framework.protocol``) by its framework name:
``batchjob.BatchJob``, ``jobset.JobSetJob``, ``kubeflow.KubeflowJob`` (the training-operator v1
kinds), ``trainjob.TrainJobJob`` (Trainer v2), ``ray.RayKind`` (RayJob, RayCluster) and
``pod.integration.PodGroupJob``; ``for_configuration`` makes those ``integrations.frameworks``
enables, bound to the Configuration so no flag is threaded through calls; ``CHILD_KINDS`` are
the children an integrated parent's controller makes, as the webhooks select them.

The simulator (``sim.intake``), the operator's World, job controller and webhooks, and the rules
(``jobs.rules``) all reach a kind through it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from berth.api import configuration
from berth.jobs import batchjob, jobset, kubeflow, ray, trainjob
from berth.jobs.framework import protocol
from berth.jobs.framework.protocol import Integration
from berth.jobs.pod import integration as pod_integration

UNSUPPORTED_OWNER_LABEL = "berth.dev/unsupported-owner"
"""On the Workload of a child job whose controller is a kind Berth does not integrate."""


@dataclasses.dataclass(frozen=True, slots=True)
class ChildKind:
    """A kind of child an integrated parent's controller makes, as the webhooks select it."""

    parent: str
    """The parent's kind."""
    group: str
    version: str
    plural: str
    label: str | None
    """The label the controller puts on every such child (a JobSet's name, the kind a RayJob's
    submitter Job comes from), which the hooks select on; None when it puts none of its own
    (the Trainer's JobSet), and every such object that names no queue is sent to the hooks."""


CHILD_KINDS = (
    ChildKind(jobset.KIND, "batch", "v1", "jobs", jobset.NAME_LABEL),
    ChildKind(ray.RAYJOB.kind, "batch", "v1", "jobs", ray.ORIGIN_KIND_LABEL),
    ChildKind(trainjob.KIND, jobset.GROUP, "v1alpha2", jobset.PLURAL, None),
)
"""The children the webhooks see, so a child cannot be started before its parent is admitted
(the Helm chart's webhook template lists the same, in this order)."""


_Factory = Callable[[bool, protocol.Watched | None], Integration]


def _kubeflow(kind: kubeflow.Kind) -> _Factory:
    return lambda honor, _watched: kubeflow.KubeflowJob(honor_kueue_labels=honor, spec=kind)


def _trainjob(honor: bool, watched: protocol.Watched | None) -> Integration:
    if watched is None:
        return trainjob.TrainJobJob(honor_kueue_labels=honor)
    return trainjob.TrainJobJob(honor_kueue_labels=honor, runtimes=watched)


_KINDS: dict[configuration.Framework, _Factory] = {
    configuration.Framework.BATCH_JOB: lambda h, _w: batchjob.BatchJob(honor_kueue_labels=h),
    configuration.Framework.JOBSET: lambda h, _w: jobset.JobSetJob(honor_kueue_labels=h),
    **{k.framework: _kubeflow(k) for k in kubeflow.KINDS},
    configuration.Framework.TRAINJOB: _trainjob,
    configuration.Framework.RAYJOB: lambda h, _w: ray.RayKind(
        honor_kueue_labels=h, shape=ray.RAYJOB
    ),
    configuration.Framework.RAYCLUSTER: lambda h, _w: ray.RayKind(
        honor_kueue_labels=h, shape=ray.RAYCLUSTER
    ),
    configuration.Framework.POD: lambda h, _w: pod_integration.PodGroupJob(honor_kueue_labels=h),
}
"""Every kind by its framework name: adding a kind is its module and one entry here."""


def make(
    framework: configuration.Framework,
    *,
    honor_kueue_labels: bool = False,
    watched: protocol.Watched | None = None,
) -> Integration:
    """The integration a framework name in ``integrations.frameworks`` names (Kueue's names).

    ``watched``: the objects a ``Watching`` kind reads (a TrainJob's runtimes; none known by
    default), kept current by the caller.
    """
    return _KINDS[framework](honor_kueue_labels, watched)


EVERY_KIND: tuple[Integration, ...] = tuple(make(f) for f in configuration.Framework)
"""One integration of every kind Berth knows (Kueue's labels off): what may be read, not what
a Configuration enables."""


def every_kind(watched: protocol.Watched) -> tuple[Integration, ...]:
    """``EVERY_KIND``, reading ``watched`` (a scenario's runtimes, to check its TrainJobs)."""
    return tuple(make(f, watched=watched) for f in configuration.Framework)


def for_configuration(
    config: configuration.Configuration, watched: protocol.Watched | None = None
) -> dict[str, Integration]:
    """The integrations the Configuration enables, by job kind, bound to its settings.

    ``watched``: the objects ``Watching`` kinds read, kept current by the caller.

    ``batch/job`` is always on: Berth's own guards (the Job webhooks, the child-Job rules) rest
    on it. Unknown names are refused when the Configuration is loaded (``api.configuration``).
    """
    out: dict[str, Integration] = {}
    for name in [configuration.Framework.BATCH_JOB, *config.integrations.frameworks]:
        made = make(name, honor_kueue_labels=config.honor_kueue_labels, watched=watched)
        out[made.kind] = made
    return out


def watched_kinds(enabled: Mapping[str, Integration]) -> dict[str, protocol.WatchingIntegration]:
    """Each kind of object the enabled kinds read, with the kind that reads it."""
    return {
        w.kind: integ
        for integ in enabled.values()
        if isinstance(integ, protocol.WatchingIntegration)
        for w in integ.watched
    }


def by_api_version(
    enabled: Mapping[str, Integration], api_version: str, kind: str
) -> Integration | None:
    """The enabled integration of an object of this apiVersion and kind, if any.

    Any version of the integration's group matches.
    """
    found = enabled.get(kind)
    if found is None:
        return None
    return found if api_version.rpartition("/")[0] == found.api_version.rpartition("/")[0] else None
