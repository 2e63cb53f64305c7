"""The hot-path JSON encoder writes the value the standard library writes, and refuses what
it refuses (kernel/jsoncodec.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.kernel.jsoncodec import dumps

pytestmark = pytest.mark.unit

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits is the fallback's
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(_JSON)
def test_any_json_value_round_trips_as_the_standard_library_reads_it(value: Any) -> None:
    """Every JSON value, big integers and any text included, decodes to itself, on one line."""
    out = dumps(value)
    assert json.loads(out) == value
    assert b"\n" not in out  # one line: a valid stdio frame


def test_fallbacks_write_what_the_standard_library_writes() -> None:
    """65-bit integers, int keys and str/int subclasses come out as json.dumps has them."""

    class Mode(enum.StrEnum):
        WRITE = "write"

    class Level(enum.IntEnum):
        TWO = 2

    value = {"big": 2**70, 1: "int key", "mode": Mode.WRITE, "level": Level.TWO, "é": "ü"}
    assert json.loads(dumps(value)) == json.loads(json.dumps(value))
    assert dumps({"é": 1}) == '{"é":1}'.encode()  # UTF-8, not \\u escapes


def test_unknown_types_follow_default() -> None:
    """Without ``default`` an unknown type raises TypeError; with ``default=str`` a datetime
    and a dataclass are their str(), as the standard encoder with default=str wrote them."""

    @dataclasses.dataclass
    class Point:
        x: int

    stamp = dt.datetime(2026, 12, 1, 16, 0, tzinfo=dt.UTC)
    for thing in (object(), stamp, Point(1)):
        with pytest.raises(TypeError):
            dumps({"v": thing})
    assert json.loads(dumps({"t": stamp, "p": Point(1)}, default=str)) == {
        "t": str(stamp),
        "p": str(Point(1)),
    }


def test_nan_is_written_as_null() -> None:
    """NaN is not JSON: a reply never carries the bare NaN the standard library writes."""
    assert dumps({"x": float("nan"), "y": float("inf")}) == b'{"x":null,"y":null}'
