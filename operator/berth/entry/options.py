"""Command-line option types shared by the ``berth`` commands.

``DURATION`` reads Go-style durations (``90s``, ``5m``, ``1h30m``) or plain seconds into float
seconds and reports a bad value as a usage error naming the option. Used by ``simulate --until``,
``report --since``, ``explain --at`` and ``queues --at``.

``data_dir`` and ``default_history_url`` say where the operator keeps its embedded history
store, so ``berth run`` writes where ``berth report`` reads without either being told.
"""

from __future__ import annotations

import os
import pathlib

import click

from berth.api import duration

DATA_DIR_ENV = "BERTH_DATA_DIR"


def data_dir() -> pathlib.Path:
    """The operator's data directory: ``$BERTH_DATA_DIR``, else ``~/.local/share/berth``."""
    return pathlib.Path(os.environ.get(DATA_DIR_ENV) or pathlib.Path.home() / ".local/share/berth")


def default_history_url(directory: pathlib.Path | None = None) -> str:
    """The embedded history store (SQLite) in a data directory (default: ``data_dir()``)."""
    # Imported here: SQLAlchemy and Alembic cost every other command half a second to load.
    from berth.adapters.history import store  # noqa: PLC0415 - see above

    return store.default_url(directory or data_dir())


class _Duration(click.ParamType[float]):
    """A duration option, converted to seconds."""

    name = "DURATION"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        try:
            return duration.parse(value)
        except duration.DurationError as err:
            self.fail(str(err), param, ctx)


DURATION = _Duration()
