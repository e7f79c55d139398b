"""Fixtures of the observability tests: a real PostgreSQL for the session, fresh databases.

``postgres_server`` runs ``scripts/postgres-for-tests`` once per session (it installs Debian's
PostgreSQL if needed, starts it on a free loopback port as a dedicated user, and stops it when
its standard input closes). Outside CI a machine that cannot run it skips the PostgreSQL cases;
under ``CI=true`` that is a failure, never a skip.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import selectors
import subprocess
import uuid
from collections.abc import Iterator

import asyncpg
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "postgres-for-tests"
START_TIMEOUT = 600.0  # a first run may install the server with apt-get


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required in CI: {why}")
    pytest.skip(f"no PostgreSQL here: {why}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the session's PostgreSQL server (database ``berth``)."""
    proc = subprocess.Popen(  # noqa: S603 - our own script, no shell
        [str(SCRIPT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout=START_TIMEOUT)
    url = proc.stdout.readline().strip() if ready else ""
    if not url.startswith("postgresql://"):
        proc.kill()
        _, err = proc.communicate(timeout=30)
        _unavailable(f"scripts/postgres-for-tests printed no URL: {err.strip()[-2000:]}")
    try:
        yield url
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url.rsplit("/", 1)[0] + "/postgres")
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's server, dropped afterwards."""
    # Synchronous, with loops of its own: ``database_url`` asks for it by name, and synchronous
    # tests use it too (``berth simulate --record`` runs its own loop, which a running one refuses).
    name = f"t_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(postgres_server, f'CREATE DATABASE "{name}"'))
    yield postgres_server.rsplit("/", 1)[0] + f"/{name}"
    asyncio.run(_admin(postgres_server, f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    """An empty database of each kind the store supports."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url
