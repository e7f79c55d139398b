"""``state.evictions.due``: what must be evicted now, decided once for the operator and simulator.

Rows follow Kueue's workload controller (``pkg/controller/core/workload_controller.go``):
deactivation first, then a queue stopped with ``HoldAndDrain``, then the pods-ready timeout of
``waitForPodsReady`` with its backoff (``requeuingStrategy``) and requeuing limit, and the
recovery timeout of pods that were ready (``recoveryTimeout``, Kueue's v1beta2 semantics:
unset is ``timeout``, ``0s`` disables it).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.api import conditions, configuration, names
from berth.core import podsready
from berth.state import evictions

_EVICT = conditions.EvictionReason
A = names.WorkloadKey("ns", "a")
B = names.WorkloadKey("ns", "b")


def wfpr(
    timeout: float = 60, limit: int | None = None, recovery: float | None = None
) -> configuration.WaitForPodsReady:
    strategy: dict[str, object] = {"backoffBaseSeconds": 10, "backoffMaxSeconds": 3600}
    if limit is not None:
        strategy["backoffLimitCount"] = limit
    settings: dict[str, object] = {"timeout": f"{timeout}s", "requeuingStrategy": strategy}
    if recovery is not None:
        settings["recoveryTimeout"] = f"{recovery}s"
    return configuration.WaitForPodsReady.model_validate(settings)


def recovering(since: float) -> evictions.Admitted:
    """Pods that were all ready and are not any more since ``since``."""
    return evictions.Admitted(A, pods_ready=False, ready_since=since, recovering=True)


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    admitted: list[evictions.Admitted]
    now: float
    want: list[tuple[names.WorkloadKey, conditions.EvictionReason]]
    drained: dict[names.WorkloadKey, conditions.EvictionReason] = dataclasses.field(
        default_factory=dict
    )
    settings: configuration.WaitForPodsReady | None = None


ROWS = [
    Row("nothing due", [evictions.Admitted(A)], 0, []),
    Row(
        "deactivated is evicted",
        [evictions.Admitted(A, active=False)],
        0,
        [(A, _EVICT.DEACTIVATED)],
    ),
    Row(
        "already evicting is left alone",
        [evictions.Admitted(A, active=False, evicting=True)],
        0,
        [],
    ),
    Row(
        "drained by its LocalQueue",
        [evictions.Admitted(A)],
        0,
        [(A, _EVICT.LOCAL_QUEUE_STOPPED)],
        drained={A: _EVICT.LOCAL_QUEUE_STOPPED},
    ),
    Row(
        "deactivation wins over a drain",
        [evictions.Admitted(A, active=False)],
        0,
        [(A, _EVICT.DEACTIVATED)],
        drained={A: _EVICT.CLUSTER_QUEUE_STOPPED},
    ),
    Row(
        "a drain wins over a pods-ready timeout",
        [evictions.Admitted(A, pods_ready=False, ready_since=0)],
        600,
        [(A, _EVICT.CLUSTER_QUEUE_STOPPED)],
        drained={A: _EVICT.CLUSTER_QUEUE_STOPPED},
        settings=wfpr(),
    ),
    Row(
        "pods not ready before the timeout",
        [evictions.Admitted(A, pods_ready=False, ready_since=100)],
        159,
        [],
        settings=wfpr(),
    ),
    Row(
        "pods not ready at the timeout (Kueue: now >= since + timeout)",
        [evictions.Admitted(A, pods_ready=False, ready_since=100)],
        160,
        [(A, _EVICT.PODS_READY_TIMEOUT)],
        settings=wfpr(),
    ),
    Row(
        "recovery: unset, it is the timeout (Kueue's v1beta2 default)",
        [recovering(100)],
        160,
        [(A, _EVICT.PODS_READY_TIMEOUT)],
        settings=wfpr(),
    ),
    Row(
        "recovery: a longer recoveryTimeout lets the pods come back",
        [recovering(100)],
        399,
        [],
        settings=wfpr(recovery=300),
    ),
    Row(
        "recovery: its own timeout, from the pods turning unready",
        [recovering(100)],
        400,
        [(A, _EVICT.PODS_READY_TIMEOUT)],
        settings=wfpr(recovery=300),
    ),
    Row(
        "recovery: a shorter one than the start timeout",
        [recovering(100)],
        110,
        [(A, _EVICT.PODS_READY_TIMEOUT)],
        settings=wfpr(recovery=10),
    ),
    Row(
        "recovery: 0s never evicts a workload recovering",
        [recovering(0)],
        1_000_000,
        [],
        settings=wfpr(recovery=0),
    ),
    Row(
        "recovery: 0s still times out pods that never started",
        [evictions.Admitted(A, pods_ready=False, ready_since=0)],
        60,
        [(A, _EVICT.PODS_READY_TIMEOUT)],
        settings=wfpr(recovery=0),
    ),
    Row(
        "ready pods never time out",
        [evictions.Admitted(A, pods_ready=True, ready_since=0)],
        10_000,
        [],
        settings=wfpr(),
    ),
    Row(
        "no waitForPodsReady: no timeout",
        [evictions.Admitted(A, pods_ready=False, ready_since=0)],
        10_000,
        [],
    ),
    Row(
        "key order, whatever the input order",
        [evictions.Admitted(B, active=False), evictions.Admitted(A, active=False)],
        0,
        [(A, _EVICT.DEACTIVATED), (B, _EVICT.DEACTIVATED)],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_due(row: Row) -> None:
    got = evictions.due(row.admitted, row.drained, row.settings, row.now)
    assert [(e.key, e.reason) for e in got] == row.want


def test_a_timeout_requeues_after_kueues_backoff() -> None:
    [e] = evictions.due(
        [evictions.Admitted(A, pods_ready=False, ready_since=0, requeue_count=2)],
        {},
        wfpr(),
        100,
    )
    assert e.message == f"Exceeded the PodsReady timeout {A}"
    assert isinstance(e.requeue, podsready.Requeue)
    assert e.requeue.count == 3
    # Kueue's backoff: base * 2^(count-1), so the third requeue waits 10 * 4 = 40 s.
    assert e.requeue.requeue_at == 140


def test_the_requeuing_limit_deactivates() -> None:
    [e] = evictions.due(
        [evictions.Admitted(A, pods_ready=False, ready_since=0, requeue_count=2)],
        {},
        wfpr(limit=2),
        100,
    )
    assert e.reason == _EVICT.PODS_READY_TIMEOUT
    assert isinstance(e.requeue, podsready.Deactivate)


def test_stopped_queues_say_which_queue() -> None:
    got = evictions.due(
        [evictions.Admitted(A), evictions.Admitted(B)],
        {A: _EVICT.LOCAL_QUEUE_STOPPED, B: _EVICT.CLUSTER_QUEUE_STOPPED},
        None,
        0,
    )
    assert [e.message for e in got] == ["The LocalQueue is stopped", "The ClusterQueue is stopped"]


@given(
    st.lists(
        st.builds(
            evictions.Admitted,
            key=st.builds(names.WorkloadKey, st.just("ns"), st.text("abc", min_size=1)),
            active=st.booleans(),
            evicting=st.booleans(),
            pods_ready=st.booleans(),
            ready_since=st.floats(0, 1000),
            requeue_count=st.integers(0, 5),
        ),
        unique_by=lambda a: a.key,
    ),
    st.floats(0, 2000),
)
def test_never_twice_never_an_evicting_one_always_in_key_order(
    admitted: list[evictions.Admitted], now: float
) -> None:
    got = evictions.due(admitted, {}, wfpr(), now)
    keys = [e.key for e in got]
    assert keys == sorted(set(keys))
    evicting = {a.key for a in admitted if a.evicting}
    assert not evicting & set(keys)
    for a in admitted:
        if not a.evicting and not a.active:
            assert a.key in keys  # a deactivated workload is always evicted
