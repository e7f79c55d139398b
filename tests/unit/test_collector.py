"""``adapters.collector.paused``: automatic cyclic collection is off inside, as it was after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from berth.adapters import collector


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("enabled_before", [True, False])
def test_paused_turns_collection_off_inside_and_restores_it(enabled_before: bool) -> None:
    if enabled_before:
        gc.enable()
    else:
        gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled() == enabled_before


def test_paused_restores_collection_when_the_block_raises() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_cyclic_garbage_made_inside_is_found_after_the_block() -> None:
    gc.enable()
    gc.collect()

    class Node:
        partner: object = None

    with collector.paused():
        a, b = Node(), Node()
        a.partner, b.partner = b, a
        del a, b
    assert gc.collect() > 0
