"""Random valid `case.Case`s from a seed: the differential campaign's inputs.

``generate(seed)`` is deterministic (one ``random.Random(seed)``), so a seed names a case for
ever. What it draws, all within what Kueue v0.19.2 validates and Berth implements:

1. the resources: GPUs, and CPU with probability one half; the layout of the resource groups:
   one group per resource, or (with CPU) one group covering both;
2. one to three flavors per group; each ClusterQueue lists a non-empty subset, in a random order;
3. a cohort tree: none, one flat cohort (an object or only named), or a root with one or two
   children and perhaps a grandchild; a cohort may hold GPU quota of its own;
4. one to four ClusterQueues: nominal quota, borrowing and lending limits (only in a cohort),
   StrictFIFO or BestEffortFIFO, whenCanBorrow and whenCanPreempt, the three preemption
   policies (borrowWithinCohort only with reclaimWithinCohort set, as Kueue's validation
   requires) and a maxPriorityThreshold;
5. up to three WorkloadPriorityClasses;
6. two to eight Workloads: one or two pod sets, one to four pods, requests per pod, a priority
   (a class's value, or a plain one);
7. the steps: every arrival, and for some workloads a later finish.

Fair sharing is not drawn: minimalkueue runs Kueue's scheduler with an empty Configuration, so
the reference has none (docs/benchmarks.md, differential). Called by ``campaign``.
"""

from __future__ import annotations

import random

from berth.api.clusterqueue import FungibilityPolicy, PreemptionPolicy, QueueingStrategy
from berth.devtools.differential import case

GPU = "nvidia.com/gpu"
CPU = "cpu"
GPU_FLAVORS = ("a100", "h100", "l4")
CPU_FLAVORS = ("cpu-x", "cpu-y")
SHARED_FLAVORS = ("node-a", "node-b", "node-c")
"""Flavors of a group covering both GPUs and CPU."""


def _subset(rng: random.Random, pool: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(rng.sample(pool, rng.randint(1, len(pool))))


def _layout(rng: random.Random) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """The resource groups as (covered resources, flavors offering them)."""
    gpu = (GPU,), GPU_FLAVORS[: rng.randint(1, 3)]
    if rng.random() < 0.5:
        return (gpu,)
    if rng.random() < 0.5:
        return (((GPU, CPU), SHARED_FLAVORS[: rng.randint(1, 3)]),)
    return (gpu, ((CPU,), CPU_FLAVORS[: rng.randint(1, 2)]))


def _nominal(rng: random.Random, resource: str) -> int:
    if resource == CPU:
        return rng.choice((0, 1000, 2000, 4000))
    return rng.randint(0, 8)


def _quota(rng: random.Random, resource: str, *, in_cohort: bool) -> case.Quota:
    nominal = _nominal(rng, resource)
    borrowing = lending = None
    if in_cohort and rng.random() < 0.25:
        borrowing = rng.randint(0, nominal + 4) if resource == GPU else rng.choice((0, 1000))
    if in_cohort and rng.random() < 0.25:
        lending = rng.randint(0, nominal) if resource == GPU else rng.choice((0, nominal))
    return case.Quota(resource, nominal, borrowing, lending)


def _queue_groups(
    rng: random.Random,
    layout: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...],
    *,
    in_cohort: bool,
) -> tuple[case.ResourceGroup, ...]:
    return tuple(
        case.ResourceGroup(
            resources,
            tuple(
                case.FlavorQuotas(f, tuple(_quota(rng, r, in_cohort=in_cohort) for r in resources))
                for f in _subset(rng, flavors)
            ),
        )
        for resources, flavors in layout
    )


def _cohorts(
    rng: random.Random, layout: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
) -> tuple[tuple[case.Cohort, ...], tuple[str, ...]]:
    """The Cohort objects, and the cohort names a ClusterQueue may join."""
    shape = rng.choice(("none", "flat", "flat-object", "tree", "deep"))
    if shape == "none":
        return (), ()
    if shape == "flat":
        return (), ("pool",)
    gpu_groups = [(r, f) for r, f in layout if r == (GPU,)]

    def own_quota(name: str, parent: str | None) -> case.Cohort:
        if not gpu_groups or rng.random() >= 0.3:
            return case.Cohort(name, parent)
        flavor = rng.choice(gpu_groups[0][1])
        lending = None
        nominal = rng.randint(0, 4)
        if parent is not None and rng.random() < 0.3:
            lending = rng.randint(0, nominal)
        quota = case.Quota(GPU, nominal, lending_limit=lending)
        group = case.ResourceGroup((GPU,), (case.FlavorQuotas(flavor, (quota,)),))
        return case.Cohort(name, parent, (group,))

    if shape == "flat-object":
        return (own_quota("pool", None),), ("pool",)
    cohorts = [own_quota("root", None), own_quota("left", "root")]
    if rng.random() < 0.6:
        cohorts.append(own_quota("right", "root"))
    if shape == "deep":
        cohorts.append(own_quota("leaf", "left"))
    return tuple(cohorts), tuple(c.name for c in cohorts)


def _preemption(rng: random.Random) -> case.Preemption:
    within = rng.choice(tuple(PreemptionPolicy)[:3])  # Never, LowerPriority, LowerOrNewerEqual
    reclaim = rng.choice(
        (PreemptionPolicy.NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY)
    )
    borrow = PreemptionPolicy.NEVER
    threshold = None
    if reclaim != PreemptionPolicy.NEVER and rng.random() < 0.4:
        borrow = PreemptionPolicy.LOWER_PRIORITY
        if rng.random() < 0.4:
            threshold = rng.choice((0, 5, 100))
    return case.Preemption(within, reclaim, borrow, threshold)


def _queues(
    rng: random.Random,
    layout: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...],
    cohort_names: tuple[str, ...],
) -> tuple[case.ClusterQueue, ...]:
    out = []
    for i in range(rng.randint(1, 4)):
        cohort = rng.choice(cohort_names) if cohort_names and rng.random() < 0.85 else None
        out.append(
            case.ClusterQueue(
                name=f"cq{i}",
                groups=_queue_groups(rng, layout, in_cohort=cohort is not None),
                cohort=cohort,
                strategy=rng.choice(
                    (QueueingStrategy.BEST_EFFORT_FIFO, QueueingStrategy.STRICT_FIFO)
                ),
                preemption=_preemption(rng),
                when_can_borrow=rng.choice(tuple(FungibilityPolicy)),
                when_can_preempt=rng.choice(tuple(FungibilityPolicy)),
            )
        )
    return tuple(out)


def _requests(rng: random.Random, resources: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    if CPU not in resources or rng.random() < 0.85:
        out.append((GPU, rng.randint(1, 4)))
    if CPU in resources and (not out or rng.random() < 0.6):
        out.append((CPU, rng.choice((250, 500, 1000))))
    return tuple(out)


def _workloads(
    rng: random.Random,
    queues: tuple[case.ClusterQueue, ...],
    classes: tuple[tuple[str, int], ...],
    resources: tuple[str, ...],
) -> tuple[case.Workload, ...]:
    out = []
    for i in range(rng.randint(2, 8)):
        pod_sets = tuple(
            case.PodSet(case.POD_SET_NAMES[j], rng.randint(1, 4), _requests(rng, resources))
            for j in range(1 if rng.random() < 0.8 else 2)
        )
        priority_class = None
        priority = rng.choice((0, 0, 1, 5, 10))
        if classes and rng.random() < 0.5:
            priority_class, priority = rng.choice(classes)
        out.append(
            case.Workload(f"w{i}", rng.choice(queues).name, pod_sets, priority, priority_class)
        )
    return tuple(out)


def _steps(rng: random.Random, workloads: tuple[case.Workload, ...]) -> tuple[case.Step, ...]:
    """Every arrival in a random order; a finish for some, at a random later step."""
    steps = [case.Step(case.StepKind.ARRIVE, w.name) for w in rng.sample(workloads, len(workloads))]
    for w in workloads:
        if rng.random() < 0.4:
            after = next(i for i, s in enumerate(steps) if s.workload == w.name)
            at = rng.randint(after + 1, len(steps))
            steps.insert(at, case.Step(case.StepKind.FINISH, w.name))
    return tuple(steps)


def generate(seed: int) -> case.Case:
    """The case of this seed."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test inputs, not secrets
    layout = _layout(rng)
    resources = tuple(r for covered, _ in layout for r in covered)
    flavors = tuple(f for _, fs in layout for f in fs)
    cohorts, cohort_names = _cohorts(rng, layout)
    queues = _queues(rng, layout, cohort_names)
    classes = tuple(
        (name, rng.choice((0, 1, 5, 10, 100, 1000)))
        for name in ("low", "mid", "high")[: rng.randint(0, 3)]
    )
    workloads = _workloads(rng, queues, classes, resources)
    return case.Case(
        seed=seed,
        flavors=flavors,
        cohorts=cohorts,
        queues=queues,
        priority_classes=classes,
        workloads=workloads,
        steps=_steps(rng, workloads),
    )
