"""Create the history tables: runs, events and quotas.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the three tables and their indexes."""
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, autoincrement=True),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("t", sa.Float, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("workload", sa.String(512), nullable=False),
        sa.Column("uid", sa.String(128), nullable=False),
        sa.Column("job", sa.String(512), nullable=True),
        sa.Column("namespace", sa.String(253), nullable=False),
        sa.Column("local_queue", sa.String(253), nullable=False),
        sa.Column("cluster_queue", sa.String(253), nullable=False),
        sa.Column("priority", sa.BigInteger, nullable=False),
        sa.Column("priority_class", sa.String(253), nullable=True),
        sa.Column("reason", sa.String(128), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("by", sa.String(512), nullable=True),
        sa.Column("flavors", sa.JSON, nullable=False),
        sa.Column("resources", sa.JSON, nullable=False),
        sa.Column("wait_seconds", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_events_run_id_runs", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_events_run_id_t", "events", ["run_id", "t"])
    op.create_index("ix_events_run_id_cluster_queue", "events", ["run_id", "cluster_queue"])
    op.create_table(
        "quotas",
        sa.Column("id", sa.Integer, autoincrement=True),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("t", sa.Float, nullable=False),
        sa.Column("cluster_queue", sa.String(253), nullable=False),
        sa.Column("cohort", sa.String(253), nullable=True),
        sa.Column("flavor", sa.String(253), nullable=False),
        sa.Column("resource", sa.String(253), nullable=False),
        sa.Column("nominal", sa.BigInteger, nullable=False),
        sa.Column("borrowing_limit", sa.BigInteger, nullable=True),
        sa.Column("lending_limit", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_quotas"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_quotas_run_id_runs", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_quotas_run_id_t", "quotas", ["run_id", "t"])


def downgrade() -> None:
    """Drop the three tables."""
    op.drop_index("ix_quotas_run_id_t", table_name="quotas")
    op.drop_table("quotas")
    op.drop_index("ix_events_run_id_cluster_queue", table_name="events")
    op.drop_index("ix_events_run_id_t", table_name="events")
    op.drop_table("events")
    op.drop_table("runs")
