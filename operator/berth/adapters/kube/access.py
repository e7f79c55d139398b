"""Who may read ``/metrics``: the bearer token reviewed, then the right asked of the API server.

Kueue serves its metrics the way controller-runtime's ``filters.WithAuthenticationAndAuthorization``
does, and so does Berth in cluster mode: a scrape's ``Authorization: Bearer`` token goes to a
TokenReview (``authentication.k8s.io/v1``), and the user it names to a SubjectAccessReview
(``authorization.k8s.io/v1``) for ``get`` on the non-resource URL ``/metrics``. RBAC decides:
the chart's ClusterRole ``berth-metrics-reader`` grants it (Prometheus's ServiceAccount, say).
Answers are kept for ``_KEEP`` seconds by token, so a scraper costs the API server two reviews
a quarter of a minute, not two a scrape. Called by the metrics server (``adapters.metrics``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable

from berth.adapters.kube import client, errors

_KEEP = 15.0
"""Seconds a review's answer is reused for the same token."""
_MAX_KEPT = 256
"""Tokens whose answers are kept at once (a flood of made-up tokens evicts, never grows)."""
PATH = "/metrics"


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """Why a scrape is refused: 401 (who are you?) or 403 (not you), and what to do."""

    status: int
    message: str


class MetricsAccess:
    """Reviews a scrape's token and right, keeping answers for a while."""

    def __init__(
        self, kube: client.KubeRequests, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.kube = kube
        self.clock = clock
        self._kept: dict[str, tuple[float, Refusal | None]] = {}

    async def check(self, authorization: str | None) -> Refusal | None:
        """None when the bearer of ``authorization`` may read ``/metrics``, else the refusal."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return Refusal(401, "send a ServiceAccount token: Authorization: Bearer <token>")
        key = hashlib.sha256(token.strip().encode()).hexdigest()
        kept = self._kept.get(key)
        now = self.clock()
        if kept is not None and now - kept[0] < _KEEP:
            return kept[1]
        answer = await self._review(token.strip())
        if len(self._kept) >= _MAX_KEPT:
            self._kept.clear()
        self._kept[key] = (now, answer)
        return answer

    async def _review(self, token: str) -> Refusal | None:
        try:
            review = await self.kube.request(
                "POST",
                "/apis/authentication.k8s.io/v1/tokenreviews",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenReview",
                    "spec": {"token": token},
                },
            )
        except errors.KubeError as e:
            return Refusal(503, f"the token could not be reviewed ({e}); try again")
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return Refusal(401, "the token is not valid (TokenReview)")
        user = status.get("user") or {}
        try:
            access = await self.kube.request(
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body={
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {
                        "user": user.get("username", ""),
                        "uid": user.get("uid", ""),
                        "groups": user.get("groups") or [],
                        "extra": user.get("extra") or {},
                        "nonResourceAttributes": {"path": PATH, "verb": "get"},
                    },
                },
            )
        except errors.KubeError as e:
            return Refusal(503, f"the access could not be reviewed ({e}); try again")
        if not (access.get("status") or {}).get("allowed"):
            who = user.get("username", "?")
            return Refusal(
                403,
                f"{who} may not get {PATH}; bind the ClusterRole berth-metrics-reader to it",
            )
        return None
