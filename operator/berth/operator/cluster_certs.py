"""Where a replica's webhook certificate comes from in cluster mode, and who keeps it current.

In cluster mode (``berth run --webhook-secret NAME``, as the Helm chart runs it) every replica
serves the webhooks behind one Service with the certificate of one Secret in the operator's
namespace, and the webhook configurations are the chart's: the operator never creates them or
changes where they point.

- ``ServingFromSecret.run`` (every replica): reads the Secret every ``poll`` seconds and loads a
  changed certificate into the server's TLS context, so a rotation reaches every replica without
  a restart; ``ready`` is False until a certificate is loaded (``/readyz`` says so).
- ``keep_certificates`` (the leader, unless cert-manager keeps the Secret): creates or renews the
  Secret for the Service's names and writes its CA bundle into the ``caBundle`` of the
  configurations named ``configuration_name`` — nothing else in them.

Both retry on transient API errors with a capped backoff; an API server restart costs a pause.
Called by ``berth.entry.operator_main``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging

from berth.adapters import tls
from berth.adapters.kube import client, errors, webhook_certs

log = logging.getLogger(__name__)

_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 30.0


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterWebhooks:
    """How the operator serves webhooks in cluster mode."""

    secret: str
    """The Secret (in the operator's namespace) holding ``tls.crt``, ``tls.key``, ``ca.crt``."""
    service: str | None
    """The webhook Service, whose names the certificate carries; None when cert-manager keeps it."""
    manage: bool = True
    """The leader creates and renews the Secret and keeps the configurations' caBundle."""
    configuration_name: str = "berth"
    """The Mutating- and ValidatingWebhookConfiguration whose caBundle the leader keeps."""
    cluster_domain: str = "cluster.local"
    poll: float = 10.0
    """Seconds between reads of the Secret by each replica, and checks by the leader."""


class ServingFromSecret:
    """Keeps ``context`` serving the certificate in the Secret."""

    def __init__(
        self,
        kube: client.Kube,
        namespace: str,
        config: ClusterWebhooks,
        context: tls.ServingContext,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.config = config
        self.context = context

    @property
    def ready(self) -> bool:
        """Whether a certificate is being served."""
        return self.context.loaded is not None

    async def refresh(self) -> bool:
        """Read the Secret once; load its certificate if it changed. Return whether it did."""
        bundle = await webhook_certs.read(self.kube, self.namespace, self.config.secret)
        if bundle is None:
            return False
        changed = self.context.load(bundle.serving)
        if changed:
            expires = tls.not_after(bundle.serving.cert_pem).isoformat()
            log.info(
                "serving the webhook certificate of secret %s (until %s)",
                self.config.secret,
                expires,
            )
        return changed

    async def run(self) -> None:
        """Refresh until cancelled."""
        delay = _BACKOFF_FIRST
        while True:
            try:
                await self.refresh()
            except errors.KubeError as e:
                log.warning(
                    "reading secret %s: %s; retrying in %.0f s", self.config.secret, e, delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, _BACKOFF_MAX)
                continue
            delay = _BACKOFF_FIRST
            if not self.ready:
                log.info("waiting for secret %s/%s", self.namespace, self.config.secret)
            await asyncio.sleep(self.config.poll if self.ready else _BACKOFF_FIRST)


async def keep_certificates(kube: client.Kube, namespace: str, config: ClusterWebhooks) -> None:
    """While leading: keep the Secret's certificate valid and the configurations trusting it."""
    if config.service is None:
        msg = "keeping the webhook certificate needs the webhook Service's name"
        raise ValueError(msg)
    hosts = webhook_certs.service_hosts(config.service, namespace, config.cluster_domain)
    delay = _BACKOFF_FIRST
    while True:
        try:
            now = dt.datetime.now(dt.UTC)
            bundle = await webhook_certs.keep(kube, namespace, config.secret, hosts, now)
            changed = await webhook_certs.patch_ca_bundle(
                kube, config.configuration_name, bundle.ca_bundle
            )
            if changed:
                log.info("caBundle of %d webhook configuration(s) updated", changed)
        except errors.KubeError as e:
            log.warning("keeping the webhook certificate: %s; retrying in %.0f s", e, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF_MAX)
            continue
        delay = _BACKOFF_FIRST
        await asyncio.sleep(config.poll)
