"""Answers to HumanPrompts: parse the human's text and check it against the response schema.

Pure functions (STYLE.md 3). The schema subset: ``type`` (string, integer, number, boolean,
object, array, null), ``enum``, ``properties``/``required``/``additionalProperties: false``,
``items``, ``minimum``/``maximum``, ``minLength``/``maxLength``, ``minItems``/``maxItems``.
"""

from __future__ import annotations

import json
from typing import Any

from agentcoord.errors import InvalidArguments

__all__ = ["approval_schema", "check_schema", "choice_schema", "parse_answer", "validate"]

_YES = {"y", "yes", "approve", "approved", "true", "ok", "accept", "1"}
_NO = {"n", "no", "deny", "denied", "reject", "rejected", "false", "0"}
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def approval_schema() -> dict[str, Any]:
    return {"type": "boolean"}


def choice_schema(choices: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(choices)}


def check_schema(schema: Any) -> dict[str, Any]:
    """Refuse a response schema we cannot enforce (an agent's ``request_input``)."""
    if not isinstance(schema, dict):
        raise InvalidArguments("`schema` must be a JSON Schema object")
    kind = schema.get("type")
    if kind is not None and kind not in _TYPES:
        raise InvalidArguments(f"`schema` type {kind!r} is not supported")
    for sub in (schema.get("properties") or {}).values():
        check_schema(sub)
    if isinstance(schema.get("items"), dict):
        check_schema(schema["items"])
    return schema


def _where(path: str) -> str:
    return path or "the answer"


def validate(value: Any, schema: dict[str, Any], path: str = "") -> None:
    """Raise InvalidArguments when ``value`` does not satisfy ``schema``."""
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _TYPES[kind])
        if kind in ("integer", "number") and isinstance(value, bool):
            ok = False
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            ok = True
        if not ok:
            raise InvalidArguments(f"{_where(path)} must be of type {kind}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(c) for c in schema["enum"])
        raise InvalidArguments(f"{_where(path)} must be one of: {choices}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise InvalidArguments(f"{_where(path)} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise InvalidArguments(f"{_where(path)} must be <= {schema['maximum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise InvalidArguments(f"{_where(path)} is shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise InvalidArguments(f"{_where(path)} is longer than {schema['maxLength']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise InvalidArguments(f"{_where(path)} needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise InvalidArguments(f"{_where(path)} allows at most {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for key in schema.get("required", []):
            if key not in value:
                raise InvalidArguments(f"{_where(path)} is missing `{key}`")
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                raise InvalidArguments(f"{_where(path)} has an unexpected field `{extra[0]}`")
        for key, sub in props.items():
            if key in value:
                validate(value[key], sub, f"{path}.{key}" if path else key)


def parse_answer(text: str, kind: str, schema: dict[str, Any] | None) -> Any:
    """The value a human's ``text`` stands for, checked against the prompt's schema.

    approval: yes/no words; choice: the choice itself or its 1-based number; input: JSON (a
    string schema also takes plain text); notify: the text as is.
    """
    text = text.strip()
    if kind == "notify" or schema is None:
        return text
    if kind == "approval":
        word = text.lower()
        if word in _YES:
            return True
        if word in _NO:
            return False
        raise InvalidArguments("answer yes or no (approve/deny)")
    if kind == "choice":
        choices = list(schema.get("enum", []))
        if text in choices:
            return text
        if text.isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1]
        raise InvalidArguments(f"answer one of: {', '.join(choices)} (or its number)")
    try:
        value = json.loads(text)
    except ValueError:
        if schema.get("type") != "string":
            raise InvalidArguments("the answer must be JSON matching the prompt's schema") from None
        value = text
    validate(value, schema)
    return value
