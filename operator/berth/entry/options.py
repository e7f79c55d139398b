"""Command-line option types shared by the ``berth`` commands.

``DURATION`` reads Go-style durations (``90s``, ``5m``, ``1h30m``) or plain seconds into float
seconds and reports a bad value as a usage error naming the option. Used by ``simulate --until``,
``report --since``, ``explain --at`` and ``queues --at``.
"""

from __future__ import annotations

import click

from berth.api import duration


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
