"""JSON-RPC 2.0 framing: pure functions from bytes to messages and from errors to replies.

Every malformed input maps to a JSON-RPC error object here, so transports never have to
decide what a bad frame means (MCP spec, "Base protocol"; JSON-RPC 2.0 section 5.1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentcoord.errors import ProtocolError
from agentcoord.kernel.jsoncodec import dumps, lone_surrogate

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Notification",
    "Request",
    "decode",
    "encode",
    "error_response",
    "parse_message",
    "result_response",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = str | int


@dataclass(frozen=True)
class Request:
    """A call that expects an answer."""

    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Notification:
    """A call without an id: never answered."""

    method: str
    params: dict[str, Any]


def decode(raw: bytes | str) -> Any:
    """Parse one JSON text; any failure (syntax, encoding, nesting, huge ints) is -32700."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        # ValueError covers JSONDecodeError and the int-digits limit; RecursionError deep nesting.
        raise ProtocolError(PARSE_ERROR, f"Parse error: {type(exc).__name__}") from None


def encode(message: Any) -> bytes:
    """Serialise a reply compactly (one line, so it is also a valid stdio frame)."""
    return dumps(message)


def _valid_id(value: Any) -> bool:
    # MCP forbids null ids; bools are ints in Python but not JSON-RPC ids. An id is echoed in
    # the reply, so it must be text that can be written (docs/security.md "Input at the
    # boundary").
    if isinstance(value, str):
        return lone_surrogate(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


_NOT_UNICODE = "is not valid Unicode (a lone surrogate escape such as \\ud800)"


def parse_message(value: Any) -> Request | Notification | None:
    """Classify one decoded message; ``None`` for a response (we never send requests), and for
    a notification whose params are unusable: a notification is never answered, not even with
    an error (JSON-RPC 2.0 section 4.1), so there is nothing to do with it.

    Raises ProtocolError(-32600) with ``data`` holding the id it could salvage, if any.
    """
    if not isinstance(value, dict):
        raise ProtocolError(INVALID_REQUEST, "Invalid Request: expected a JSON object")
    msg_id = value.get("id")
    salvaged = msg_id if _valid_id(msg_id) else None
    if value.get("jsonrpc") != "2.0":
        raise ProtocolError(
            INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id=salvaged
        )
    if "method" not in value and ("result" in value or "error" in value):
        return None
    method = value.get("method")
    if not isinstance(method, str) or not method:
        raise ProtocolError(
            INVALID_REQUEST, 'Invalid Request: "method" must be a string', request_id=salvaged
        )
    if lone_surrogate(method) is not None:
        raise ProtocolError(
            INVALID_REQUEST, f'Invalid Request: "method" {_NOT_UNICODE}', request_id=salvaged
        )
    if "id" in value and not _valid_id(msg_id):
        if isinstance(msg_id, str):
            raise ProtocolError(INVALID_REQUEST, f'Invalid Request: "id" {_NOT_UNICODE}')
        raise ProtocolError(INVALID_REQUEST, 'Invalid Request: "id" must be a string or integer')
    params = value.get("params", {})
    if params is None:
        params = {}
    if "id" not in value and (not isinstance(params, dict) or lone_surrogate(params) is not None):
        return None
    if not isinstance(params, dict):
        raise ProtocolError(
            INVALID_PARAMS, 'Invalid params: "params" must be an object', request_id=salvaged
        )
    where = lone_surrogate(params)
    if where is not None:
        raise ProtocolError(
            INVALID_PARAMS, f'Invalid params: "{where}" {_NOT_UNICODE}', request_id=salvaged
        )
    if "id" in value:
        return Request(salvaged if salvaged is not None else 0, method, params)
    return Notification(method, params)


def result_response(msg_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def error_response(msg_id: RequestId | None, exc: BaseException) -> dict[str, Any]:
    """The one mapping from an exception to a JSON-RPC error object."""
    if isinstance(exc, ProtocolError):
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        if msg_id is None:
            msg_id = exc.request_id
    else:
        error = {"code": INTERNAL_ERROR, "message": f"Internal error: {type(exc).__name__}"}
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}
