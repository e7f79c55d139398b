"""Every command that reads files or a history URL: unreadable input exits 2 with one line.

A file that is not UTF-8 text (a stray byte, or megabytes of random bytes) and a history
database that cannot be reached or is not a database are bad input like any other: exit
status 2, one line on standard error naming the file or the URL (its password masked),
nothing on standard output, and never a traceback.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import builders
from berth.entry import cli

GPU = "nvidia.com/gpu"
UNREACHABLE = "postgresql://berth:s3cret@127.0.0.1:1/history"
"""Port 1 on the loopback: the connection is refused at once."""


def _random_bytes(size: int) -> bytes:
    return random.Random(13).randbytes(size)  # noqa: S311 - test data, not a secret


def _scenario(tmp_path: Path) -> str:
    path = tmp_path / "ok.yaml"
    path.write_text(
        yaml.safe_dump_all(
            [
                builders.ResourceFlavorBuilder("a100").raw(),
                builders.ClusterQueueBuilder("cq")
                .namespace_selector()
                .flavor_quotas("a100", {GPU: 4})
                .raw(),
                builders.LocalQueueBuilder("lq", "ml").cluster_queue("cq").raw(),
                builders.WorkloadBuilder("w", "ml")
                .queue("lq")
                .pod_set("main", 1, {GPU: 1})
                .sim(duration="60s")
                .raw(),
            ]
        )
    )
    return str(path)


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    content: bytes
    args: list[str]
    """``{file}`` stands for the written file."""
    want_in_message: str


_LATIN1 = "kind: ResourceFlavor\nmetadata: {name: caf\xe9}\n".encode("latin-1")
_BIG = _random_bytes(10 * 1024 * 1024)

FILE_CASES = [
    Case("simulate-latin1", _LATIN1, ["simulate", "{file}"], "not UTF-8 text"),
    Case("simulate-10MB-random", _BIG, ["simulate", "{file}"], "not UTF-8 text"),
    Case("queues-scenario-random", _BIG, ["queues", "--scenario", "{file}"], "not UTF-8 text"),
    Case(
        "explain-scenario-latin1",
        _LATIN1,
        ["explain", "workload/w", "--scenario", "{file}"],
        "not UTF-8 text",
    ),
    Case("import-latin1", _LATIN1, ["import", "{file}"], "not UTF-8 text"),
    Case("import-10MB-random", _BIG, ["import", "{file}"], "not UTF-8 text"),
    Case("report-db-not-a-database", _random_bytes(64 * 1024), ["report", "--db", "{file}"], ""),
]


@pytest.mark.parametrize("case", FILE_CASES, ids=lambda c: c.id)
def test_a_file_that_is_not_utf8_yaml_exits_2_naming_it(tmp_path: Path, case: Case) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(case.content)
    args = [str(path) if a == "{file}" else a for a in case.args]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0]
    assert case.want_in_message in lines[0]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["simulate", "{scenario}", "--record", UNREACHABLE], id="simulate-record"),
        pytest.param(["report", "--db", UNREACHABLE], id="report-db"),
    ],
)
def test_an_unreachable_history_url_exits_2_naming_it(tmp_path: Path, args: list[str]) -> None:
    args = [_scenario(tmp_path) if a == "{scenario}" else a for a in args]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "postgresql://berth:***@127.0.0.1:1/history" in lines[0]
    assert "s3cret" not in result.stderr


@pytest.mark.parametrize(
    ("config", "want"),
    [
        pytest.param(
            {"integrations": {"frameworks": ["batch/job", "ray.io/rayservice"]}},
            "integrations.frameworks[1]:",
            id="a framework Berth does not integrate",
        ),
        pytest.param(
            {"waitForPodsReady": {"timeout": "soon"}},
            "waitForPodsReady.timeout:",
            id="a duration that is not one",
        ),
        pytest.param(
            {"kind": "ResourceFlavor", "metadata": {"name": "a100"}},
            "not a Configuration",
            id="another kind",
        ),
    ],
)
@pytest.mark.parametrize("command", [["run"], ["explain", "job/x"], ["queues"]])
def test_a_bad_configuration_exits_2_naming_the_field(
    tmp_path: Path, config: dict[str, object], want: str, command: list[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump({"apiVersion": "berth.dev/v1beta1", "kind": "Configuration", **config})
    )
    kubeconfig = tmp_path / "kubeconfig"  # never reached: the Configuration is read first
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    args = [*command, f"--config={path}", f"--kubeconfig={kubeconfig}"]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert str(path) in result.stderr
    assert want in result.stderr
