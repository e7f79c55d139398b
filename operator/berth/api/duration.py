"""Go-style durations (``90s``, ``5m``, ``1h30m``, ``250ms``) as float seconds, and back.

Used by the Configuration (timeouts), ClusterQueue backfill settings, runtime annotations and
the simulator's annotations. A plain number is seconds.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

import pydantic

_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class DurationError(ValueError):
    """A value that is not a duration."""


_HINT = "write e.g. 90s, 5m or 1h30m"

LONGEST = (2**63 - 1) / 1e9
"""Go's longest ``time.Duration`` (2^63 - 1 ns, about 292 years) in seconds: Kubernetes and
Kueue refuse anything longer, and so does Berth, so no duration is ever infinite."""


def _check_seconds(value: object, seconds: float) -> float:
    if not math.isfinite(seconds):
        raise DurationError(f"{value!r} is not a finite duration; {_HINT}")
    if seconds < 0:
        raise DurationError(f"{value!r} is negative; durations must be >= 0")
    if seconds > LONGEST:
        raise DurationError(
            f"{value!r} is longer than Go's longest duration; write at most 2562047h47m16s "
            "(about 292 years)"
        )
    return seconds


def _parse_text(value: str) -> float:
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return _check_seconds(value, seconds)
    if text.startswith("-") and text[1:] and _parse_text(text[1:]) > 0:
        raise DurationError(f"{value!r} is negative; durations must be >= 0")
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match[1]) * _UNIT[match[2]]
        pos = match.end()
    if pos != len(text) or not text:
        raise DurationError(f"{value!r} is not a duration; {_HINT}")
    return _check_seconds(value, total)


Duration = Annotated[float, pydantic.WithJsonSchema({"type": "string", "format": "duration"})]
"""Seconds, written in YAML as a Go-style duration (``90s``, ``5m``, ``1h30m``).

A model parses its ``Duration`` fields with ``field_parser`` and prints them with ``format``."""


def field_parser(value: object) -> object:
    """Parse a duration for a pydantic ``before`` validator (a ValueError names the value)."""
    try:
        return parse(value)
    except DurationError as err:
        raise ValueError(str(err)) from err


def parse(value: object) -> float:
    """Parse a Go-style duration or a number of seconds into seconds (>= 0)."""
    if isinstance(value, bool):
        raise DurationError(f"{value!r} is not a duration; {_HINT}")
    if isinstance(value, int | float):
        return _check_seconds(value, float(value))
    if not isinstance(value, str):
        raise DurationError(f"{value!r} is not a duration; {_HINT}")
    return _parse_text(value)


def format(seconds: float) -> str:  # noqa: A001 - used as duration.format, like quantity.format
    """Print seconds, to the millisecond, as a Go-style duration (Go's ``1h30m0s`` is ``1h30m``)."""
    millis = round(seconds * 1000)
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, ms = divmod(rest, 1000)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if secs or ms:
        out += f"{secs}.{ms:03d}".rstrip("0").rstrip(".") + "s"
    return out
