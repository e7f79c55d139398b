"""Engines, migrations, and reading and writing runs of the history store.

URLs: ``sqlite:///PATH`` (or a bare file path) uses aiosqlite with WAL journaling, the embedded
default in the operator's data directory; ``postgresql://...`` uses asyncpg. ``open_store``
has the Alembic migrations run to ``head`` (by ``migrate``, in a child process) before it
creates the engine, so a new database and an old one are both ready. Library errors become
``HistoryError``.
Called by the writer, ``berth simulate --record`` and ``berth report``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
import pathlib
import signal
import sys
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext import asyncio as sa_asyncio

from berth.adapters.history import models, records

DEFAULT_FILE = "history.db"


class HistoryError(Exception):
    """The history store could not be opened, migrated, written or read."""


def async_url(url: str) -> str:
    """Turn a user's database URL (or a file path) into an async SQLAlchemy URL."""
    if "://" not in url:
        return f"sqlite+aiosqlite:///{pathlib.Path(url).resolve()}"
    scheme, rest = url.split("://", 1)
    driver = scheme.split("+", 1)[0]
    if driver == "sqlite":
        return f"sqlite+aiosqlite://{rest}"
    if driver in ("postgresql", "postgres"):
        return f"postgresql+asyncpg://{rest}"
    raise HistoryError(
        f"unsupported database URL scheme {scheme!r}: use sqlite:// or postgresql://"
    )


def default_url(data_dir: pathlib.Path) -> str:
    """The embedded database in the operator's data directory."""
    return f"sqlite:///{data_dir / DEFAULT_FILE}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:  # noqa: ANN401 - DB-API objects are untyped
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def create_engine(url: str) -> sa_asyncio.AsyncEngine:
    """An async engine for ``url``; SQLite files get WAL journaling and foreign keys."""
    engine = sa_asyncio.create_async_engine(async_url(url))
    if engine.dialect.name == "sqlite":
        sa_event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def first_line(err: Exception) -> str:
    """An error's first line (SQLAlchemy appends a second one pointing at its docs)."""
    return (str(err).splitlines() or [type(err).__name__])[0]


def shown_url(url: str) -> str:
    """The URL (or path) a user gave, fit for a message: its password, if any, masked."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa_exc.ArgumentError:
        return url  # a bare file path


async def current_revision(engine: sa_asyncio.AsyncEngine) -> str | None:
    """The revision the database is at (None before the first migration)."""

    def read(conn: sa.Connection) -> str | None:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        row = conn.execute(sa.text("SELECT version_num FROM alembic_version")).first()
        return None if row is None else str(row[0])

    async with engine.connect() as conn:
        return await conn.run_sync(read)


def _sqlite_path(url: str) -> str | None:
    """The file an SQLite URL or bare path names ('' or ':memory:' in memory); None otherwise."""
    if "://" in url and not url.startswith("sqlite"):
        return None
    return async_url(url).partition("://")[2].removeprefix("/")


FILE_MODE = 0o600
"""An SQLite history file is its owner's alone: it names every team's jobs and queues."""


def prepare_file(url: str) -> None:
    """Make an SQLite file (and its directory) before the store opens it, for its owner alone.

    SQLite gives its ``-wal``, ``-shm`` and ``-journal`` files the mode of the database file, so
    they are the owner's alone too; a file an older version made readable to all is narrowed.
    """
    path = _sqlite_path(url)
    if not path or path == ":memory:":
        return
    file = pathlib.Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(file, os.O_CREAT | os.O_WRONLY, FILE_MODE))
    os.chmod(file, FILE_MODE)  # noqa: PTH101 - the same path object os.open used


def _in_memory(url: str) -> bool:
    return _sqlite_path(url) in {"", ":memory:"}


async def open_store(url: str) -> sa_asyncio.AsyncEngine:
    """Migrate the database to the newest schema, then create its engine (start-up).

    The migrations run in a child process (``migrate``), so that Alembic is never loaded into
    a long-running process; an in-memory SQLite database, which only this process can see, is
    migrated here. Whatever stops it is one ``HistoryError`` of one line naming the URL.
    """
    if _in_memory(url):
        # Imported here alone: only an in-memory store needs Alembic in this process.
        from berth.adapters.history import migrate  # noqa: PLC0415 - see above

        return await migrate.migrated(url)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "berth.adapters.history.migrate",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await child.communicate(url.encode())
    if child.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise HistoryError(lines[-1] if lines else _stopped(url, child.returncode))
    try:
        return create_engine(url)
    except (OSError, sa_exc.SQLAlchemyError) as e:
        raise HistoryError(
            f"cannot open the history store {shown_url(url)}: {first_line(e)}"
        ) from e


def _stopped(url: str, code: int | None) -> str:
    """Why a migration child that said nothing failed: a signal, or its exit status."""
    how = f"exited with status {code}"
    if code is not None and code < 0:
        try:
            how = f"was stopped by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was stopped by signal {-code}"
    return (
        f"cannot migrate the history store {shown_url(url)}: the migration process {how}; "
        "start again (the migrations resume from the last revision the store recorded)"
    )


# Writing --------------------------------------------------------------------------------------


def _event_row(run_id: int, started: dt.datetime, r: records.Record) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "t": r.t,
        "at": started + dt.timedelta(seconds=r.t),
        "kind": r.kind.value,
        "workload": r.workload,
        "uid": r.uid,
        "job": r.job,
        "namespace": r.namespace,
        "local_queue": r.local_queue,
        "cluster_queue": r.cluster_queue,
        "priority": r.priority,
        "priority_class": r.priority_class,
        "reason": r.reason,
        "message": r.message,
        "by": r.by,
        "flavors": r.flavors,
        "resources": r.resources,
        "wait_seconds": r.wait_seconds,
    }


def _quota_row(run_id: int, q: records.QuotaRow) -> dict[str, Any]:
    row = dataclasses.asdict(q)
    row["run_id"] = run_id
    return row


async def start_run(
    engine: sa_asyncio.AsyncEngine, *, kind: str, label: str, started_at: dt.datetime
) -> int:
    """Open a run and return its id."""
    try:
        async with engine.begin() as conn:
            result = await conn.execute(
                sa.insert(models.Run).values(kind=kind, label=label, started_at=started_at)
            )
            key = result.inserted_primary_key
            assert key is not None  # noqa: S101 - an insert always has a primary key
            return int(key[0])
    except sa_exc.SQLAlchemyError as err:
        raise HistoryError(f"cannot write to the history store: {err}") from err


async def write(
    engine: sa_asyncio.AsyncEngine,
    run_id: int,
    started_at: dt.datetime,
    events: Iterable[records.Record],
    quotas: Iterable[records.QuotaRow] = (),
) -> int:
    """Insert events and quota rows of a run in one transaction; return the rows written."""
    event_rows = [_event_row(run_id, started_at, r) for r in events]
    quota_rows = [_quota_row(run_id, q) for q in quotas]
    try:
        async with engine.begin() as conn:
            if event_rows:
                await conn.execute(sa.insert(models.Event), event_rows)
            if quota_rows:
                await conn.execute(sa.insert(models.Quota), quota_rows)
    except sa_exc.SQLAlchemyError as err:
        raise HistoryError(f"cannot write to the history store: {err}") from err
    return len(event_rows) + len(quota_rows)


async def end_run(
    engine: sa_asyncio.AsyncEngine, run_id: int, started_at: dt.datetime, duration: float
) -> None:
    """Close a run ``duration`` seconds after its start."""
    try:
        async with engine.begin() as conn:
            await conn.execute(
                sa.update(models.Run)
                .where(models.Run.id == run_id)
                .values(ended_at=started_at + dt.timedelta(seconds=duration), duration=duration)
            )
    except sa_exc.SQLAlchemyError as err:
        raise HistoryError(f"cannot write to the history store: {err}") from err


# Reading --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RunInfo:
    """A run as stored."""

    id: int
    kind: str
    label: str
    started_at: dt.datetime
    duration: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class RunData:
    """A run with all its events and quota rows, in the order they happened."""

    run: RunInfo
    events: list[records.Record]
    quotas: list[records.QuotaRow]


def _as_utc(when: dt.datetime) -> dt.datetime:
    # SQLite hands timezone-aware columns back naive; they were written in UTC.
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


async def read_run(engine: sa_asyncio.AsyncEngine, run_id: int | None = None) -> RunData | None:
    """Read one run (the latest if ``run_id`` is None); None if there is none."""
    try:
        async with engine.connect() as conn:
            query = sa.select(models.Run).order_by(models.Run.id.desc()).limit(1)
            if run_id is not None:
                query = sa.select(models.Run).where(models.Run.id == run_id)
            run_row = (await conn.execute(query)).first()
            if run_row is None:
                return None
            run = RunInfo(
                id=run_row.id,
                kind=run_row.kind,
                label=run_row.label,
                started_at=_as_utc(run_row.started_at),
                duration=run_row.duration,
            )
            ev = models.Event
            event_rows = (
                await conn.execute(sa.select(ev).where(ev.run_id == run.id).order_by(ev.t, ev.id))
            ).mappings()
            events = [
                records.Record(
                    t=row["t"],
                    kind=records.EventKind(row["kind"]),
                    workload=row["workload"],
                    uid=row["uid"],
                    job=row["job"],
                    namespace=row["namespace"],
                    local_queue=row["local_queue"],
                    cluster_queue=row["cluster_queue"],
                    priority=row["priority"],
                    priority_class=row["priority_class"],
                    reason=row["reason"],
                    message=row["message"],
                    by=row["by"],
                    flavors=row["flavors"],
                    resources=row["resources"],
                    wait_seconds=row["wait_seconds"],
                )
                for row in event_rows
            ]
            qu = models.Quota
            quota_rows = (
                await conn.execute(sa.select(qu).where(qu.run_id == run.id).order_by(qu.t, qu.id))
            ).mappings()
            quotas = [
                records.QuotaRow(
                    t=row["t"],
                    cluster_queue=row["cluster_queue"],
                    cohort=row["cohort"],
                    flavor=row["flavor"],
                    resource=row["resource"],
                    nominal=row["nominal"],
                    borrowing_limit=row["borrowing_limit"],
                    lending_limit=row["lending_limit"],
                )
                for row in quota_rows
            ]
    except sa_exc.SQLAlchemyError as err:
        raise HistoryError(f"cannot read the history store: {err}") from err
    return RunData(run, events, quotas)
