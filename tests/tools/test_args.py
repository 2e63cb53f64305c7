"""Tool argument checking: the required wording, types, arrays from comma strings."""

from __future__ import annotations

import pytest

from agentcoord.errors import InvalidArguments
from agentcoord.tools.arguments import check_arguments

pytestmark = pytest.mark.unit

SCHEMA = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "maxLength": 5},
        "n": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string", "enum": ["read", "write"]},
        "flag": {"type": "boolean"},
    },
    "required": ["key"],
}


def test_missing_required_uses_seed_text() -> None:
    """A missing required argument fails with "`<key>` is required"."""
    with pytest.raises(InvalidArguments, match=r"^`key` is required$"):
        check_arguments(SCHEMA, {})


def test_arrays_accept_comma_strings() -> None:
    """Array arguments also accept a comma-separated string."""
    assert check_arguments(SCHEMA, {"key": "k", "tags": "a, b,,c"})["tags"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"key": 5}, "`key` must be a string"),
        ({"key": "toolong"}, "longer than 5"),
        ({"key": "k", "n": True}, "`n` must be an integer"),
        ({"key": "k", "n": 0}, "`n` must be >= 1"),
        ({"key": "k", "mode": "wrtie"}, "must be one of: read, write"),
        ({"key": "k", "flag": "yes"}, "`flag` must be a boolean"),
        ({"key": "k", "other": 1}, "unknown argument `other`"),
        ({"key": "k", "tags": [1]}, r"`tags\[0\]` must be a string"),
    ],
)
def test_wrong_values_are_clear_errors(args: dict[str, object], message: str) -> None:
    """Wrong types, ranges, enum typos and unknown keys each get a precise message."""
    with pytest.raises(InvalidArguments, match=message):
        check_arguments(SCHEMA, args)


def test_valid_arguments_pass_through() -> None:
    """Valid arguments come back unchanged (floats with integral values become ints)."""
    assert check_arguments(SCHEMA, {"key": "k", "n": 2.0, "flag": False}) == {
        "key": "k",
        "n": 2,
        "flag": False,
    }
