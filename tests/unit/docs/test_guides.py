"""The user guides stay in step with the code.

Every reason Berth defines is explained in the user guide; the migration guide's ``berth import``
example runs and says what it prints.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from berth.api import base, conditions, kinds
from berth.entry import cli
from operator_env import ROOT

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


MIGRATE = ROOT / "docs" / "migrate-from-kueue.md"
KUEUE_EXAMPLE = "config/migrate/kueue-queues.yaml"


def _imported() -> tuple[list[dict[str, Any]], list[str]]:
    result = CliRunner().invoke(cli.main, ["import", KUEUE_EXAMPLE])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
    return docs, result.stderr.splitlines()


def test_the_migration_guide_quotes_the_warnings_berth_import_prints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    _, warnings = _imported()
    quoted = re.search(r"```text\n(.*?)```", MIGRATE.read_text(), flags=re.DOTALL)
    assert quoted is not None
    assert quoted.group(1).splitlines() == warnings


def test_the_migration_example_converts_as_the_guide_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    docs, _ = _imported()
    by_kind = {d["kind"]: d for d in docs}
    assert by_kind["ClusterQueue"]["spec"]["cohortName"] == "org"
    assert "admissionChecks" not in by_kind["ClusterQueue"]["spec"]
    assert by_kind["AdmissionCheck"]["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    config = by_kind["Configuration"]
    assert config["waitForPodsReady"]["blockAdmission"] is True
    assert config["fairSharing"] == {}
    labels = by_kind["Job"]["metadata"]["labels"]
    assert labels == {"berth.dev/queue-name": "training", "berth.dev/priority-class": "urgent"}
    for doc in docs:
        if doc["apiVersion"] == base.API_VERSION:
            obj, problems = kinds.try_load(doc)
            assert obj is not None
            assert problems == [], doc["kind"]
