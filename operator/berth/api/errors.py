"""Validation results of the API layer.

Validation never raises: it returns a list of ``FieldError``, each naming the field path in YAML
terms (``spec.resourceGroups[0].flavors[1].resources[0].lendingLimit``) and a message that says
what to change. ``ApiError`` is raised only by loaders that must refuse a whole document::

    ValueError
     └── ApiError              a document that cannot be loaded; carries every FieldError
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class FieldError:
    """One problem in one field: its YAML path and how to fix it."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ApiError(ValueError):
    """A document that cannot be loaded, with every field error found in it."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


_MAX_SHOWN = 60
"""Longest value echoed in a message; a long one is cut, since the path already locates it."""


def shorten(value: object) -> str:
    """Show a value in a message: its repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."
