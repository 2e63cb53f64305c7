"""Claim rows format times exactly as datetime would, without building one per field."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.leases.rows import iso_time

pytestmark = pytest.mark.unit


@given(st.floats(min_value=0, max_value=2**33, allow_nan=False, allow_infinity=False))
def test_iso_matches_datetime_isoformat(ts: float) -> None:
    """iso_time(ts) equals datetime.fromtimestamp(ts, UTC).isoformat(timespec='milliseconds')."""
    assert iso_time(ts) == dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def test_iso_rounds_microseconds_like_datetime() -> None:
    """A time a hair below the next second rounds up into it, as datetime does."""
    for ts in (1.9999995, 1700000000.9999996, 0.0):
        want = dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")
        assert iso_time(ts) == want
