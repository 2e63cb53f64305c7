"""The boundary with lightkube: its errors become the store's typed errors (:func:`translate`,
the one mapping, docs/architecture.md "Errors"), our parsed selectors become its operators, its
objects dicts.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx2
from lightkube import ApiError
from lightkube import operators as op

from agentcoord.stores.objects.selectors import FieldSelector, LabelSelector
from agentcoord.stores.objects.statuserrors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    Invalid,
    MethodNotAllowed,
    ObjectNotFound,
    StoreError,
    TooManyRequests,
    UnsupportedMediaType,
)

__all__ = ["field_pairs", "label_pairs", "plain", "translate"]

Obj = dict[str, Any]


def translate(exc: BaseException) -> StoreError:
    """The one mapping from a client or API error to the store's typed errors."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, ApiError):
        status = exc.status
        code, reason, message = status.code or 500, status.reason or "", status.message or ""
        causes = [
            (c.field or "", c.message or "")
            for c in ((status.details.causes or []) if status.details else [])
        ]
    elif isinstance(exc, httpx2.HTTPStatusError):
        code, reason, message, causes = exc.response.status_code, "", "", []
        # A watch's error response is streamed and may be unread: then the code is all we have.
        with contextlib.suppress(ValueError, AttributeError, RuntimeError, httpx2.HTTPError):
            message = exc.response.text
            body = json.loads(message)
            reason, message = body.get("reason") or "", body.get("message") or message
    elif isinstance(exc, httpx2.TransportError):
        return StoreError(f"cannot reach the Kubernetes API server: {exc!r}")
    elif isinstance(exc, ValueError):
        return BadRequest(str(exc))
    else:
        return StoreError(f"Kubernetes API call failed: {exc!r}")
    if code == 409:
        return AlreadyExists(message) if reason == "AlreadyExists" else Conflict(message)
    if code == 422:
        return Invalid(message, causes)
    cls: type[StoreError] = {
        400: BadRequest,
        404: ObjectNotFound,
        405: MethodNotAllowed,
        410: Expired,
        415: UnsupportedMediaType,
        429: TooManyRequests,
    }.get(code, StoreError)
    return cls(message or f"HTTP {code} {reason}")


def label_pairs(sel: LabelSelector) -> list[tuple[str, Any]] | None:
    """Our parsed selector as lightkube operators (it encodes them to the same grammar)."""
    pairs: list[tuple[str, Any]] = []
    for r in sel.requirements:
        one = next(iter(r.values), "")
        if r.op == "=":
            pairs.append((r.key, op.equal(one)))
        elif r.op == "!=":
            pairs.append((r.key, op.not_equal(one)))
        elif r.op == "in":
            pairs.append((r.key, op.in_(r.values)))
        elif r.op == "notin":
            pairs.append((r.key, op.not_in(r.values)))
        elif r.op == "exists":
            pairs.append((r.key, op.exists()))
        else:
            pairs.append((r.key, op.not_exists()))
    return pairs or None


def field_pairs(sel: FieldSelector) -> list[tuple[str, Any]] | None:
    return [(f, op.equal(v) if eq else op.not_equal(v)) for f, eq, v in sel.terms] or None


def plain(obj: Any) -> Obj:
    """A lightkube generic object as a plain dict."""
    out: Obj = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    return out
