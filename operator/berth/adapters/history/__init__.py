"""The history store: every workload transition in SQL, for ``berth report`` and audits.

- ``records``: the rows as plain values (``Record``, ``QuotaRow``, ``EventKind``) and the
  ``RecordSink`` port the simulator's recorder and the operator's loop write to.
- ``models``: the SQLAlchemy tables (``runs``, ``events``, ``quotas``).
- ``store``: engines for SQLite (WAL, the embedded default) and PostgreSQL, Alembic migrations
  run at start-up, writing a run and reading it back.
- ``writer``: one asynchronous writer behind a bounded queue; a full queue drops and counts.
- ``figures``: the report's numbers computed from a run's rows (pure).
- ``migrations``: Alembic's environment and versions, shipped inside the package.

Called by ``berth.sim.observe`` (``berth simulate --record``), ``berth report`` and, with the
operator, its scheduler loop.
"""

from berth.adapters.history.records import (
    EventKind,
    QuotaRow,
    Record,
    RecordSink,
    flavors_of,
    quota_rows,
    usage_of,
)

__all__ = [
    "EventKind",
    "QuotaRow",
    "Record",
    "RecordSink",
    "flavors_of",
    "quota_rows",
    "usage_of",
]
