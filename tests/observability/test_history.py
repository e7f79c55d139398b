import asyncio
import datetime as dt
import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy.ext import asyncio as sa_asyncio

from berth.adapters import metrics
from berth.adapters.history import migrate, models, records, store, writer
from berth.entry import cli

SAMPLES = ("config/samples/queues.yaml", "config/samples/jobs.yaml")


async def _tables(engine: sa_asyncio.AsyncEngine) -> dict[str, set[str]]:
    def read(conn: sa.Connection) -> dict[str, set[str]]:
        insp = sa.inspect(conn)
        return {
            t: {c["name"] for c in insp.get_columns(t)}
            for t in insp.get_table_names()
            if t != "alembic_version"
        }

    async with engine.connect() as conn:
        return await conn.run_sync(read)


def _model_tables() -> dict[str, set[str]]:
    return {name: {c.name for c in t.columns} for name, t in models.metadata.tables.items()}


async def test_migrations_upgrade_downgrade_upgrade(database_url: str) -> None:
    engine = store.create_engine(database_url)
    seen = [(await store.current_revision(engine), await _tables(engine))]
    try:
        for step in (migrate.upgrade, migrate.downgrade, migrate.upgrade):
            await step(engine)
            seen.append((await store.current_revision(engine), await _tables(engine)))
    finally:
        await engine.dispose()
    models_tables = _model_tables()
    assert seen == [
        (None, {}),
        ("0001", models_tables),
        (None, {}),
        ("0001", models_tables),
    ]


def test_the_store_is_migrated_without_alembic_in_the_opening_process(
    tmp_path: pathlib.Path,
) -> None:
    # A fresh interpreter: this one has imported Alembic for the other tests.
    program = (
        "import asyncio, sys\n"
        "from berth.adapters.history import store\n"
        "async def main():\n"
        "    engine = await store.open_store(sys.argv[1])\n"
        "    print(await store.current_revision(engine))\n"
        "    await engine.dispose()\n"
        "asyncio.run(main())\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic', 'mako'}))\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and program
        [sys.executable, "-c", program, str(tmp_path / "new" / "history.db")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["0001", "[]"]


async def test_sqlite_store_uses_wal(tmp_path: pathlib.Path) -> None:
    engine = await store.open_store(str(tmp_path / "data" / "history.db"))
    try:
        async with engine.connect() as conn:
            mode = str((await conn.execute(sa.text("PRAGMA journal_mode"))).scalar())
    finally:
        await engine.dispose()
    assert mode == "wal"


@pytest.mark.parametrize(
    "existing_mode", [None, 0o644], ids=["new file", "made by an older version"]
)
async def test_an_sqlite_store_and_its_wal_are_readable_by_their_owner_only(
    tmp_path: pathlib.Path, existing_mode: int | None
) -> None:
    path = tmp_path / "data" / "history.db"
    if existing_mode is not None:
        path.parent.mkdir()
        path.touch(mode=existing_mode)
        path.chmod(existing_mode)
    engine = await store.open_store(str(path))
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("CREATE TABLE IF NOT EXISTS probe (x INTEGER)"))
            await conn.execute(sa.text("INSERT INTO probe VALUES (1)"))
        files = sorted(p.name for p in path.parent.iterdir())
        assert "history.db-wal" in files  # WAL mode: the side files exist while it is open
        for name in files:
            assert (path.parent / name).stat().st_mode & 0o777 == 0o600, name
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("sqlite:////var/lib/berth/history.db", "sqlite+aiosqlite:////var/lib/berth/history.db"),
        ("postgresql://u@127.0.0.1:5432/berth", "postgresql+asyncpg://u@127.0.0.1:5432/berth"),
        ("postgres://u@127.0.0.1/berth", "postgresql+asyncpg://u@127.0.0.1/berth"),
        ("postgresql+psycopg://u@h/b", "postgresql+asyncpg://u@h/b"),
    ],
    ids=["sqlite file", "postgresql", "postgres alias", "other driver replaced"],
)
def test_urls_get_async_drivers(url: str, want: str) -> None:
    assert store.async_url(url) == want


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
async def test_every_spelling_of_an_in_memory_sqlite_store_opens_migrated(url: str) -> None:
    engine = await store.open_store(url)
    try:
        revision = await store.current_revision(engine)
    finally:
        await engine.dispose()
    assert revision is not None


@pytest.mark.parametrize(
    ("script", "want"),
    [
        ("kill -9 $$", "the migration process was stopped by SIGKILL"),
        ("exit 3", "the migration process exited with status 3"),
    ],
    ids=["killed", "silent failure"],
)
async def test_a_migration_process_that_dies_without_a_word_is_one_line_naming_the_store(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, script: str, want: str
) -> None:
    # Stands in for the interpreter that runs the migrations, dying the way a kill would.
    child = tmp_path / "python"
    child.write_text(f"#!/bin/sh\ncat >/dev/null\n{script}\n")
    child.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(child))  # store runs its migrations with it
    url = "postgresql://berth:secret@127.0.0.1:1/berth"
    with pytest.raises(store.HistoryError) as caught:
        await store.open_store(url)
    message = str(caught.value)
    assert message.startswith("cannot migrate the history store postgresql://berth:***@")
    assert want in message
    assert "secret" not in message
    assert "\n" not in message


def _record(t: float, workload: str = "ns/w") -> records.Record:
    return records.Record(
        t=t,
        kind=records.EventKind.QUEUED,
        workload=workload,
        uid="u",
        job=None,
        namespace="ns",
        local_queue="lq",
        cluster_queue="cq",
        priority=0,
        priority_class=None,
    )


async def test_writer_drops_and_counts_when_its_queue_is_full(tmp_path: pathlib.Path) -> None:
    sink = metrics.Metrics()
    engine = await store.open_store(str(tmp_path / "h.db"))
    started = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    run_id = await store.start_run(engine, kind="operator", label="", started_at=started)
    w = writer.Writer(engine, run_id, started, maxsize=3, counters=sink)
    for i in range(10):  # the writer task is not running: nothing drains the queue
        w.submit(_record(float(i)))
    w.end(9.0)
    task = asyncio.create_task(w.run())
    await w.close(task)
    data = await store.read_run(engine)
    await engine.dispose()
    assert data is not None
    assert (w.dropped, w.written, len(data.events)) == (7, 3, 3)
    text = sink.exposition()
    assert "berth_history_dropped_total 7.0" in text
    assert "berth_history_writes_total 3.0" in text


def _simulate(args: list[str]) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli.main, ["simulate", *SAMPLES, *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()]


def test_simulate_record_writes_a_row_for_every_transition(database_url: str) -> None:
    lines = _simulate(["--record", database_url])
    assert lines == _simulate([])  # recording does not change the output

    async def read() -> store.RunData | None:
        engine = await store.open_store(database_url)
        try:
            return await store.read_run(engine)
        finally:
            await engine.dispose()

    # A synchronous test: `berth simulate` runs its own loop (asyncio.run), which a running one
    # would refuse, so the record is read on a loop of its own too.
    data = asyncio.run(read())
    assert data is not None
    assert data.run.kind == "simulator"
    summary = lines[-1]
    assert data.run.duration == summary["t"]
    want = [
        (line["t"], line["event"], line["workload"])
        for line in lines[:-1]
        if line["event"] != "Pending"
    ]
    got = [(r.t, r.kind.value, r.workload) for r in data.events if r.kind != "Queued"]
    assert sorted(got) == sorted(want)
    queued = {r.workload for r in data.events if r.kind == "Queued"}
    assert queued == {line["workload"] for line in lines[:-1]}
    admitted = [r for r in data.events if r.kind == "Admitted"]
    assert all(r.resources and r.flavors and r.wait_seconds is not None for r in admitted)
    assert {q.cluster_queue for q in data.quotas} == set(summary["clusterQueues"])
