"""``webhooks/`` holds what ``berth manifests`` generates: the operator's own configurations.

The files are built by ``operator.webhooks.configurations`` (what the operator registers in
local mode) for the default Configuration, pointing at the webhook Service with no caBundle;
the command regenerates them, checks them, and writes them for another Configuration.
"""

from __future__ import annotations

import pathlib

import yaml
from click.testing import CliRunner

from berth.api import configuration
from berth.entry import cli, manifests_cmd
from berth.operator.webhooks import configurations
from operator_env import ROOT

WEBHOOK_DIR = ROOT / "webhooks"
PATTERN = "*webhookconfiguration.yaml"


def test_the_webhooks_directory_matches_what_berth_manifests_generates() -> None:
    on_disk = {p.name: p.read_text() for p in WEBHOOK_DIR.glob(PATTERN)}
    want = manifests_cmd.webhook_files(configuration.Configuration())
    assert sorted(on_disk) == sorted(want), "run `berth manifests` to regenerate webhooks/"
    for name, text in want.items():
        assert on_disk[name] == text, f"webhooks/{name} is stale; run `berth manifests`"


def test_the_generated_files_are_the_operators_configurations_calling_the_service() -> None:
    config = configuration.Configuration()
    service = configurations.Service("berth-webhook", "berth-system")
    docs = [yaml.safe_load(p.read_text()) for p in sorted(WEBHOOK_DIR.glob(PATTERN))]
    assert sorted(docs, key=lambda d: d["kind"]) == configurations.build(service, config)
    for doc in docs:
        assert doc["metadata"]["name"] == configurations.NAME
        for hook in doc["webhooks"]:
            assert set(hook["clientConfig"]) == {"service"}, "no URL, and no caBundle to go stale"
            assert hook["clientConfig"]["service"]["port"] == configurations.SERVICE_PORT


def test_no_selector_is_written_as_a_yaml_alias() -> None:
    """Webhooks share selector objects in memory; a reader of the file must see each in full."""
    for path in WEBHOOK_DIR.glob(PATTERN):
        assert "&id" not in path.read_text()
        assert "*id" not in path.read_text()


def test_manifests_command_writes_and_checks_the_webhooks(tmp_path: pathlib.Path) -> None:
    runner = CliRunner()
    crds, hooks = tmp_path / "crds", tmp_path / "webhooks"
    hooks.mkdir()
    (hooks / "README.md").write_text("kept")
    (hooks / "gone.validatingwebhookconfiguration.yaml").write_text("old")
    args = ["manifests", "--crds", str(crds), "--webhooks", str(hooks)]
    assert runner.invoke(cli.main, [*args, "--check"]).exit_code == 1
    result = runner.invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in hooks.iterdir()) == [
        "README.md",
        "mutatingwebhookconfiguration.yaml",
        "validatingwebhookconfiguration.yaml",
    ]
    assert runner.invoke(cli.main, [*args, "--check"]).exit_code == 0
    # Another Configuration (pod groups on, unqueued work refused, another namespace) makes
    # other webhooks; the check says the directory is out of date for it.
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: berth.dev/v1beta1\nkind: Configuration\nnamespace: queues\n"
        "manageJobsWithoutQueueName: true\nintegrations:\n  frameworks: [batch/job, pod]\n"
    )
    other = [*args, "--config", str(config), "--webhook-service", "queues-webhook"]
    assert runner.invoke(cli.main, [*other, "--check"]).exit_code == 1
    assert runner.invoke(cli.main, other).exit_code == 0
    validating = yaml.safe_load((hooks / "validatingwebhookconfiguration.yaml").read_text())
    names = {h["name"] for h in validating["webhooks"]}
    assert {"vpod.berth.dev", "vkinds-managed-namespaces.berth.dev"} <= names
    services = {h["clientConfig"]["service"]["name"] for h in validating["webhooks"]}
    namespaces = {h["clientConfig"]["service"]["namespace"] for h in validating["webhooks"]}
    assert (services, namespaces) == ({"queues-webhook"}, {"queues"})
    assert (hooks / "README.md").read_text() == "kept"
