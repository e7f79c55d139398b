"""Getting history into the store without ever blocking the producer.

``Writer`` is the operator's sink: ``submit`` puts a row on a bounded ``asyncio.Queue`` and
returns at once; when the queue is full the row is dropped and counted (``dropped`` and the
``berth_history_dropped_total`` metric), because admission must never wait for a database. One
task (``run``) drains the queue in batches, each batch one transaction; a batch the database
refuses is logged, dropped and counted the same way, and the writer goes on. ``close`` flushes
what is queued and ends the run.

``Buffer`` is the simulator's sink: it keeps a whole run in memory, and ``record_run`` writes
it once the run is over (a simulated run has no scheduler loop to protect).
Called by ``berth simulate --record`` and, with the operator, its composition root.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
from typing import Protocol

from sqlalchemy.ext import asyncio as sa_asyncio

from berth.adapters.history import records, store


class Counters(Protocol):
    """The metrics the writer reports to (``metrics.Metrics`` has them)."""

    def report_history_write(self, rows: int = 1) -> None:
        """Count rows written."""

    def report_history_dropped(self, rows: int = 1) -> None:
        """Count rows dropped."""


log = logging.getLogger(__name__)

_Item = records.Record | tuple[float, list[records.QuotaRow]]


class Writer:
    """One writer task behind a bounded queue."""

    def __init__(
        self,
        engine: sa_asyncio.AsyncEngine,
        run_id: int,
        started_at: dt.datetime,
        *,
        maxsize: int = 10_000,
        batch: int = 500,
        counters: Counters | None = None,
    ) -> None:
        self.engine = engine
        self.run_id = run_id
        self.started_at = started_at
        self.batch = batch
        self.counters = counters
        self.queue: asyncio.Queue[_Item | None] = asyncio.Queue(maxsize=maxsize)
        self.dropped = 0
        self.written = 0
        self._end: float | None = None

    def _put(self, item: _Item) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.counters is not None:
                self.counters.report_history_dropped()

    def submit(self, record: records.Record) -> None:
        """Queue one transition; drop and count it if the queue is full."""
        self._put(record)

    def quotas(self, t: float, rows: list[records.QuotaRow]) -> None:
        """Queue the quota table in force from ``t``."""
        self._put((t, rows))

    def end(self, t: float) -> None:
        """Note when the run ends; ``close`` writes it."""
        self._end = t

    async def run(self) -> None:
        """Write queued rows until ``close``; each batch is one transaction."""
        while True:
            item = await self.queue.get()
            items = [item]
            while len(items) < self.batch and not self.queue.empty():
                items.append(self.queue.get_nowait())
            done = None in items
            events = [i for i in items if isinstance(i, records.Record)]
            quotas = [q for i in items if isinstance(i, tuple) for q in i[1]]
            if events or quotas:
                await self._write(events, quotas)
            if done:
                return

    async def _write(self, events: list[records.Record], quotas: list[records.QuotaRow]) -> None:
        try:
            written = await store.write(self.engine, self.run_id, self.started_at, events, quotas)
        except store.HistoryError as err:
            # The database being away must not stop the writer: this batch is lost and
            # counted, and the next one tries again.
            lost = len(events) + len(quotas)
            log.warning("history: %d rows not written: %s", lost, err)
            self.dropped += lost
            if self.counters is not None:
                self.counters.report_history_dropped(lost)
            return
        self.written += written
        if self.counters is not None:
            self.counters.report_history_write(written)

    async def close(self, task: asyncio.Task[None]) -> None:
        """Flush the queue, stop the ``run`` task and close the run if it ended."""
        await self.queue.put(None)
        await task
        if self._end is not None:
            await store.end_run(self.engine, self.run_id, self.started_at, self._end)


@dataclasses.dataclass(slots=True)
class Buffer:
    """A whole run in memory (the simulator's sink)."""

    events: list[records.Record] = dataclasses.field(default_factory=list)
    quota_rows: list[records.QuotaRow] = dataclasses.field(default_factory=list)
    ended: float | None = None

    def submit(self, record: records.Record) -> None:
        """Keep one transition."""
        self.events.append(record)

    def quotas(self, t: float, rows: list[records.QuotaRow]) -> None:
        """Keep the quota table in force from ``t``."""
        self.quota_rows.extend(dataclasses.replace(r, t=t) for r in rows)

    def end(self, t: float) -> None:
        """Keep the end of the run."""
        self.ended = t


async def record_run(
    url: str, buffer: Buffer, *, kind: str, label: str, started_at: dt.datetime
) -> int:
    """Migrate the store at ``url``, write a buffered run into it and return the run's id."""
    engine = await store.open_store(url)
    try:
        run_id = await store.start_run(engine, kind=kind, label=label, started_at=started_at)
        await store.write(engine, run_id, started_at, buffer.events, buffer.quota_rows)
        if buffer.ended is not None:
            await store.end_run(engine, run_id, started_at, buffer.ended)
    finally:
        await engine.dispose()
    return run_id
