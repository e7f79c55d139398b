"""Shrinking a diverging case to a minimal one that still diverges the same way.

`candidates` lists the one-step reductions of a case, largest first: drop a ClusterQueue (and
its workloads), a workload (and its steps), a finish step, a cohort (its queues and children
move to its parent), a pod set, a flavor of a queue, a priority class (its workloads keep the
value), then simplify: counts and requests to one, limits dropped, policies to their defaults.
Flavors, classes and cohorts nothing uses any more are dropped with each reduction.

`shrink` is greedy, as delta debugging is: it tries the candidates of the current case in
batches (one `Oracle` call each, so a batch runs side by side on Kueue's server) and moves to
the first that keeps the same `compare.DivergenceClass`, until none does or the budget of tries
is spent. Called by ``campaign``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from berth.api.clusterqueue import FungibilityPolicy, PreemptionPolicy, QueueingStrategy
from berth.devtools.differential import case, compare

_T = TypeVar("_T")

Oracle = Callable[[list[case.Case]], Awaitable[list[compare.Divergence | None]]]
"""Runs cases on both sides; the first divergence of each (None: they agree)."""


def _tidy(c: case.Case) -> case.Case:
    """Drop what no queue, cohort or workload uses any more."""
    names = {w.name for w in c.workloads}
    steps = tuple(s for s in c.steps if s.workload in names)
    used_cohorts: set[str] = {q.cohort for q in c.queues if q.cohort is not None}
    by_name = {co.name: co for co in c.cohorts}
    for name in list(used_cohorts):
        parent = by_name[name].parent if name in by_name else None
        while parent is not None:
            used_cohorts.add(parent)
            parent = by_name[parent].parent if parent in by_name else None
    cohorts = tuple(co for co in c.cohorts if co.name in used_cohorts)
    flavors_used = {fq.flavor for q in c.queues for g in q.groups for fq in g.flavors} | {
        fq.flavor for co in cohorts for g in co.groups for fq in g.flavors
    }
    classes_used = {w.priority_class for w in c.workloads}
    return dataclasses.replace(
        c,
        steps=steps,
        cohorts=cohorts,
        flavors=tuple(f for f in c.flavors if f in flavors_used),
        priority_classes=tuple(pc for pc in c.priority_classes if pc[0] in classes_used),
    )


def _without_cohort(c: case.Case, gone: case.Cohort) -> case.Case:
    parent = gone.parent
    queues = tuple(
        dataclasses.replace(q, cohort=parent) if q.cohort == gone.name else q for q in c.queues
    )
    queues = tuple(q if q.cohort is not None else _no_limits(q) for q in queues)
    cohorts = tuple(
        dataclasses.replace(co, parent=parent) if co.parent == gone.name else co
        for co in c.cohorts
        if co.name != gone.name
    )
    # A cohort that becomes a root may no longer lend or borrow (Kueue refuses the limits
    # without a parent), as a queue left without a cohort.
    cohorts = tuple(
        co if co.parent is not None else dataclasses.replace(co, groups=_unlimited(co.groups))
        for co in cohorts
    )
    return dataclasses.replace(c, queues=queues, cohorts=cohorts)


def _no_limits(q: case.ClusterQueue) -> case.ClusterQueue:
    return dataclasses.replace(q, groups=_unlimited(q.groups))


def _unlimited(groups: tuple[case.ResourceGroup, ...]) -> tuple[case.ResourceGroup, ...]:
    return tuple(
        dataclasses.replace(
            g,
            flavors=tuple(
                dataclasses.replace(
                    fq,
                    quotas=tuple(
                        dataclasses.replace(qu, borrowing_limit=None, lending_limit=None)
                        for qu in fq.quotas
                    ),
                )
                for fq in g.flavors
            ),
        )
        for g in groups
    )


def _replace_at(items: tuple[_T, ...], i: int, new: _T) -> tuple[_T, ...]:
    return (*items[:i], new, *items[i + 1 :])


def _structural(c: case.Case) -> Iterator[case.Case]:
    for q in c.queues:
        if len(c.queues) > 1:
            yield dataclasses.replace(
                c,
                queues=tuple(x for x in c.queues if x is not q),
                workloads=tuple(w for w in c.workloads if w.queue != q.name),
            )
    for w in c.workloads:
        if len(c.workloads) > 1:
            yield dataclasses.replace(c, workloads=tuple(x for x in c.workloads if x is not w))
    for i, s in enumerate(c.steps):
        if s.kind == case.StepKind.FINISH:
            yield dataclasses.replace(c, steps=c.steps[:i] + c.steps[i + 1 :])
    for co in c.cohorts:
        yield _without_cohort(c, co)
    for i, q in enumerate(c.queues):
        if q.cohort is not None and not any(co.name == q.cohort for co in c.cohorts):
            yield dataclasses.replace(
                c, queues=_replace_at(c.queues, i, _no_limits(dataclasses.replace(q, cohort=None)))
            )


def _parts(c: case.Case) -> Iterator[case.Case]:
    yield from _fewer_pod_sets(c)
    yield from _fewer_flavors(c)
    for name, _ in c.priority_classes:
        yield dataclasses.replace(
            c,
            workloads=tuple(
                dataclasses.replace(w, priority_class=None) if w.priority_class == name else w
                for w in c.workloads
            ),
        )
    for i, co in enumerate(c.cohorts):
        if co.groups:
            yield dataclasses.replace(
                c, cohorts=_replace_at(c.cohorts, i, dataclasses.replace(co, groups=()))
            )


def _fewer_pod_sets(c: case.Case) -> Iterator[case.Case]:
    for i, w in enumerate(c.workloads):
        if len(w.pod_sets) > 1:
            for j in range(len(w.pod_sets)):
                sets = w.pod_sets[:j] + w.pod_sets[j + 1 :]
                yield dataclasses.replace(
                    c, workloads=_replace_at(c.workloads, i, dataclasses.replace(w, pod_sets=sets))
                )


def _fewer_flavors(c: case.Case) -> Iterator[case.Case]:
    for i, q in enumerate(c.queues):
        for gi, g in enumerate(q.groups):
            if len(g.flavors) > 1:
                for fi in range(len(g.flavors)):
                    group = dataclasses.replace(g, flavors=g.flavors[:fi] + g.flavors[fi + 1 :])
                    queue = dataclasses.replace(q, groups=_replace_at(q.groups, gi, group))
                    yield dataclasses.replace(c, queues=_replace_at(c.queues, i, queue))


def _simpler(c: case.Case) -> Iterator[case.Case]:
    for i, w in enumerate(c.workloads):
        for j, ps in enumerate(w.pod_sets):
            if ps.count > 1:
                sets = _replace_at(w.pod_sets, j, dataclasses.replace(ps, count=1))
                yield dataclasses.replace(
                    c, workloads=_replace_at(c.workloads, i, dataclasses.replace(w, pod_sets=sets))
                )
    for i, q in enumerate(c.queues):
        simple = [
            _no_limits(q),
            dataclasses.replace(q, preemption=case.Preemption()),
            dataclasses.replace(q, strategy=QueueingStrategy.BEST_EFFORT_FIFO),
            dataclasses.replace(
                q,
                when_can_borrow=FungibilityPolicy.MAY_STOP_SEARCH,
                when_can_preempt=FungibilityPolicy.TRY_NEXT_FLAVOR,
            ),
            dataclasses.replace(
                q,
                preemption=dataclasses.replace(
                    q.preemption,
                    borrow_within_cohort=PreemptionPolicy.NEVER,
                    max_priority_threshold=None,
                ),
            ),
        ]
        for new in simple:
            if new != q:
                yield dataclasses.replace(c, queues=_replace_at(c.queues, i, new))


def candidates(c: case.Case) -> list[case.Case]:
    """The one-step reductions of a case, largest first, each tidied, without duplicates."""
    out: list[case.Case] = []
    for new in (*_structural(c), *_parts(c), *_simpler(c)):
        tidy = _tidy(new)
        if tidy != c and tidy not in out:
            out.append(tidy)
    return out


def size(c: case.Case) -> int:
    """A rough measure of a case, for the report."""
    return len(c.queues) + len(c.cohorts) + len(c.workloads) + len(c.steps)


async def shrink(
    c: case.Case,
    want: compare.DivergenceClass,
    oracle: Oracle,
    *,
    budget: int = 80,
    batch: int = 8,
) -> tuple[case.Case, compare.Divergence | None, int]:
    """The smallest case found that still diverges as ``want``; its divergence; tries spent."""
    best, found, tries = c, None, 0
    while tries < budget:
        pool = candidates(best)
        moved = False
        for start in range(0, len(pool), batch):
            chunk = pool[start : start + batch][: budget - tries]
            if not chunk:
                break
            tries += len(chunk)
            results = await oracle(chunk)
            hit = next((i for i, d in enumerate(results) if d is not None and d.kind == want), None)
            if hit is not None:
                best, found, moved = chunk[hit], results[hit], True
                break
            if tries >= budget:
                break
        if not moved:
            break
    return best, found, tries
