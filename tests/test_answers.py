"""Parsing and checking human answers against a prompt's response schema (pure)."""

from __future__ import annotations

import pytest

from agentcoord.errors import InvalidArguments
from agentcoord.messaging import answers

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "value"), [("yes", True), ("Approve", True), ("n", False)])
def test_approval_words(text: str, value: bool) -> None:
    """Approval answers map yes/approve/no words to booleans."""
    assert answers.parse_answer(text, "approval", answers.approval_schema()) is value


def test_choice_by_name_or_number() -> None:
    """A choice is given by name or 1-based number; others are refused."""
    schema = answers.choice_schema(["red", "green"])
    assert answers.parse_answer("green", "choice", schema) == "green"
    assert answers.parse_answer("1", "choice", schema) == "red"
    with pytest.raises(InvalidArguments, match="answer one of"):
        answers.parse_answer("3", "choice", schema)


def test_input_schema_nested() -> None:
    """Input answers are JSON checked against nested properties, items and required keys."""
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["tags"],
        "additionalProperties": False,
    }
    assert answers.parse_answer('{"tags": ["a"]}', "input", schema) == {"tags": ["a"]}
    with pytest.raises(InvalidArguments, match=r"the answer\.tags\[0\]: 1 is not of type 'string'"):
        answers.parse_answer('{"tags": [1]}', "input", schema)
    with pytest.raises(InvalidArguments, match="'tags' is a required property"):
        answers.parse_answer("{}", "input", schema)
    with pytest.raises(InvalidArguments, match="'x' was unexpected"):
        answers.parse_answer('{"tags": ["a"], "x": 1}', "input", schema)
    with pytest.raises(InvalidArguments, match="must be JSON"):
        answers.parse_answer("not json", "input", schema)


def test_string_schema_takes_plain_text() -> None:
    """A string-typed input takes plain text; booleans are not integers."""
    assert answers.parse_answer("hello", "input", {"type": "string"}) == "hello"
    with pytest.raises(InvalidArguments):
        answers.validate(True, {"type": "integer"})


def test_unsupported_schema_refused() -> None:
    """A schema that is not valid JSON Schema is refused when the prompt is raised."""
    with pytest.raises(InvalidArguments, match="not a valid JSON Schema"):
        answers.check_schema({"type": "date"})
