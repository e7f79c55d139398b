"""Every ordering the scheduler uses, each as numbered criteria ending in a tie-breaker.

Called by ``berth.state.queues`` (order inside a ClusterQueue), ``berth.core.cycle`` (order of
entries across ClusterQueues) and ``berth.core.preemption`` (order of preemption candidates).
"""

from __future__ import annotations

from collections.abc import Callable

from berth.core import snapshot, workload


def queue_key(info: workload.WorkloadInfo, *, sticky: bool = False) -> tuple[bool, int, float, str]:
    """Order of pending workloads inside one ClusterQueue.

    1. The sticky preemptor first (BestEffortFIFO: a workload that issued preemptions keeps the
       head until it is admitted, found inadmissible or deleted).
    2. Higher priority first.
    3. Earlier queue-order time first (creation, or eviction time after a pods-ready timeout).
    4. Tie-breaker: uid.
    """
    return (not sticky, -info.priority, info.order_time, info.uid)


def entry_key(
    preemptor: bool, borrowing: int, info: workload.WorkloadInfo, usage: float = 0.0
) -> tuple[bool, int, float, int, float]:
    """Order of nominated heads across ClusterQueues within one cycle (classical mode).

    1. Preemptors first: a workload that already evicted victims takes the room it made before
       anyone else can (Kueue's ``PrioritizePreemptorWorkloads``, on in Berth: without it a
       victim can win the freed room back and be preempted again, forever).
    2. Lower borrowing level first: entries within nominal quota before borrowing ones.
    3. In a root cohort whose ``admissionScope`` is usage-based (Berth's own, Slurm's fair-share
       tree): the ClusterQueue with the lower decayed usage over its weight first (``usage``).
    4. Higher priority first.
    5. Earlier queue-order time first.
    Ties keep the order of the heads (ClusterQueue name), as a stable sort does.
    """
    return (not preemptor, borrowing, usage, -info.priority, info.order_time)


def candidate_key(
    candidate: snapshot.AdmittedWorkload,
    preemptor_cq: str,
    score: Callable[[snapshot.AdmittedWorkload], float] | None = None,
) -> tuple[bool, bool, float, int, float, str]:
    """Order of preemption candidates (the first is preempted first).

    1. Workloads already evicted first (their quota is on its way back anyway).
    2. Workloads of other ClusterQueues before those of the preemptor's own queue.
    3. Under admission fair sharing (``score``, the preemptor's queue's), among those of the
       preemptor's own queue: the LocalQueue with the higher score first (Kueue's
       ``CandidatesOrdering``, ``LocalQueueFSUsage``). Candidates of other queues tie here.
    4. Lower (effective) priority first.
    5. Least work lost per unit of quota freed first: the latest start of unsaved work, its
       admission (quota reserved) or a later checkpoint it reported. Without checkpoints this
       is Kueue's "most recently admitted first". Not GPUs x time: a greedy pick by that total
       evicts eight 2-hour 1-GPU jobs (16 GPU-hours) before one 1-hour 8-GPU job (8) when 8 GPUs
       are needed; what a victim frees is proportional to its GPUs, so time alone ranks cost.
    6. Tie-breaker: uid.
    """
    own = candidate.cluster_queue == preemptor_cq
    return (
        not candidate.evicted,
        own,
        -score(candidate) if score is not None and own else 0.0,
        candidate.info.priority,
        -candidate.info.work_since(candidate.reserved_at),
        candidate.info.uid,
    )
