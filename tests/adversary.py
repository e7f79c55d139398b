"""An ordinary namespace user for the adversarial e2e tests: a ServiceAccount token kubeconfig.

``namespace_user`` makes the namespace, a ServiceAccount in it, a Role that allows what a team
member usually gets (Jobs, CronJobs and Pods in full; LocalQueues and Workloads read-only) and a
RoleBinding, then asks the API server for a token (TokenRequest) and writes a kubeconfig that
authenticates with it. Tests act through the returned ``Kubectl`` exactly as that user would;
the API server's RBAC decides what is allowed, so nothing here is faked.

``workload_editor`` adds Kueue's ``workload-editor`` rights (update on Workloads) for the tests
of what a Workload update may change.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml

from berth.devtools.devcluster import errors, launcher
from berth.devtools.devcluster import kubectl as kubectl_mod

USER_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["*"]},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["*"]},
    {
        "apiGroups": ["berth.dev"],
        "resources": ["localqueues", "workloads"],
        "verbs": ["get", "list", "watch"],
    },
)
"""The Role the issue's tester used: full rights on Jobs, CronJobs and Pods, read on the queue."""

WORKLOAD_EDITOR_RULES: tuple[dict[str, Any], ...] = (
    {
        "apiGroups": ["berth.dev"],
        "resources": ["workloads"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
)
"""Kueue's ``workload-editor`` ClusterRole, for the tests of Workload updates."""


@dataclasses.dataclass(frozen=True, slots=True)
class NamespaceUser:
    """A ServiceAccount acting through its own token kubeconfig."""

    namespace: str
    name: str
    kubeconfig: Path
    kubectl: kubectl_mod.Kubectl

    def denied(self, *args: str, stdin: str | None = None) -> str:
        """Run ``kubectl ARGS`` as this user, expect a refusal, and return its message."""
        try:
            out = self.kubectl.run(*args, stdin=stdin)
        except errors.CommandError as e:
            return str(e)
        msg = f"expected kubectl {' '.join(args)} to be refused, it printed: {out}"
        raise AssertionError(msg)

    def apply(self, obj: dict[str, Any]) -> str:
        """Create or update one object as this user (client-side apply)."""
        return self.kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(obj))

    def patch(self, kind: str, name: str, patch: dict[str, Any], *, kind_of: str = "merge") -> str:
        """``kubectl patch`` one object of this user's namespace."""
        return self.kubectl.run(
            "patch", kind, name, "-n", self.namespace, "--type", kind_of, "-p", json.dumps(patch)
        )


def namespace_user(
    plane: launcher.ControlPlane,
    namespace: str,
    directory: Path,
    *,
    name: str = "team-member",
    extra_rules: tuple[dict[str, Any], ...] = (),
) -> NamespaceUser:
    """Create ``namespace`` (if needed) and a ServiceAccount user in it; return that user."""
    admin = plane.kubectl()
    role = f"{name}-role"
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": role, "namespace": namespace},
            "rules": [*USER_RULES, *extra_rules],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": role, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]
    admin.apply(objects)
    token = admin.run("create", "token", name, "-n", namespace, "--duration=2h").strip()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "berth-dev",
                "cluster": {"server": plane.server, "certificate-authority": str(plane.ca_file)},
            }
        ],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": "berth-dev", "user": name, "namespace": namespace},
            }
        ],
        "current-context": name,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{namespace}-{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    user_kubectl = kubectl_mod.Kubectl(plane.kubectl().binary, path)
    return NamespaceUser(namespace, name, path, user_kubectl)
