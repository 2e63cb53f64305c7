"""Errors of the object store, each carrying the Kubernetes ``Status`` it becomes on the wire.

::

    AgentCoordError (agentcoord.errors)
    └── StoreError                  code + reason, rendered as a metav1.Status
        ├── BadRequest              400 malformed body, unknown field under Strict validation
        ├── Forbidden               403 a write the API does not take from anyone
        ├── ObjectNotFound          404 (also an agentcoord NotFound, for the tools)
        ├── MethodNotAllowed        405
        ├── Conflict                409 stale resourceVersion
        ├── AlreadyExists           409 create of an existing name
        ├── Expired                 410 resourceVersion below the compacted point
        ├── RequestEntityTooLarge   413 a write body, or the object a patch makes, over the limit
        ├── UnsupportedMediaType    415 strategic merge and apply patches
        ├── Invalid                 422 schema or metadata validation failed (with causes)
        └── TooManyRequests         429 the store is closing or overloaded

The one mapping to a wire body is :func:`agentcoord.stores.objects.api.status_body`.
"""

from __future__ import annotations

from typing import Any

from agentcoord.errors import AgentCoordError, NotFound

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Expired",
    "Forbidden",
    "Invalid",
    "MethodNotAllowed",
    "ObjectNotFound",
    "RequestEntityTooLarge",
    "StoreError",
    "TooManyRequests",
    "UnsupportedMediaType",
]


class StoreError(AgentCoordError):
    """A refused store operation; ``code``/``reason`` are the HTTP status and Status.reason."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = dict(details or {})


class BadRequest(StoreError):
    """The request body or parameters cannot be used (400)."""

    code, reason = 400, "BadRequest"


class Forbidden(StoreError):
    """A write the API refuses whoever sends it (403), e.g. a HumanPrompt's answer."""

    code, reason = 403, "Forbidden"


class ObjectNotFound(StoreError, NotFound):
    """The object does not exist (404)."""

    code, reason = 404, "NotFound"


class MethodNotAllowed(StoreError):
    """The verb is not served on this path (405)."""

    code, reason = 405, "MethodNotAllowed"


class Conflict(StoreError):
    """The update named a resourceVersion that is no longer current (409)."""

    code, reason = 409, "Conflict"


class AlreadyExists(StoreError):
    """Create of a name that exists (409)."""

    code, reason = 409, "AlreadyExists"


class Expired(StoreError):
    """A watch or list asked for a resourceVersion older than the compacted point (410)."""

    code, reason = 410, "Expired"


class RequestEntityTooLarge(StoreError):
    """A write body, or the object a patch makes, over the object size limit (kube-apiserver
    answers 413 alike; docs/security.md "Limits")."""

    code, reason = 413, "RequestEntityTooLarge"


class UnsupportedMediaType(StoreError):
    """A patch type custom resources do not support (415)."""

    code, reason = 415, "UnsupportedMediaType"


class Invalid(StoreError):
    """The object fails validation (422); ``causes`` lists (field, message) pairs."""

    code, reason = 422, "Invalid"

    def __init__(
        self, message: str, causes: list[tuple[str, str]], *, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, details=details)
        self.causes = list(causes)


class TooManyRequests(StoreError):
    """The store is shutting down or cannot take more work (429)."""

    code, reason = 429, "TooManyRequests"
