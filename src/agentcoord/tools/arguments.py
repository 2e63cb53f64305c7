"""Tool argument checking against the tool's own (small) JSON Schema.

A pure function: the schema subset we publish (object of string/integer/number/boolean/array/
object properties, ``required``, ``enum``, ``minimum``/``maximum``, ``maxLength``) is checked and
coerced here, with one wording for a missing argument (`` `<key>` is required``). Arrays also accept
a comma-separated string (docs/tools.md "Conventions").

Every string is bounded (docs/security.md "Input at the boundary"): a property without its own
``maxLength`` takes :data:`MAX_CHARS`, so no name, key or id an agent sends reaches a NATS
subject or a KV key longer than the server takes; an object argument is bounded by its size
as JSON (:data:`MAX_OBJECT_BYTES`), and so is an array.
"""

from __future__ import annotations

from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel.jsoncodec import dumps

__all__ = ["MAX_CHARS", "MAX_OBJECT_BYTES", "check_arguments"]

MAX_CHARS = 1024  # a string argument without a maxLength of its own: names, keys, ids
MAX_OBJECT_BYTES = 65536  # an object argument, as compact JSON

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
}


# For a property of several types (``["object", "string"]``): the type a JSON value has.
_KIND_OF = {str: "string", list: "array", dict: "object", bool: "boolean", int: "integer"}


def _one_kind(key: str, kinds: list[str], value: Any) -> str:
    kind = _KIND_OF.get(type(value), "number" if isinstance(value, float) else "")
    if kind == "integer" and kind not in kinds and "number" in kinds:
        kind = "number"
    if kind not in kinds:
        names = " or ".join(_TYPE_NAMES.get(k, k) for k in kinds)
        raise InvalidArguments(f"`{key}` must be {names}")
    return kind


def _check(key: str, spec: dict[str, Any], value: Any) -> Any:
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = _one_kind(key, kind, value)
    if kind == "string":
        if not isinstance(value, str):
            raise InvalidArguments(f"`{key}` must be a string")
        limit = spec.get("maxLength", MAX_CHARS)
        if len(value) > limit:
            raise InvalidArguments(f"`{key}` is longer than {limit} characters")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise InvalidArguments(f"`{key}` must be an integer")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidArguments(f"`{key}` must be a number")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise InvalidArguments(f"`{key}` must be a boolean")
    elif kind == "array":
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list):
            raise InvalidArguments(f"`{key}` must be an array or a comma-separated string")
        item_spec = spec.get("items")
        if item_spec:
            value = [_check(f"{key}[{i}]", item_spec, v) for i, v in enumerate(value)]
        if len(dumps(value, default=str)) > MAX_OBJECT_BYTES:
            raise InvalidArguments(f"`{key}` is larger than {MAX_OBJECT_BYTES} bytes as JSON")
    elif kind == "object":
        if not isinstance(value, dict):
            raise InvalidArguments(f"`{key}` must be an object")
        if len(dumps(value, default=str)) > MAX_OBJECT_BYTES:
            raise InvalidArguments(f"`{key}` is larger than {MAX_OBJECT_BYTES} bytes as JSON")
    if "enum" in spec and value not in spec["enum"]:
        choices = ", ".join(str(c) for c in spec["enum"])
        raise InvalidArguments(f"`{key}` must be one of: {choices} (got {repr(value)[:80]})")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in spec and value < spec["minimum"]:
            raise InvalidArguments(f"`{key}` must be >= {spec['minimum']}")
        if "maximum" in spec and value > spec["maximum"]:
            raise InvalidArguments(f"`{key}` must be <= {spec['maximum']}")
    return value


def check_arguments(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """Validate and coerce ``arguments`` for a tool whose inputSchema is ``schema``."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidArguments("tool arguments must be an object")
    props: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        known = ", ".join(sorted(props)) or "none"
        raise InvalidArguments(f"unknown argument `{unknown[0]}` (this tool takes: {known})")
    out: dict[str, Any] = {}
    for key in schema.get("required", []):
        value = arguments.get(key)
        if value is None or value == "" or value == []:
            raise InvalidArguments(f"`{key}` is required")
    for key, value in arguments.items():
        if value is None:
            continue
        out[key] = _check(key, props[key], value)
    return out
