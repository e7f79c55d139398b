"""The webhook configurations: which requests the API server sends to which path, and how.

``build`` makes the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration (both
named ``NAME``) for a Configuration and the job kinds it enables: every webhook's name, path,
rules, object and namespace selectors, failure policy, side effects and timeout. Where they
point is the ``Endpoint``'s:

- ``Url``: local mode, this process at ``https://HOST:PORT`` with the CA bundle it made
  (``server.WebhookServer.register`` applies them, ``unregister`` removes them);
- ``Service``: cluster mode, the webhook Service, with no ``caBundle``: the operator's leader
  (``certificates.keep_certificates``) or cert-manager's CA injector writes it. ``berth
  manifests`` writes these into ``webhooks/``; the Helm chart (``helm/berth/templates/
  webhooks.yaml``) declares the same, and ``tests/chart/test_chart.py`` keeps them equal.

Pure (no API calls). Called by ``server``, ``certificates``, ``berth.entry.manifests_cmd`` and
``berth.entry.live_state``; ``JOB_WEBHOOK`` by the job controller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from berth.api import base, configuration, topology
from berth.api.labels import QUEUE_LABEL
from berth.jobs import registry
from berth.jobs.framework import protocol
from berth.jobs.rules import managed, unqueued
from berth.operator.webhooks import pod_admission

NAME = "berth"
"""The name of both webhook configurations."""
BERTH_PLURALS = (
    "topologies",
    "resourceflavors",
    "cohorts",
    "clusterqueues",
    "localqueues",
    "workloadpriorityclasses",
    "workloads",
)
"""Berth's kinds that the ``mberth`` and ``vberth`` webhooks see."""
_JOB_HOOK = "vjob"
JOB_WEBHOOK = f"{_JOB_HOOK}.berth.dev"
"""The name of the validating Job webhook, as the API server quotes it in a refusal."""
SERVICE_PORT = 443
"""The webhook Service's port (the chart's ``webhookService.port``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Url:
    """Local mode: the API server calls this process at ``base`` and trusts ``ca_bundle``."""

    base: str
    """``https://HOST:PORT``, without a trailing slash."""
    ca_bundle: str
    """The CA certificate, base64 encoded."""

    def client_config(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` of a webhook served at ``path``."""
        return {"url": f"{self.base}{path}", "caBundle": self.ca_bundle}


@dataclasses.dataclass(frozen=True, slots=True)
class Service:
    """Cluster mode: the API server calls the webhook Service; the ``caBundle`` is written later."""

    name: str
    namespace: str
    port: int = SERVICE_PORT

    def client_config(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` of a webhook served at ``path``."""
        service = {"name": self.name, "namespace": self.namespace, "path": path, "port": self.port}
        return {"service": service}


Endpoint = Url | Service


def scalable(enabled: Mapping[str, protocol.Integration]) -> list[tuple[str, str, str]]:
    """The API group, version and plural of each enabled kind with a ``scale`` subresource."""
    out = []
    for integ in enabled.values():
        if isinstance(integ, protocol.Scalable) and integ.scaled({}, 1) is not None:
            group, _, version = integ.api_version.rpartition("/")
            out.append((group, version, integ.plural))
    return out


def build(
    endpoint: Endpoint,
    config: configuration.Configuration,
    integrations: Mapping[str, protocol.Integration] | None = None,
) -> list[dict[str, Any]]:
    """Build the webhook configurations that send admission requests to ``endpoint``.

    ``integrations``: the job kinds ``config`` enables, as the operator holds them (by default
    made from ``config``, as ``jobs.registry.for_configuration`` makes them).
    """
    enabled = registry.for_configuration(config) if integrations is None else integrations

    def hook(name: str, path: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:  # noqa: ANN401 - selectors, as JSON
        return {
            "name": f"{name}.berth.dev",
            "clientConfig": endpoint.client_config(path),
            "rules": rules,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            **extra,
        }

    def rule(
        group: str, plurals: list[str], operations: list[str], version: str = base.VERSION
    ) -> dict[str, Any]:
        return {
            "apiGroups": [group],
            "apiVersions": [version],
            "resources": plurals,
            "operations": operations,
        }

    def job_rules(operations: list[str]) -> list[dict[str, Any]]:
        out = []
        for integ in enabled.values():
            if isinstance(integ, protocol.Composed):
                continue  # members have hooks of their own (below)
            group, _, version = integ.api_version.rpartition("/")
            out.append(rule(group, [integ.plural], operations, version))
        return out

    queued = {"matchExpressions": [{"key": QUEUE_LABEL, "operator": "Exists"}]}
    pod_kind = pod_admission.composed_of(enabled, "Pod")
    # The managed rule 1 (jobs.rules.managed), stated to the API server too: these namespaces
    # never reach the hooks.
    protected = {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": sorted({*managed.NEVER_MANAGED_NAMESPACES, config.namespace}),
    }
    job_namespaces = {"matchExpressions": [protected]}
    no_queue = {"matchExpressions": [{"key": QUEUE_LABEL, "operator": "DoesNotExist"}]}

    def selects(child: registry.ChildKind) -> dict[str, Any]:
        # A child its controller labels with nothing of its own: every one that names no queue
        # (one that does is sent by the job hooks below already).
        if child.label is None:
            return no_queue
        return {"matchExpressions": [{"key": child.label, "operator": "Exists"}]}

    children = [
        hook(
            f"{prefix}{child.plural.removesuffix('s')}-{child.parent.lower()}-children",
            path,
            [rule(child.group, [child.plural], operations, child.version)],
            objectSelector=selects(child),
            namespaceSelector=job_namespaces,
        )
        for child in registry.CHILD_KINDS
        if child.parent in enabled
        for prefix, path, operations in (
            ("m", "/mutate-job", ["CREATE"]),
            ("v", "/validate-job", ["UPDATE"]),
        )
    ]
    job_hooks = [
        hook(
            "mjob",
            "/mutate-job",
            job_rules(["CREATE"]),
            objectSelector=queued,
            namespaceSelector=job_namespaces,
        ),
        *(h for h in children if h["name"].startswith("m")),
    ]
    selector = config.managed_jobs_namespace_selector
    closed: list[dict[str, Any]] = []  # jobs.rules.unqueued's: a managed namespace runs queued work

    if config.manage_jobs_without_queue_name:
        managed_namespaces = selector.to_yaml_dict() if selector is not None else {}
        managed_namespaces["matchExpressions"] = [
            protected,
            *managed_namespaces.get("matchExpressions", []),
        ]
        unqueued_in = {"namespaceSelector": managed_namespaces, "objectSelector": no_queue}
        job_hooks.append(
            hook("mjob-managed-namespaces", "/mutate-job", job_rules(["CREATE"]), **unqueued_in)
        )
        pods = [rule("", ["pods"], ["CREATE"], "v1")]
        if pod_kind is not None:
            job_hooks.append(hook("mpod-managed-namespaces", "/mutate-pod", pods, **unqueued_in))
        kinds = [rule(k.group, [k.plural], ["CREATE"], k.version) for k in unqueued.UNQUEUED_KINDS]
        closed = [
            hook(
                "vjob-managed-namespaces",
                "/validate-job",
                job_rules(["CREATE", "UPDATE"]),
                **unqueued_in,
            ),
            hook("vpod-managed-namespaces", "/validate-unqueued-pod", pods, **unqueued_in),
            hook(
                "vkinds-managed-namespaces",
                "/validate-unqueued-kind",
                kinds,
                namespaceSelector=managed_namespaces,
            ),
        ]
    berth_rules = [rule(base.GROUP, list(BERTH_PLURALS), ["CREATE", "UPDATE"])]
    pod_hooks = (
        [
            hook(
                "mpod",
                "/mutate-pod",
                [rule("", ["pods"], ["CREATE"], "v1")],
                objectSelector=queued,
                namespaceSelector=job_namespaces,
            ),
            hook(
                "vpod",
                "/validate-pod",
                [rule("", ["pods"], ["CREATE", "UPDATE"], "v1")],
                objectSelector={
                    "matchExpressions": [{"key": pod_kind.member_label, "operator": "Exists"}]
                },
                namespaceSelector=job_namespaces,
            ),
        ]
        if pod_kind is not None
        else []
    )
    # A Scale has no labels of its own: no object selector could pick the queued ones.
    scales = [
        rule(group, [f"{plural}/scale"], ["UPDATE"], version)
        for group, version, plural in scalable(enabled)
    ]
    scale_hooks = (
        [hook("vjob-scale", "/validate-scale", scales, namespaceSelector=job_namespaces)]
        if scales
        else []
    )
    placed = {"matchExpressions": [{"key": topology.PLACED_LABEL, "operator": "Exists"}]}
    placed_hook = hook(
        "mtas",
        "/mutate-placed-pod",
        [rule("", ["pods"], ["CREATE"], "v1")],
        objectSelector=placed,
        namespaceSelector=job_namespaces,
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [
                *job_hooks,
                *(h for h in pod_hooks if h["name"].startswith("m")),
                placed_hook,
                hook("mberth", "/mutate-berth", berth_rules),
            ],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [
                hook(
                    _JOB_HOOK,
                    "/validate-job",
                    job_rules(["CREATE", "UPDATE"]),
                    objectSelector=queued,
                    namespaceSelector=job_namespaces,
                ),
                *(h for h in children if h["name"].startswith("v")),
                *scale_hooks,
                *closed,
                *(h for h in pod_hooks if h["name"].startswith("v")),
                hook("vberth", "/validate-berth", berth_rules),
            ],
        },
    ]
