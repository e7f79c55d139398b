"""Scheduling shapes as the queues file workloads under them: one object per shape in use.

A ``Shape`` is a workload's ``scheduling_shape`` hashed once, interned so each lookup is an
identity test; ``queue_shape`` is the shape a ClusterQueue files a workload under (under Backfill
it also holds what the workload's runtime estimate is made from). Called by
``queues.cluster_queue`` and ``queues.manager``.
"""

from __future__ import annotations

import weakref

from berth.api import clusterqueue
from berth.core import workload


class Shape:
    """A workload's ``scheduling_shape``, hashed once: the queues file workloads under it.

    One object per shape (``_intern``) makes each lookup an identity test.
    """

    __slots__ = ("__weakref__", "_hash", "key")

    def __init__(self, key: tuple[object, ...]) -> None:
        self.key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Shape) and self.key == other.key)


_SHAPES: weakref.WeakValueDictionary[tuple[object, ...], Shape] = weakref.WeakValueDictionary()
"""The one ``Shape`` of each scheduling shape in use."""


def _intern(key: tuple[object, ...]) -> Shape:
    found = _SHAPES.get(key)
    if found is None:
        found = _SHAPES[key] = Shape(key)
    return found


def queue_shape(
    info: workload.WorkloadInfo,
    strategy: clusterqueue.QueueingStrategy,
    *,
    by_local_queue: bool = False,
) -> Shape:
    """The shape a queue files a workload under.

    Its scheduling shape, and under Backfill also what its runtime estimate is made from
    besides its pod sets (``state.runtimes``): its own bounds and its LocalQueue. Workloads of
    one such shape get the same estimate at any time, so one held for a reservation stands for
    all of them (``core.backfill``: those behind it see the same reservations ahead and more).
    ``by_local_queue`` (admission fair sharing): its LocalQueue too, as each LocalQueue's
    workloads are ordered apart.
    """
    key = info.scheduling_shape()
    if by_local_queue:
        key = (*key, info.key.namespace, info.local_queue)
    if strategy == clusterqueue.QueueingStrategy.BACKFILL:
        estimated = (
            info.key.namespace,
            info.local_queue,
            info.runtime_limit,
            info.expected_runtime,
        )
        key = (*key, estimated)
    return _intern(key)
