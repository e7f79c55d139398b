"""The pure half of the Kubeflow Trainer v2 integration (``trainer.kubeflow.org`` TrainJob).

A TrainJob names a runtime (``spec.runtimeRef``: a ClusterTrainingRuntime, or a TrainingRuntime
of its namespace) whose template is a JobSet; the Trainer's controller makes that JobSet, named
as the TrainJob, from the runtime and the TrainJob. Berth reads the pod sets off the JobSet the
Trainer would make, as Kueue does (``pkg/controller/jobs/trainjob``, which runs the Trainer's
own runtime code; here its rules at Trainer v2.3.0, ``pkg/runtime/core/trainingruntime.go``,
``pkg/runtime/framework/plugins``):

1. The runtime's ``spec.template.spec.replicatedJobs``, in order, with every ``runtimePatches``
   entry of another manager applied as a strategic merge patch (lists of named things merge by
   name; other lists are replaced; ``null`` removes). Berth's own entry (``PATCH_MANAGER``) is
   the placement of an admission and is not part of the pod sets.
2. Each replicated job runs ``parallelism`` pods per replica (default 1). The one labelled
   ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` runs ``mlPolicy.numNodes`` when the
   runtime has an ``mlPolicy``, and ``spec.trainer.numNodes`` when the TrainJob sets it; under
   an MPI policy ``numNodes`` goes to the replicated job named ``node`` instead (one fewer when
   the launcher runs as a node). The trainer and initializer steps run one replica; others run
   the runtime's ``replicas``.
3. ``spec.trainer.resourcesPerNode`` is merged into the resources of the container named
   ``node`` of the trainer step (and of the ``node`` job of an MPI launcher-as-node runtime).

One pod set per replicated job, as for a JobSet (``jobs.jobset``): replicas x pods per replica.
Admitted whole only, as Kueue. **Start** writes Berth's ``runtimePatches`` entry (each replicated
job's pod template: the ``berth.dev/podset`` label, node selector and tolerations, merged with the
template's own since a patch replaces a list) and unsuspends in one write, which the Trainer's
webhook allows; **stop** suspends; **restore** removes Berth's entry. Finished on a ``Complete``
or ``Failed`` condition; pods ready when every child Job is ready or succeeded.

The runtimes are read from ``Runtimes`` (the objects as stored, by ``RuntimeKey``): the
operator's watch of both runtime kinds, or the simulator's documents. Used through
``jobs.trainjob.TrainJobJob``.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from berth.api import bodies, errors, workload
from berth.api.bodies import Body
from berth.jobs import jobset
from berth.jobs.framework import labelled, merge, podsets, protocol, workload_body
from berth.jobs.framework.protocol import PodSetOriginal, PodSetRun

KIND = "TrainJob"
GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
PLURAL = "trainjobs"
CLUSTER_RUNTIME = "ClusterTrainingRuntime"
NAMESPACED_RUNTIME = "TrainingRuntime"
RUNTIME_PLURALS = {
    CLUSTER_RUNTIME: "clustertrainingruntimes",
    NAMESPACED_RUNTIME: "trainingruntimes",
}
"""The two runtime kinds (same group and version as the TrainJob), by kind."""
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
_TRAINER = "trainer"
_ONE_REPLICA = frozenset({_TRAINER, "dataset-initializer", "model-initializer"})
_NODE = "node"
PATCH_MANAGER = "berth.dev/manager"
"""The ``manager`` of Berth's ``runtimePatches`` entry (Kueue's is ``kueue.x-k8s.io/manager``)."""

_MERGE_KEYS = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "schedulingGates": "name",
    "imagePullSecrets": "name",
}
"""The lists a runtime patch merges by key (Kubernetes' ``patchMergeKey``s on these fields)."""


RuntimeKey = protocol.ObjectKey
"""A runtime: its kind, its namespace ('' for a ClusterTrainingRuntime) and its name."""
Runtimes = protocol.Watched
"""The runtimes known, as stored, by key."""
WATCHED = tuple(
    protocol.WatchedKind(kind, API_VERSION, plural, namespaced=kind != CLUSTER_RUNTIME)
    for kind, plural in RUNTIME_PLURALS.items()
)
"""The runtimes, as the operator watches them."""


def key_of(runtime: Body) -> RuntimeKey | None:
    """The key of a runtime object (None when it is no runtime)."""
    kind = str(runtime.get("kind") or "")
    if kind not in RUNTIME_PLURALS:
        return None
    meta = bodies.meta(runtime)
    namespace = "" if kind == CLUSTER_RUNTIME else str(meta.get("namespace") or "")
    return RuntimeKey(kind, namespace, str(meta.get("name") or ""))


def runtime_ref(job: Body) -> RuntimeKey | errors.FieldError:
    """The runtime a TrainJob names, with the API's defaults, or why the reference is invalid."""
    ref = (job.get("spec") or {}).get("runtimeRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return errors.FieldError("spec.runtimeRef.name", "required; name the training runtime")
    group = ref.get("apiGroup") or GROUP
    kind = ref.get("kind") or CLUSTER_RUNTIME
    if group != GROUP or kind not in RUNTIME_PLURALS:
        return errors.FieldError(
            "spec.runtimeRef",
            f"must name a {CLUSTER_RUNTIME} or {NAMESPACED_RUNTIME} of {GROUP}, not {kind} of "
            f"{group}",
        )
    namespace = "" if kind == CLUSTER_RUNTIME else bodies.namespace(job, "default")
    return RuntimeKey(kind, namespace, str(ref["name"]))


def _patches(job: Body) -> list[Body]:
    found = (job.get("spec") or {}).get("runtimePatches")
    return [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def _patch_spec(entry: Body) -> Body | None:
    spec = ((entry.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
    return spec if isinstance(spec, dict) else None


def _ancestor(rjob: Body) -> str | None:
    labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
    found = labels.get(ANCESTOR_LABEL)
    return None if found is None else str(found)


def _node_container(rjob: Body) -> Body | None:
    pod_spec = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
    for container in (pod_spec.get("spec") or {}).get("containers") or []:
        if isinstance(container, dict) and container.get("name") == _NODE:
            return container
    return None


def _int(value: Any, default: int) -> int:  # noqa: ANN401 - a JSON value
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _mapping(value: Any) -> Body:  # noqa: ANN401 - a JSON value
    return value if isinstance(value, dict) else {}


def _positive(value: Any) -> bool:  # noqa: ANN401 - a JSON value
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _trainer_problems(job: Body) -> list[errors.FieldError]:
    """What is wrong with the TrainJob's ``spec.trainer`` (its sizes and resources)."""
    trainer = (job.get("spec") or {}).get("trainer")
    if trainer is None:
        return []
    if not isinstance(trainer, dict):
        return [errors.FieldError("spec.trainer", "must be a mapping")]
    out = []
    if trainer.get("numNodes") is not None and not _positive(trainer["numNodes"]):
        out.append(errors.FieldError("spec.trainer.numNodes", "must be a positive integer"))
    if trainer.get("resourcesPerNode") is not None and not isinstance(
        trainer["resourcesPerNode"], dict
    ):
        out.append(
            errors.FieldError(
                "spec.trainer.resourcesPerNode", "must be a mapping of limits and requests"
            )
        )
    return out


def _runtime_problems(runtime: Body) -> list[str]:
    """What keeps a runtime from making a JobSet, as ``field: why`` in the runtime's terms."""
    spec = runtime.get("spec")
    if not isinstance(spec, dict):
        return ["spec: must be a mapping"]
    out = []
    policy = spec.get("mlPolicy")
    if policy is not None and not isinstance(policy, dict):
        out.append("spec.mlPolicy: must be a mapping")
    elif (
        policy is not None
        and policy.get("numNodes") is not None
        and not _positive(policy["numNodes"])
    ):
        out.append("spec.mlPolicy.numNodes: must be a positive integer")
    template_spec = _mapping(_mapping(spec.get("template")).get("spec"))
    out += [
        f"spec.template.{p.path}: {p.message}" for p in jobset.problems({"spec": template_spec})
    ]
    return out


def jobset_spec(
    job: Body, runtime: Body, *, with_own_patch: bool = False
) -> tuple[Body, list[errors.FieldError]]:
    """The JobSet spec the Trainer makes for ``job`` from ``runtime``, or why it cannot.

    ``with_own_patch``: Berth's own ``runtimePatches`` entry applied too (the JobSet as it runs).
    """
    key = key_of(runtime)
    broken = [
        errors.FieldError("spec.runtimeRef", f"{key}: {why}; fix it or name another runtime")
        for why in _runtime_problems(runtime)
    ]
    problems = _trainer_problems(job)
    if broken:
        return {}, broken + problems
    rt_spec = runtime["spec"]
    rjobs = rt_spec["template"]["spec"]["replicatedJobs"]
    spec: Body = {"replicatedJobs": copy.deepcopy(rjobs)}
    names = [str(r["name"]) for r in rjobs]
    for i, entry in enumerate(_patches(job)):
        if entry.get("manager") == PATCH_MANAGER and not with_own_patch:
            continue
        patch = _patch_spec(entry)
        if patch is None:
            continue
        problems += _patch_problems(patch, names, f"spec.runtimePatches[{i}]")
        spec = merge.strategic_merge_patch(spec, patch, _MERGE_KEYS)
    if not problems:
        # A patch may set what a runtime may not (a template that is no mapping, say).
        problems = [
            errors.FieldError("spec.runtimePatches", f"the runtime once patched: {p}")
            for p in jobset.problems({"spec": spec})
        ]
    if problems:
        return {}, problems
    # A merge by name may reorder; the runtime's order is the pod sets' order (as the Trainer).
    by_name = {r.get("name"): r for r in spec["replicatedJobs"]}
    spec["replicatedJobs"] = [by_name[n] for n in names]
    _size(job, rt_spec.get("mlPolicy"), spec["replicatedJobs"])
    return spec, []


def _patch_problems(patch: Body, names: list[str], path: str) -> list[errors.FieldError]:
    """A runtime patch may only name the runtime's replicated jobs (as the Trainer's webhook)."""
    where = f"{path}.trainingRuntimeSpec.template.spec.replicatedJobs"
    rjob_patches = patch.get("replicatedJobs", [])
    if not isinstance(rjob_patches, list):
        return [errors.FieldError(where, "must be a list")]
    out = []
    for j, rjob_patch in enumerate(rjob_patches):
        name = rjob_patch.get("name") if isinstance(rjob_patch, dict) else None
        if name not in names:
            out.append(
                errors.FieldError(
                    f"{where}[{j}].name",
                    f"the runtime has no replicated job {name!r}; name one of {', '.join(names)}",
                )
            )
    return out


def _size(job: Body, ml_policy: Any, rjobs: list[Body]) -> None:  # noqa: ANN401 - a JSON value
    """Set each replicated job's replicas, pods per replica and trainer resources in place."""
    trainer = (job.get("spec") or {}).get("trainer") or {}
    num_nodes = trainer.get("numNodes")
    policy = ml_policy if isinstance(ml_policy, dict) else None
    mpi = (policy or {}).get("mpi")
    launcher_as_node = isinstance(mpi, dict) and bool(mpi.get("runLauncherAsNode"))
    resources = trainer.get("resourcesPerNode")
    for rjob in rjobs:
        ancestor = _ancestor(rjob)
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        count = _int(job_spec.get("parallelism"), 1)
        if ancestor == _TRAINER and policy is not None:
            count = _int(policy.get("numNodes"), 1)
        if isinstance(num_nodes, int):
            if mpi is not None and rjob.get("name") == _NODE:
                count = max(num_nodes - 1, 1) if launcher_as_node else num_nodes
            elif mpi is None and ancestor == _TRAINER:
                count = num_nodes
        job_spec["parallelism"] = job_spec["completions"] = count
        if ancestor in _ONE_REPLICA:
            rjob["replicas"] = 1
        trainer_step = ancestor == _TRAINER and policy is not None
        launcher_node = launcher_as_node and rjob.get("name") == _NODE
        container = _node_container(rjob)
        if (
            isinstance(resources, dict)
            and container is not None
            and (trainer_step or launcher_node)
        ):
            container["resources"] = merge.strategic_merge_patch(
                container.get("resources") or {}, resources, _MERGE_KEYS
            )


def _runtime(job: Body, runtimes: Runtimes) -> tuple[Body | None, list[errors.FieldError]]:
    key = runtime_ref(job)
    if isinstance(key, errors.FieldError):
        return None, [key]
    found = runtimes.get(key)
    if found is None:
        return None, [
            errors.FieldError(
                "spec.runtimeRef",
                f"{key} does not exist; create it first or name a runtime that exists",
            )
        ]
    return found, []


def as_jobset(
    job: Body, runtimes: Runtimes, *, with_own_patch: bool = False
) -> tuple[Body | None, list[errors.FieldError]]:
    """The JobSet the Trainer makes for ``job`` (named and labelled as it), or why none."""
    runtime, problems = _runtime(job, runtimes)
    if runtime is None:
        return None, problems
    spec, problems = jobset_spec(job, runtime, with_own_patch=with_own_patch)
    if problems:
        return None, problems
    return {
        "apiVersion": jobset.API_VERSION,
        "kind": jobset.KIND,
        "metadata": copy.deepcopy(job.get("metadata") or {}),
        "spec": spec,
    }, []


def to_workload(
    job: Body, runtimes: Runtimes, *, uid: str, honor_kueue: bool = False
) -> tuple[workload.Workload | None, list[errors.FieldError]]:
    """Build the Workload of a TrainJob, or return the field errors that prevent it."""
    made, problems = as_jobset(job, runtimes)
    if made is None:
        return None, problems
    pod_sets = [
        {
            "name": str(rjob["name"]),
            "count": jobset.pod_set_count(rjob),
            "template": rjob["template"]["spec"].get("template") or {},
        }
        for rjob in made["spec"]["replicatedJobs"]
    ]
    return workload_body.build_workload(
        job,
        uid=uid,
        pod_sets=pod_sets,
        honor_kueue=honor_kueue,
        role=lambda i: (None, f"runtime replicatedJobs[{i}].template.spec.template"),
        kind=KIND,
        group=GROUP,
        runtime_limit=workload_body.deadline(job.get("spec") or {}),
    )


def child_as_made(job: Body, runtimes: Runtimes, child: Body) -> Body | str:
    """The JobSet the Trainer makes for ``job`` under the child's name, or why none is.

    The Trainer makes one JobSet, named as the TrainJob, with Berth's placement applied.
    """
    if str(child.get("kind") or "") != jobset.KIND:
        return f"kind: the Trainer makes a JobSet only, not a {child.get('kind')}"
    name = bodies.name(job)
    if bodies.name(child) != name:
        return f"metadata.name: TrainJob {name} makes the JobSet {name} only"
    made, problems = as_jobset(job, runtimes, with_own_patch=True)
    if made is None:
        return "; ".join(str(p) for p in problems)
    made["metadata"] = child.get("metadata") or {}
    return made


def priority_class(job: Body, runtimes: Runtimes) -> str | None:
    """The first replicated job's pod template that names a ``priorityClassName``, if any."""
    made, _ = as_jobset(job, runtimes)
    return None if made is None else jobset.priority_class(made)


def pod_count(job: Body, runtimes: Runtimes) -> int:
    """Pods the TrainJob runs at once (0 while its runtime is unknown)."""
    made, _ = as_jobset(job, runtimes)
    return 0 if made is None else jobset.pod_count(made)


def _own_entry(templates: Mapping[str, Body]) -> Body:
    return {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": name, "template": {"spec": {"template": template}}}
                        for name, template in templates.items()
                    ]
                }
            }
        },
    }


def start_patch(
    job: Body,
    originals: Mapping[str, Body],
    placements: Mapping[str, list[podsets.FlavorPlacement]],
) -> Body:
    """The merge patch that starts a TrainJob: Berth's runtime patch, and unsuspended.

    ``originals`` are the pod templates the Workload recorded, by pod set (replicated job) name.
    Each entry carries the whole node selector and tolerations (the template's own and the
    flavors'): a strategic merge patch replaces a list whole.
    """
    templates = {}
    for name, original in originals.items():
        labels, selector, tolerations = podsets.placed(
            original, pod_set=name, flavors=placements.get(name, [])
        )
        spec: Body = {"nodeSelector": selector} if selector else {}
        if tolerations:
            spec["tolerations"] = tolerations
        templates[name] = {"metadata": {"labels": labels}, **({"spec": spec} if spec else {})}
    others = [p for p in _patches(job) if p.get("manager") != PATCH_MANAGER]
    return {"spec": {"suspend": False, "runtimePatches": [*others, _own_entry(templates)]}}


def restore_patch(job: Body) -> Body | None:
    """The merge patch removing Berth's runtime patch from a stopped TrainJob (None: none)."""
    patches = _patches(job)
    others = [p for p in patches if p.get("manager") != PATCH_MANAGER]
    if len(others) == len(patches):
        return None
    return {"spec": {"runtimePatches": others or None}}


def is_suspended(job: Body) -> bool:
    """``spec.suspend``."""
    return bool((job.get("spec") or {}).get("suspend"))


def finished(job: Body) -> tuple[bool, bool]:
    """Tell whether the TrainJob finished (``Complete`` or ``Failed``) and whether it succeeded."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in {"Complete", "Failed"}:
            return True, c.get("type") == "Complete"
    return False, False


def _statuses(job: Body) -> list[Body]:
    found = (job.get("status") or {}).get("jobsStatus")
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def pods_ready(job: Body, runtimes: Runtimes) -> bool:
    """Every child Job ready or succeeded (as Kueue: their sum equals the replicas of all)."""
    made, _ = as_jobset(job, runtimes)
    if made is None:
        return False
    wanted = sum(jobset.replicas(r) for r in made["spec"]["replicatedJobs"])
    ready = sum(_int(s.get("ready"), 0) + _int(s.get("succeeded"), 0) for s in _statuses(job))
    return ready >= wanted


def active_jobs(job: Body) -> int:
    """Child Jobs that still have active pods, by the TrainJob's status."""
    return sum(_int(s.get("active"), 0) for s in _statuses(job))


@dataclasses.dataclass(frozen=True, slots=True)
class TrainJobJob(labelled.Labelled):
    """The Kubeflow Trainer v2 TrainJob: its runtime's JobSet, a pod set per replicated job.

    It reads the runtime the TrainJob names from ``runtimes``: it is ``Watching`` them.
    """

    runtimes: Runtimes = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}), compare=False
    )
    """The training runtimes known, by key (the operator's watch or the simulator's documents)."""

    @property
    def watched(self) -> tuple[protocol.WatchedKind, ...]:
        """ClusterTrainingRuntimes and TrainingRuntimes."""
        return WATCHED

    def key_of(self, obj: Body) -> protocol.ObjectKey | None:
        """A runtime's key (None for anything else)."""
        return key_of(obj)

    def reads(self, job: Body) -> protocol.ObjectKey | None:
        """The runtime a TrainJob names (None when its reference is invalid)."""
        found = runtime_ref(job)
        return found if isinstance(found, protocol.ObjectKey) else None

    def object_problems(self, obj: Body) -> list[errors.FieldError]:
        """A runtime's template must be a JobSet spec with replicated jobs."""
        replicated = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        if isinstance(replicated.get("replicatedJobs"), list):
            return []
        return [
            errors.FieldError(
                "spec.template.spec.replicatedJobs",
                "required; a runtime's template is a JobSet spec",
            )
        ]

    @property
    def kind(self) -> str:
        """The job's kind."""
        return KIND

    @property
    def api_version(self) -> str:
        """The job's apiVersion."""
        return API_VERSION

    @property
    def plural(self) -> str:
        """``trainjobs``."""
        return PLURAL

    @property
    def size_field(self) -> str:
        """``spec.trainer.numNodes`` (and the runtime's replicated jobs)."""
        return "spec.trainer.numNodes"

    def count_field(self, job: Body, pod_set: str) -> str:  # noqa: ARG002 - one field sizes all
        """``spec.trainer.numNodes`` (the runtime's replicated jobs size the rest)."""
        return "spec.trainer.numNodes"

    def pod_selector(self, job: Body) -> str:
        """The JobSet controller's label on every pod: the JobSet is named as the TrainJob."""
        return f"{jobset.NAME_LABEL}={(job.get('metadata') or {}).get('name')}"

    def pod_count(self, job: Body) -> int:
        """Pods over every replicated job of the JobSet the Trainer makes."""
        return pod_count(job, self.runtimes)

    def pod_priority_class(self, job: Body) -> str | None:
        """The first replicated job's pod template that names a ``priorityClassName``."""
        return priority_class(job, self.runtimes)

    def to_workload(
        self, job: Body, *, uid: str
    ) -> tuple[workload.Workload | None, list[errors.FieldError]]:
        """The TrainJob's Workload, or the field errors that prevent it."""
        return to_workload(job, self.runtimes, uid=uid, honor_kueue=self.honor_kueue_labels)

    def child_as_made(self, job: Body, child: Body) -> Body | str:
        """The JobSet the Trainer makes under the child's name, or why none is."""
        return child_as_made(job, self.runtimes, child)

    def start_patch(
        self, job: Body, originals: list[PodSetOriginal], runs: list[PodSetRun]
    ) -> Body:
        """Berth's runtime patch (each pod set's flavors), unsuspended; whole only."""
        return start_patch(
            job,
            {o.name: o.template for o in originals},
            {r.name: list(r.placements) for r in runs},
        )

    def stop_patch(self, job: Body) -> Body:  # noqa: ARG002 - the same patch stops every TrainJob
        """``spec.suspend`` (the Trainer suspends its JobSet)."""
        return {"spec": {"suspend": True}}

    def restore_patch(self, job: Body, originals: list[PodSetOriginal]) -> Body | None:  # noqa: ARG002 - Berth's patch is all it changed
        """Berth's runtime patch removed."""
        return restore_patch(job)

    def is_suspended(self, job: Body) -> bool:
        """``spec.suspend``."""
        return is_suspended(job)

    def finished(self, job: Body) -> tuple[bool, bool]:
        """A ``Complete`` or ``Failed`` condition."""
        return finished(job)

    def pods_ready(self, job: Body, count: int) -> bool:  # noqa: ARG002 - child Jobs report readiness
        """Every child Job ready or succeeded."""
        return pods_ready(job, self.runtimes)

    def active_pods(self, job: Body) -> int:
        """Child Jobs with active pods (the status counts Jobs, not pods)."""
        return active_jobs(job)
