"""Every integrated kind whose CRD has a ``scale`` subresource is checked there, as its own update.

The frameworks' CRDs are the ones ``scripts/build-control-plane`` copies beside their
controllers from their Go modules (the e2e tests install the same). A kind whose CRD gains a
scale subresource in a new release, without Berth knowing where it writes, would be a way
around the queue for anyone who can create an HPA: this fails first. Checked for each kind:
the replicas path the CRD declares is the one ``scaled`` writes.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml

from berth.devtools.devcluster import binaries, errors
from berth.jobs import registry
from berth.jobs.framework import protocol

pytestmark = pytest.mark.integration

FRAMEWORKS = ("jobset", "training-operator", "kuberay", "trainer")


def _crds() -> list[dict[str, Any]]:
    cache = binaries.BinaryCache.default()
    out = []
    for framework in FRAMEWORKS:
        try:
            manifest = cache.framework_manifest(framework, "crds.yaml")
        except errors.MissingBinaryError as e:
            if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
                pytest.fail(f"{e}; CI must build it (scripts/test runs the build)")
            pytest.skip(str(e))
        # libyaml's loader: the CRDs are megabytes of schema.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        out += [d for d in yaml.load_all(manifest.read_text(), Loader=loader) if d]

    return out


def _scale_path(crd: dict[str, Any]) -> str | None:
    for version in crd["spec"]["versions"]:
        scale = (version.get("subresources") or {}).get("scale")
        if version.get("storage") and scale:
            return str(scale["specReplicasPath"])
    return None


def test_berth_checks_the_scale_of_every_kind_whose_crd_has_one() -> None:
    by_kind = {i.kind: i for i in registry.EVERY_KIND}
    declared = {
        crd["spec"]["names"]["kind"]: path
        for crd in _crds()
        if crd["spec"]["names"]["kind"] in by_kind and (path := _scale_path(crd)) is not None
    }
    assert set(declared) == {"PyTorchJob", "PaddleJob", "JAXJob"}, declared
    for kind, path in declared.items():
        integ = by_kind[kind]
        assert isinstance(integ, protocol.Scalable), kind
        # The path the CRD declares is where scaled() writes: .spec.<specs>.<Role>.replicas.
        _, spec, specs, role, field = path.split(".")
        scaled = integ.scaled({"spec": {specs: {role: {"replicas": 1}}}}, 7)
        assert scaled is not None, kind
        assert scaled[spec][specs][role][field] == 7, (kind, path)
    for kind, integ in by_kind.items():
        if kind not in declared and isinstance(integ, protocol.Scalable):
            assert integ.scaled({"spec": {}}, 7) is None, kind
