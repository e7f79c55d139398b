"""Two traces of one case compared point by point: the divergences, each with its class.

At each quiescent point (``observation.Point``) the comparison looks, in order, at:
1. the preemptions made while reaching it (victim, reason, preemptor), as multisets;
2. the admitted set: workloads admitted on one side only;
3. for a workload admitted on both: its ClusterQueue, and per pod set its count and flavors;
4. the pending reason of a workload pending on both, where both gave one (Kueue v0.19.2 writes
   its granular reasons only under the ``UnadmittedWorkloadsObservability`` gate, off by
   default and not settable in minimalkueue, so its reason is mostly the generic ``Pending``).

Pending messages are recorded (``observation.Point.pending_messages``) but not compared: Kueue's
is that of its latest attempt, and when Kueue attempts a parked workload again is its own timing
(the 1 s requeue batch; with ``FlavorFungibilityPreserveScanProgress`` a workload with two pod
sets even alternates between two messages, ``kueue_run._decision``).

Later points follow from earlier ones, so a case is classified by its first diverging point
and, within it, by the first criterion above that differs (`first`). A run that failed (invalid
input for Berth, a step Kueue never settled) is a divergence of its own class. Called by
``campaign`` and ``shrink``.
"""

from __future__ import annotations

import dataclasses
import enum

from berth.devtools.differential import observation


class DivergenceClass(enum.StrEnum):
    """What differs, in the order the comparison looks."""

    PREEMPTIONS = "preemptions"
    ADMITTED_SET = "admitted set"
    ASSIGNMENT = "flavors and counts"
    PENDING_REASON = "pending reason"
    BERTH_ERROR = "Berth refused the input"
    KUEUE_ERROR = "Kueue run failed"


@dataclasses.dataclass(frozen=True, slots=True)
class Divergence:
    """One difference at one step."""

    kind: DivergenceClass
    step: int
    detail: str

    def __str__(self) -> str:
        return f"step {self.step}: {self.kind.value}: {self.detail}"


def _point(step: int, kueue: observation.Point, berth: observation.Point) -> list[Divergence]:
    out = []
    if kueue.preemptions != berth.preemptions:
        out.append(
            Divergence(
                DivergenceClass.PREEMPTIONS,
                step,
                f"Kueue [{', '.join(map(str, kueue.preemptions))}], "
                f"Berth [{', '.join(map(str, berth.preemptions))}]",
            )
        )
    only_kueue = sorted(kueue.admitted.keys() - berth.admitted.keys())
    only_berth = sorted(berth.admitted.keys() - kueue.admitted.keys())
    if only_kueue or only_berth:
        out.append(
            Divergence(
                DivergenceClass.ADMITTED_SET,
                step,
                f"admitted by Kueue only {[f'{n} {kueue.admitted[n]}' for n in only_kueue]}, "
                f"by Berth only {[f'{n} {berth.admitted[n]}' for n in only_berth]}",
            )
        )
    out += [
        Divergence(
            DivergenceClass.ASSIGNMENT,
            step,
            f"{name}: Kueue {kueue.admitted[name]}, Berth {berth.admitted[name]}",
        )
        for name in sorted(kueue.admitted.keys() & berth.admitted.keys())
        if kueue.admitted[name] != berth.admitted[name]
    ]
    out += [
        Divergence(
            DivergenceClass.PENDING_REASON,
            step,
            f"{name}: Kueue {kueue.pending_reasons[name]}, Berth {berth.pending_reasons[name]}",
        )
        for name in sorted(kueue.pending_reasons.keys() & berth.pending_reasons.keys())
        if kueue.pending_reasons[name] != berth.pending_reasons[name]
    ]
    return out


def divergences(kueue: observation.Trace, berth: observation.Trace) -> list[Divergence]:
    """Every divergence between the two traces, in step order."""
    if berth.error is not None:
        return [Divergence(DivergenceClass.BERTH_ERROR, 0, berth.error)]
    out = []
    for step, (k, b) in enumerate(zip(kueue.points, berth.points, strict=False)):
        out += _point(step, k, b)
    if kueue.error is not None:
        out.append(Divergence(DivergenceClass.KUEUE_ERROR, len(kueue.points), kueue.error))
    return out


def first(found: list[Divergence]) -> Divergence | None:
    """The divergence that classifies a case: its earliest step, then the first criterion."""
    order = list(DivergenceClass)
    return min(found, key=lambda d: (d.step, order.index(d.kind)), default=None)
