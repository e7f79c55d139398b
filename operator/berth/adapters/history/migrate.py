"""The history store's schema migrations (Alembic), run in a process of their own.

Alembic's migration runtime is about 11 MiB of imports that a long-running operator would hold
for nothing once it has started, so ``store.open_store`` runs this module as a child process
(``python -m berth.adapters.history.migrate``, the URL on its standard input, never in its
arguments where ``ps`` would show a password) and waits for it. Only that child, the tests and
an in-memory SQLite store (which no other process can see) import it. A failure is the one-line
``HistoryError`` message on the child's standard error and exit status 1.
"""

from __future__ import annotations

import asyncio
import pathlib
import sys

import sqlalchemy as sa
from alembic import command
from alembic import config as al_config
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext import asyncio as sa_asyncio

from berth.adapters.history import store

MIGRATIONS = pathlib.Path(__file__).parent / "migrations"


def alembic_config(connection: sa.Connection) -> al_config.Config:
    """Alembic's configuration for the migrations shipped in this package."""
    cfg = al_config.Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


async def upgrade(engine: sa_asyncio.AsyncEngine, revision: str = "head") -> None:
    """Run the migrations up to ``revision``."""
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), revision))
    except sa_exc.SQLAlchemyError as err:
        raise store.HistoryError(
            f"cannot migrate the history store: {store.first_line(err)}"
        ) from err
    except OSError as err:
        # A server that cannot be reached (refused, unknown host, timeout) is not wrapped by
        # SQLAlchemy's asyncpg dialect.
        where = engine.url.render_as_string(hide_password=True)
        raise store.HistoryError(f"cannot reach the history store {where}: {err}") from err


async def downgrade(engine: sa_asyncio.AsyncEngine, revision: str = "base") -> None:
    """Run the migrations down to ``revision``."""
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), revision))
    except sa_exc.SQLAlchemyError as err:
        raise store.HistoryError(f"cannot migrate the history store: {err}") from err


async def migrated(url: str) -> sa_asyncio.AsyncEngine:
    """Create the engine for ``url`` and migrate its database to the newest schema.

    Whatever stops it (a server that cannot be reached, a file that is not a database, a
    directory that cannot be made) is one ``HistoryError`` of one line naming the URL as given.
    """
    try:
        store.prepare_file(url)
        engine = store.create_engine(url)
        await upgrade(engine)
    except store.HistoryError as err:
        if isinstance(err.__cause__, OSError):
            # ``upgrade`` names the driver's URL; name the one the user gave instead.
            msg = f"cannot reach the history store {store.shown_url(url)}: {err.__cause__}"
            raise store.HistoryError(msg) from err
        raise store.HistoryError(f"{store.shown_url(url)}: {err}") from err
    except (OSError, sa_exc.SQLAlchemyError) as err:
        raise store.HistoryError(
            f"cannot open the history store {store.shown_url(url)}: {store.first_line(err)}"
        ) from err
    return engine


async def _main(url: str) -> int:
    try:
        engine = await migrated(url)
    except store.HistoryError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    await engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_main(sys.stdin.read().strip())))
