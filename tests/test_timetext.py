"""The one way a time is written for people: local time with its zone (docs/architecture.md
"Times and keys shown to people")."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator

import pytest

from agentcoord.kernel.timetext import human_time

pytestmark = pytest.mark.unit

_TS = 1_780_000_000.4  # 2026-05-28 20:26:40 UTC


@pytest.fixture
def berlin() -> Iterator[None]:
    """The process's local zone is Europe/Berlin for the test."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_every_shape_of_one_moment_reads_alike(berlin: None) -> None:
    """Epoch seconds, ISO text (UTC or offset) and a datetime give one line, in local time."""
    iso = dt.datetime.fromtimestamp(_TS, dt.UTC).isoformat()
    offset = dt.datetime.fromtimestamp(_TS, dt.timezone(dt.timedelta(hours=-5))).isoformat()
    shapes = [_TS, int(_TS), iso, offset, dt.datetime.fromtimestamp(_TS, dt.UTC)]
    assert {human_time(v) for v in shapes} == {"2026-05-28 22:26:40 CEST"}
    assert human_time(_TS - 200 * 86400).endswith(" CET")


def test_no_time_and_not_a_time() -> None:
    """None or empty is '-'; text that is not a time is kept as it is."""
    assert human_time(None) == "-"
    assert human_time("") == "-"
    assert human_time("soon") == "soon"
    assert human_time(True) == "-"
