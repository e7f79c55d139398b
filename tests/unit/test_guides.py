"""The user guides stay in step with the code: every reason Berth defines is explained."""

from __future__ import annotations

import enum
import pathlib

import pytest

from berth.api import conditions

ROOT = pathlib.Path(__file__).resolve().parents[2]
USER_GUIDE = ROOT / "docs" / "user-guide.md"

REASONS = [
    pytest.param(member, id=f"{enum_type.__name__}.{member.name}")
    for enum_type in (
        conditions.PendingReason,
        conditions.EvictionReason,
        conditions.PreemptionReason,
        conditions.FinishReason,
    )
    for member in enum_type
]


@pytest.mark.parametrize("reason", REASONS)
def test_the_user_guide_explains_every_reason(reason: enum.StrEnum) -> None:
    assert f"`{reason.value}`" in USER_GUIDE.read_text()
