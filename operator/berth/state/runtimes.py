"""Runtimes of finished workloads, per LocalQueue and shape, and the estimator built on them.

``Lifecycle.release`` records how long each workload that finished successfully ran (from its
quota reservation to its end). ``estimator`` gives the cycle every workload's expected runtime
(``core.backfill.estimates``): what was learned is a percentile of the last ``WINDOW`` runtimes of
workloads of the same LocalQueue and pod sets, or of the whole LocalQueue while the shape has
fewer than ``MIN_SAMPLES``. Memory only: after a restart the operator learns again.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable

from berth.api import clusterqueue, names
from berth.core import workload
from berth.core.backfill import estimates
from berth.state import cache as cache_mod

WINDOW = 50
"""Runtimes kept per LocalQueue and per shape: recent ones say most about the next."""
MIN_SAMPLES = 5
"""Runtimes needed before a percentile is trusted over the next source."""

_Key = tuple[object, ...]
"""(namespace, LocalQueue) for the queue's history; with the shape appended for the shape's."""


def _shape(info: workload.WorkloadInfo) -> tuple[object, ...]:
    """Pod sets as their requests decide them (priority left out: it does not change runtime)."""
    return tuple((ps.count, tuple(sorted(ps.per_pod.items()))) for ps in info.pod_sets)


class RuntimeHistory:
    """Recent runtimes by LocalQueue and by LocalQueue and shape, with cached percentiles."""

    def __init__(self) -> None:
        self._runs: dict[_Key, collections.deque[float]] = {}
        self._cached: dict[_Key, dict[int, float | None]] = {}
        """Percentiles by key, then percentile, each asked for once: a new runtime works out
        again only its two keys' (and so knows whether an estimate can have changed)."""
        self.version = 0
        """Moves when a recorded runtime changes a percentile an estimate was made from: an
        estimate made at one version holds until the next. Most runtimes leave a high percentile
        of the last ``WINDOW`` where it was, and what was worked out from the estimates stands
        (``reservations.Inputs``)."""
        self.recorded: dict[_Key, int] = {}
        """Counts recorded runtimes per LocalQueue: a workload's estimate depends only on its own
        LocalQueue's runtimes, so one made at its queue's count holds until that count moves."""

    @staticmethod
    def _keys(info: workload.WorkloadInfo) -> tuple[_Key, _Key]:
        queue = (info.key.namespace, info.local_queue)
        return (*queue, _shape(info)), queue

    def record(self, info: workload.WorkloadInfo, seconds: float) -> None:
        """A workload of this kind ran ``seconds`` to success."""
        if not math.isfinite(seconds) or seconds < 0:
            return
        keys = self._keys(info)
        self.recorded[keys[1]] = self.recorded.get(keys[1], 0) + 1
        moved = False
        for key in keys:
            runs = self._runs.setdefault(key, collections.deque(maxlen=WINDOW))
            runs.append(seconds)
            known = self._cached.get(key)
            if not known:
                continue  # no estimate was made from this key's percentiles
            ordered = sorted(runs) if len(runs) >= MIN_SAMPLES else None
            for percentile, before in known.items():
                after = None if ordered is None else _percentile(ordered, percentile)
                if after != before:
                    known[percentile] = after
                    moved = True
        if moved:
            self.version += 1

    def learned(self, info: workload.WorkloadInfo, percentile: int) -> float | None:
        """The ``percentile`` of similar runtimes (its shape's, else its LocalQueue's), if known."""
        for key in self._keys(info):
            known = self._cached.setdefault(key, {})
            if percentile not in known:
                seen = self._runs.get(key)
                known[percentile] = (
                    _percentile(sorted(seen), percentile)
                    if seen is not None and len(seen) >= MIN_SAMPLES
                    else None
                )
            value = known[percentile]
            if value is not None:
                return value
        return None


def _percentile(ordered: list[float], percentile: int) -> float:
    """The nearest-rank percentile of a sorted, non-empty list."""
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


_Made = tuple[clusterqueue.Backfill, workload.WorkloadInfo, estimates.Estimate]
"""An estimate, and the settings and workload it was made with."""

MEMO_LIMIT = 65_536
"""Estimates kept per LocalQueue at one count of its runtimes: a queue whose workloads never
succeed never moves its count, and its deleted workloads must not stay for ever."""


def estimator(
    cache: cache_mod.Cache, history: RuntimeHistory
) -> Callable[[workload.WorkloadInfo, names.ClusterQueueName], estimates.Estimate]:
    """Estimates with the settings of the workload's ClusterQueue (the defaults elsewhere)."""
    default = clusterqueue.Backfill()
    made: dict[_Key, tuple[int, dict[tuple[str, str, names.ClusterQueueName], _Made]]] = {}
    """By LocalQueue: its count of recorded runtimes, and the estimates made at that count, by
    workload (name and uid) and ClusterQueue."""

    def estimate(info: workload.WorkloadInfo, cq: names.ClusterQueueName) -> estimates.Estimate:
        queue = (info.key.namespace, info.local_queue)
        seen = history.recorded.get(queue, 0)
        mine = made.get(queue)
        if mine is None or mine[0] != seen or len(mine[1]) >= MEMO_LIMIT:
            mine = made[queue] = (seen, {})  # new, or something new was learned of its queue
        q = cache.snapshot.cluster_queues.get(cq)
        settings = default if q is None or q.backfill is None else q.backfill
        key = (info.key.name, info.uid, cq)
        found = mine[1].get(key)
        if found is None or found[0] is not settings or found[1] is not info:
            # New, or the queue's settings or the workload changed.
            learned = history.learned(info, settings.learned_percentile)
            found = mine[1][key] = (settings, info, estimates.estimate(info, learned, settings))
        return found[2]

    return estimate
