"""Tool argument checking against the tool's own (small) JSON Schema.

A pure function: the schema subset we publish (object of string/integer/number/boolean/array/
object properties, ``required``, ``enum``, ``minimum``/``maximum``, ``maxLength``) is checked and
coerced here, with the seed's wording for a missing argument (`` `<key>` is required``).
Arrays also accept a comma-separated string (seed 000, "Tool reference").
"""

from __future__ import annotations

from typing import Any

from agentcoord.errors import InvalidArguments

__all__ = ["check_arguments"]

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
}


def _check(key: str, spec: dict[str, Any], value: Any) -> Any:
    kind = spec.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise InvalidArguments(f"`{key}` must be a string")
        limit = spec.get("maxLength")
        if limit is not None and len(value) > limit:
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
    elif kind == "object" and not isinstance(value, dict):
        raise InvalidArguments(f"`{key}` must be an object")
    if "enum" in spec and value not in spec["enum"]:
        choices = ", ".join(str(c) for c in spec["enum"])
        raise InvalidArguments(f"`{key}` must be one of: {choices} (got {value!r})")
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
