"""Where the control plane's binaries are cached, at which versions, and finding them.

The versions are pinned once, in ``versions.yaml`` beside this module, which
``scripts/build-control-plane`` also reads; the script fills the cache and this module only looks.
Called by the launcher, by ``berth dev`` and by the test fixtures.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from berth.devtools.devcluster import errors

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

KUBERNETES_COMMANDS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kubelet",
    "kube-proxy",
)
"""The commands built from ``k8s.io/kubernetes``; they share its version (the last two for the
real node, `berth.devtools.devcluster.realnode`)."""

FRAMEWORKS = ("jobset", "training-operator", "kuberay", "trainer")
"""The job frameworks' controllers, each built with its CRDs and webhook manifests beside it."""

COMPONENTS = ("etcd", *KUBERNETES_COMMANDS, "kwok", "helm", "helm-unittest", *FRAMEWORKS)
"""Every binary of the control plane and the frameworks the tests run."""

KUEUE_HARNESS = ("minimalkueue", "kueue-perf-runner")
"""Kueue's scheduler-performance harness (``test/performance/scheduler``), built at the
``kueue`` version with Kueue's CRDs beside the runner; ``berth bench harness --against kueue``
runs it."""

KWOK_POD_STAGES = "pod-general-stages.yaml"
"""kwok's general pod stages, copied beside the kwok binary of the same version by the script."""


@dataclasses.dataclass(frozen=True, slots=True)
class Versions:
    """The pinned versions, as module versions (``v1.34.4``)."""

    kubernetes: str
    etcd: str
    kwok: str
    helm: str
    helm_unittest: str
    """helm-unittest, which runs the chart's unit tests (``helm/berth/tests``)."""
    jobset: str
    """The JobSet controller (``sigs.k8s.io/jobset``)."""
    training_operator: str
    """The Kubeflow training-operator v1 (``github.com/kubeflow/training-operator``)."""
    kuberay: str
    """The KubeRay operator (``github.com/ray-project/kuberay/ray-operator``)."""
    trainer: str
    """The Kubeflow Trainer v2 (``github.com/kubeflow/trainer/v2``)."""
    kueue: str
    """Kueue (``sigs.k8s.io/kueue``), whose scheduler-performance harness is built."""

    def of(self, component: str) -> str:
        """Return the version ``component`` is built at."""
        if component in KUBERNETES_COMMANDS:
            return self.kubernetes
        if component in KUEUE_HARNESS:
            return self.kueue
        if component in ("etcd", "kwok", "helm", "helm-unittest", *FRAMEWORKS):
            value: str = getattr(self, component.replace("-", "_"))
            return value
        known = ", ".join((*COMPONENTS, *KUEUE_HARNESS))
        raise ValueError(f"unknown component {component!r}; known: {known}")


def load_versions() -> Versions:
    """Read the pinned versions from ``versions.yaml``."""
    text = (
        importlib.resources.files("berth.devtools.devcluster")
        .joinpath("versions.yaml")
        .read_text(encoding="utf-8")
    )
    raw = yaml.safe_load(text)
    return Versions(
        kubernetes=str(raw["kubernetes"]),
        etcd=str(raw["etcd"]),
        kwok=str(raw["kwok"]),
        helm=str(raw["helm"]),
        helm_unittest=str(raw["helm-unittest"]),
        jobset=str(raw["jobset"]),
        training_operator=str(raw["training-operator"]),
        kuberay=str(raw["kuberay"]),
        trainer=str(raw["trainer"]),
        kueue=str(raw["kueue"]),
    )


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Return the per-user cache: ``$BERTH_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/berth``."""
    env = os.environ if env is None else env
    if env.get("BERTH_CACHE"):
        return Path(env["BERTH_CACHE"])
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME", str(Path.home()))) / ".cache"
    return base / "berth"


@dataclasses.dataclass(frozen=True, slots=True)
class BinaryCache:
    """The cache directory and the versions expected in it."""

    root: Path
    versions: Versions

    @classmethod
    def default(cls) -> BinaryCache:
        """Return the cache the build script fills for the pinned versions."""
        return cls(root=cache_dir(), versions=load_versions())

    def path(self, component: str) -> Path:
        """Return where ``component`` lives, whether or not it is there."""
        version = self.versions.of(component)
        return self.root / "bin" / f"{component}-{version}" / component

    def find(self, component: str) -> Path:
        """Return the path of ``component``, or raise `MissingBinaryError` if it is not built."""
        path = self.path(component)
        if not os.access(path, os.X_OK):
            raise errors.MissingBinaryError(component, path)
        return path

    def missing(self, components: Iterable[str] = COMPONENTS) -> list[str]:
        """Return the components in ``components`` that are not built, in order."""
        return [name for name in components if not os.access(self.path(name), os.X_OK)]

    def framework_manifest(self, framework: str, manifest: str) -> Path:
        """A framework's ``crds.yaml`` or ``webhooks.yaml``, or raise `MissingBinaryError`."""
        path = self.path(framework).with_name(manifest)
        if not path.is_file():
            raise errors.MissingBinaryError(f"{framework} {manifest}", path)
        return path

    def kueue_crds(self) -> Path:
        """The folder of Kueue's CRDs beside its harness's runner, or raise `MissingBinaryError`."""
        path = self.path("kueue-perf-runner").with_name("crds")
        if not any(path.glob("*.yaml")):
            raise errors.MissingBinaryError("Kueue's CRDs", path)
        return path

    def kwok_pod_stages(self) -> Path:
        """Return kwok's general pod stages file, or raise `MissingBinaryError`."""
        path = self.path("kwok").with_name(KWOK_POD_STAGES)
        if not path.is_file():
            raise errors.MissingBinaryError("kwok pod stages", path)
        return path
