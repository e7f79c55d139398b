"""Where a replica's webhook serving certificate comes from, and who keeps it current.

Local mode (``berth run``, ``berth up``): ``Certificates``, a CA and a serving certificate of
this process's own, kept in memory only; the configurations this process registers trust that CA.

Cluster mode (``berth run --webhook-secret NAME``, as the Helm chart runs it, or the
manifests in ``webhooks/``): every replica serves the webhooks behind one Service with the
certificate of one Secret in the operator's namespace, and the webhook configurations are the
installer's: the operator never creates them or changes where they point.

- ``ServingFromSecret.run`` (every replica): reads the Secret every ``poll`` seconds and loads a
  changed certificate into the server's TLS context, so a rotation reaches every replica without
  a restart; ``ready`` is False until a certificate is loaded (``/readyz`` says so).
- ``keep_certificates`` (the leader, unless cert-manager keeps the Secret): creates or renews the
  Secret for the Service's names and writes its CA bundle into the ``caBundle`` of the
  configurations named ``configuration_name`` — nothing else in them.

Both retry on transient API errors with a capped backoff; an API server restart costs a pause.
Called by ``server``, ``berth.entry.operator_main`` and ``berth.entry.run_cmd``.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime as dt
import logging
import ssl

from berth.adapters import tls
from berth.adapters.kube import client, errors, webhook_certs
from berth.operator.webhooks import configurations

log = logging.getLogger(__name__)

_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 30.0


class Certificates:
    """Local mode: a CA and a serving certificate for the webhook host, kept in memory only.

    The private key is never written to disk (``tls.ServingContext`` hands it to ``ssl`` and
    removes the file at once), so a killed operator leaves no key behind.
    """

    def __init__(self, host: str) -> None:
        self.ca = tls.new_certificate_authority("berth-webhook-ca")
        self.serving = tls.issue_serving_certificate(self.ca, [host], "berth-webhook")

    def ssl_context(self) -> ssl.SSLContext:
        """A server-side TLS context with the serving certificate."""
        context = tls.ServingContext()
        context.load(self.serving)
        return context.context

    @property
    def ca_bundle(self) -> str:
        """The CA certificate, base64 encoded, for ``clientConfig.caBundle``."""
        return base64.b64encode(self.ca.cert_pem).decode()


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterWebhooks:
    """How the operator serves webhooks in cluster mode."""

    secret: str
    """The Secret (in the operator's namespace) holding ``tls.crt``, ``tls.key``, ``ca.crt``."""
    service: str | None
    """The webhook Service, whose names the certificate carries; None when cert-manager keeps it."""
    manage: bool = True
    """The leader creates and renews the Secret and keeps the configurations' caBundle."""
    configuration_name: str = configurations.NAME
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
