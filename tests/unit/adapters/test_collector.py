"""``adapters.collector``: collection paused in a block; the operator's young threshold."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from berth.adapters import collector
from berth.entry import cli, operator_main


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
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


def test_fewer_young_collections_changes_only_the_youngest_threshold() -> None:
    gc.set_threshold(700, 7, 9)
    collector.fewer_young_collections()
    assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, 7, 9)


def test_berth_run_tunes_the_collector_before_the_operator_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, int, int]] = []

    async def fake_run(options: operator_main.Options) -> None:
        del options
        seen.append(gc.get_threshold())

    monkeypatch.setattr(operator_main, "run", fake_run)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    result = CliRunner().invoke(cli.main, ["run", f"--kubeconfig={kubeconfig}", "--no-history"])
    assert result.exit_code == 0, result.output
    assert seen == [(collector.YOUNG_THRESHOLD, 10, 10)]
