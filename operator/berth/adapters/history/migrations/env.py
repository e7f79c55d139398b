"""Alembic's environment: run the migrations on the connection ``migrate`` passes in.

There is no ``alembic.ini``: ``migrate.alembic_config`` sets the script location and puts the
(synchronous side of the) connection in ``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from berth.adapters.history import models

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=models.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
