"""The AdmissionReview answers every webhook decision returns, and the request pieces they read.

A decision returns a review *response* (``allow``, with an optional JSON patch, or ``deny``);
``envelope`` wraps it for the API server. Called by the ``*_admission`` modules and ``routes``.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def envelope(request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answering ``request`` with ``response``."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": request.get("uid", ""), **response},
    }


def allow(patch: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Let the object through, changed by ``patch`` (JSON patch operations) if any."""
    out: dict[str, Any] = {"allowed": True}
    if patch:
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return out


def deny(message: str, code: int = 403) -> dict[str, Any]:
    """Refuse the object, saying why."""
    return {"allowed": False, "status": {"code": code, "message": message}}


def job_of(request: dict[str, Any], key: str = "object") -> dict[str, Any]:
    """The job in a review, its ``kind`` filled in from the request's (older bodies omit it)."""
    body = dict(request.get(key) or {})
    body.setdefault("kind", (request.get("kind") or {}).get("kind") or "Job")
    return body


def label_patch(body: dict[str, Any], key: str, value: str) -> list[dict[str, Any]]:
    """The JSON patch that sets one label (making the labels map when there is none)."""
    if not (body.get("metadata") or {}).get("labels"):
        return [{"op": "add", "path": "/metadata/labels", "value": {key: value}}]
    return [{"op": "add", "path": f"/metadata/labels/{_escape(key)}", "value": value}]


def _escape(key: str) -> str:
    """A map key as a JSON pointer step (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")
