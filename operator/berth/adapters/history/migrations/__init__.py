"""Alembic migrations of the history store, shipped inside the package and run at start-up.

``env.py`` runs them on the connection ``store.migrate`` hands over; ``versions/`` holds one
module per revision, each with ``upgrade`` and ``downgrade``.
"""
