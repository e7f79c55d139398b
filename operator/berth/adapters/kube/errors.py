"""Errors of the Kubernetes adapter: the API server's answers and aiohttp's failures, translated.

::

    KubeError                    anything the API or the connection to it refused
    ├── TransientError           try again later: timeouts, 429, 5xx, connection failures
    └── PermanentError           the request itself is wrong; retrying the same one won't help
        ├── NotFoundError        404: the object is gone
        └── ConflictError        409: stale resourceVersion, or the object already exists

Every adapter call raises only these, chained (``raise ... from e``) to the library's error
where there is one. Messages are capped so that a huge response body never floods a log.
"""

from __future__ import annotations

_MAX_MESSAGE = 500


class KubeError(Exception):
    """The API server or the connection to it refused a request."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message[:_MAX_MESSAGE])
        self.status = status


class TransientError(KubeError):
    """A failure that may go away: retry with backoff."""


class PermanentError(KubeError):
    """The request is wrong as it stands."""


class NotFoundError(PermanentError):
    """The object does not exist (any more)."""


class ConflictError(PermanentError):
    """The object changed since it was read (stale resourceVersion), or already exists."""


def from_status(status: int, message: str) -> KubeError:
    """Return the error class for an HTTP status."""
    if status == 404:
        return NotFoundError(message, status)
    if status == 409:
        return ConflictError(message, status)
    if status == 429 or status >= 500:
        return TransientError(message, status)
    return PermanentError(message, status)
