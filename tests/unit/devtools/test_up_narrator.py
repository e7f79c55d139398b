"""``berth up``'s narrator counts admissions and preemptions from successive looks at Workloads."""

from __future__ import annotations

from typing import Any

import pytest

from berth.devtools import up_cmd


def _wl(**conditions: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "wl",
            "namespace": "team",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "status": {
            "conditions": [
                {"type": kind, "status": status, "reason": "R", "message": "m"}
                for kind, status in conditions.items()
            ]
        },
    }


@pytest.mark.parametrize(
    ("looks", "admissions", "preemptions"),
    [
        # Seen pending, then admitted, then preempted with the admission cleared.
        (
            [
                {"QuotaReserved": "False"},
                {"Admitted": "True"},
                {"Admitted": "False", "Preempted": "True"},
            ],
            1,
            1,
        ),
        # Admitted and preempted between two looks, the admission cleared: still one of each.
        ([{"QuotaReserved": "False"}, {"Admitted": "False", "Preempted": "True"}], 1, 1),
        # Admitted and preempted between two looks, the admission not cleared yet: counted once.
        ([{"QuotaReserved": "False"}, {"Admitted": "True", "Preempted": "True"}], 1, 1),
        # Admitted, preempted, admitted again.
        (
            [
                {"Admitted": "True"},
                {"Admitted": "False", "Preempted": "True"},
                {"Admitted": "True", "Preempted": "False"},
            ],
            2,
            1,
        ),
    ],
)
def test_admissions_and_preemptions_are_counted_even_between_looks(
    looks: list[dict[str, str]],
    admissions: int,
    preemptions: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    narrator = up_cmd.Narrator(started=0.0)
    for conditions in looks:
        narrator.look([_wl(**conditions)])
    assert (narrator.admissions, narrator.preemptions) == (admissions, preemptions)
    assert "preempted" in capsys.readouterr().out
