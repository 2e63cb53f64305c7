"""Answers to HumanPrompts: parse the human's text and check it against the response schema.

Pure functions (docs/architecture.md "Pure rules, thin I/O"). Schemas are full JSON Schema 2020-12,
checked by the ``jsonschema`` package (imported when a prompt needs it, not at daemon start).
"""

from __future__ import annotations

import json
from typing import Any

from agentcoord.errors import InvalidArguments

__all__ = ["approval_schema", "check_schema", "choice_schema", "parse_answer", "validate"]

_YES = {"y", "yes", "approve", "approved", "true", "ok", "accept", "1"}
_NO = {"n", "no", "deny", "denied", "reject", "rejected", "false", "0"}


def approval_schema() -> dict[str, Any]:
    return {"type": "boolean"}


def choice_schema(choices: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(choices)}


def check_schema(schema: Any) -> dict[str, Any]:
    """Refuse a response schema that is not valid JSON Schema (an agent's ``request_input``)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        raise InvalidArguments("`schema` must be a JSON Schema object")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidArguments(f"`schema` is not a valid JSON Schema: {exc.message}") from None
    return schema


def validate(value: Any, schema: dict[str, Any]) -> None:
    """Raise InvalidArguments naming where ``value`` breaks ``schema`` (JSON Schema 2020-12)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    raise InvalidArguments(f"the answer{where}: {error.message}")


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
