"""The history tables, as SQLAlchemy 2 declarative models.

``runs``: one per operator process or recorded simulation (kind, wall-clock start and end).
``events``: one row per workload transition (see ``records.Record``), with ``t`` in seconds
since the run's start and ``at`` the wall-clock time. ``quotas``: the quota table of every
ClusterQueue, written again whenever it changes. The Alembic migrations in ``migrations/``
create exactly these tables; a test compares them. Used by ``store`` and the migrations.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm


class Base(orm.DeclarativeBase):
    """The declarative base of the history tables."""

    metadata = sa.MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


class Run(Base):
    """One operator process, or one recorded simulation."""

    __tablename__ = "runs"

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    label: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")
    started_at: orm.Mapped[dt.datetime] = orm.mapped_column(sa.DateTime(timezone=True))
    ended_at: orm.Mapped[dt.datetime | None] = orm.mapped_column(
        sa.DateTime(timezone=True), nullable=True
    )
    duration: orm.Mapped[float | None] = orm.mapped_column(sa.Float, nullable=True)
    """Seconds from start to end, once it ended."""


class Event(Base):
    """One workload transition."""

    __tablename__ = "events"
    __table_args__ = (
        sa.Index(None, "run_id", "t"),
        sa.Index(None, "run_id", "cluster_queue"),
    )

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    run_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("runs.id", ondelete="CASCADE"))
    t: orm.Mapped[float] = orm.mapped_column(sa.Float)
    at: orm.Mapped[dt.datetime] = orm.mapped_column(sa.DateTime(timezone=True))
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    workload: orm.Mapped[str] = orm.mapped_column(sa.String(512))
    uid: orm.Mapped[str] = orm.mapped_column(sa.String(128))
    job: orm.Mapped[str | None] = orm.mapped_column(sa.String(512), nullable=True)
    namespace: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    local_queue: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    cluster_queue: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    priority: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    priority_class: orm.Mapped[str | None] = orm.mapped_column(sa.String(253), nullable=True)
    reason: orm.Mapped[str] = orm.mapped_column(sa.String(128), default="")
    message: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")
    by: orm.Mapped[str | None] = orm.mapped_column(sa.String(512), nullable=True)
    flavors: orm.Mapped[dict[str, Any]] = orm.mapped_column(sa.JSON)
    resources: orm.Mapped[dict[str, Any]] = orm.mapped_column(sa.JSON)
    wait_seconds: orm.Mapped[float | None] = orm.mapped_column(sa.Float, nullable=True)


class Quota(Base):
    """One cell of a ClusterQueue's quota, in force from ``t`` on."""

    __tablename__ = "quotas"
    __table_args__ = (sa.Index(None, "run_id", "t"),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    run_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("runs.id", ondelete="CASCADE"))
    t: orm.Mapped[float] = orm.mapped_column(sa.Float)
    cluster_queue: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    cohort: orm.Mapped[str | None] = orm.mapped_column(sa.String(253), nullable=True)
    flavor: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    resource: orm.Mapped[str] = orm.mapped_column(sa.String(253))
    nominal: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    borrowing_limit: orm.Mapped[int | None] = orm.mapped_column(sa.BigInteger, nullable=True)
    lending_limit: orm.Mapped[int | None] = orm.mapped_column(sa.BigInteger, nullable=True)


metadata = Base.metadata
