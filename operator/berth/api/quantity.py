"""Kubernetes quantities as integers in canonical units, and back.

``cpu`` is counted in milli-CPU; memory-like resources (``memory``, ``ephemeral-storage``,
``storage``, ``hugepages-*``) in bytes; every other resource (``nvidia.com/gpu``, ``pods``) as a
count. Fractions are rounded up, as Kubernetes does when it reads a quantity's value. Printing
gives the Kubernetes canonical form (``"4"``, ``"500m"``, ``"16Gi"``) and parses back to the same
integer. Called by the API models when they load YAML and by every output that prints usage.
"""

from __future__ import annotations

import decimal
import math
import re

from berth.api import names

_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?P<suffix>[a-zA-Z]*|[eE][+-]?[0-9]+)$"
)

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": decimal.Decimal("1e-9"),
    "u": decimal.Decimal("1e-6"),
    "m": decimal.Decimal("1e-3"),
    "": decimal.Decimal(1),
    "k": decimal.Decimal("1e3"),
    "M": decimal.Decimal("1e6"),
    "G": decimal.Decimal("1e9"),
    "T": decimal.Decimal("1e12"),
    "P": decimal.Decimal("1e15"),
    "E": decimal.Decimal("1e18"),
}
_PRINT_BINARY = [
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
]
_PRINT_DECIMAL = [
    ("E", 10**18),
    ("P", 10**15),
    ("T", 10**12),
    ("G", 10**9),
    ("M", 10**6),
    ("k", 10**3),
]

PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""Kubernetes' own pattern for a quantity written as a string, used in the CRD schemas."""

JSON_SCHEMA: dict[str, object] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": PATTERN,
    "x-kubernetes-int-or-string": True,
}
"""The OpenAPI schema of a quantity field: an integer or a string in Kubernetes' notation."""

CPU = names.ResourceName("cpu")
PODS = names.ResourceName("pods")


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity, or not one this field accepts."""


def is_milli(resource: str) -> bool:
    """Tell whether a resource is counted in thousandths (only ``cpu``)."""
    return resource == CPU


def is_bytes(resource: str) -> bool:
    """Tell whether a resource is counted in bytes."""
    return resource in {"memory", "ephemeral-storage", "storage"} or resource.startswith(
        "hugepages-"
    )


_HINT = "write a number such as 4, 500m or 16Gi"
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")
_MAX_EXPONENT = 30
_MAX_UNITS = 2**63 - 1
"""The largest amount in canonical units (Kubernetes keeps quantities in an int64)."""
_CONTEXT = decimal.Context(prec=100, traps=[decimal.Overflow, decimal.InvalidOperation])
"""Arithmetic precise enough that no real quantity is rounded before the final ceiling."""


def parse_decimal(value: object) -> decimal.Decimal:
    """Parse a quantity (string, int or float from YAML) into an exact decimal value."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity; {_HINT}")
    if isinstance(value, int):
        return decimal.Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity; {_HINT}")
        return decimal.Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity; {_HINT}")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity; {_HINT}")
    return _scale(value, decimal.Decimal(match["num"]), match["suffix"])


def _scale(value: object, number: decimal.Decimal, suffix: str) -> decimal.Decimal:
    if suffix in _BINARY:
        return _CONTEXT.multiply(number, _BINARY[suffix])
    if suffix in _DECIMAL:
        return _CONTEXT.multiply(number, _DECIMAL[suffix])
    if _EXPONENT.fullmatch(suffix):
        digits = suffix[1:].lstrip("+-")
        exponent = int(suffix[1:]) if len(digits) <= 3 else _MAX_EXPONENT + 1
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(
                f"{value!r} has an exponent outside -{_MAX_EXPONENT}..{_MAX_EXPONENT}; {_HINT}"
            )
        return number.scaleb(exponent, _CONTEXT)
    raise QuantityError(
        f"{value!r} has an unknown suffix {suffix!r}; use one of m, k, M, G, T, Ki, Mi, Gi, Ti"
    )


def parse(resource: str, value: object) -> int:
    """Parse a non-negative quantity of ``resource`` into canonical integer units, rounding up."""
    amount = parse_decimal(value)
    if amount < 0:
        raise QuantityError(f"{value!r} is negative; quantities of {resource} must be >= 0")
    if is_milli(resource):
        amount = _CONTEXT.multiply(amount, 1000)
    if amount > _MAX_UNITS:
        raise QuantityError(f"{value!r} is too large for a quantity of {resource}")
    return int(amount.to_integral_value(rounding=decimal.ROUND_CEILING, context=_CONTEXT))


def _format_plain(count: int, *, binary: bool) -> str:
    if count == 0:
        return "0"
    if binary:
        for suffix, size in _PRINT_BINARY:
            if count % size == 0:
                return f"{count // size}{suffix}"
    for suffix, size in _PRINT_DECIMAL:
        if count % size == 0:
            return f"{count // size}{suffix}"
    return str(count)


def format(resource: str, amount: int) -> str:  # noqa: A001 - the module is used as quantity.format
    """Print canonical units of ``resource`` in Kubernetes canonical form."""
    if amount < 0:
        return "-" + format(resource, -amount)
    if is_milli(resource):
        if amount % 1000 != 0:
            return f"{amount}m"
        return _format_plain(amount // 1000, binary=False)
    return _format_plain(amount, binary=is_bytes(resource))


def parse_list(values: object) -> dict[names.ResourceName, int]:
    """Parse a ResourceList mapping (``{cpu: 4, memory: 16Gi}``) into canonical units."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise QuantityError("expected a mapping of resource names to quantities")
    out: dict[names.ResourceName, int] = {}
    for key, raw in values.items():
        resource = str(key)
        try:
            out[names.ResourceName(resource)] = parse(resource, raw)
        except QuantityError as err:
            raise QuantityError(f"{resource}: {err}") from err
    return out


def format_list(values: dict[names.ResourceName, int]) -> dict[str, str]:
    """Print a ResourceList in canonical form, keys sorted."""
    return {str(k): format(k, v) for k, v in sorted(values.items())}
