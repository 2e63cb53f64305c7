"""One rendering of an audit event, whichever shape it arrives in (stored, streamed, queried)."""

from __future__ import annotations

import datetime as dt

import pytest

from agentcoord.text.events import render_event

pytestmark = pytest.mark.unit

_TS = 1_763_640_000.25
_DATA = {"prompt": "prompt-1", "answer": "two words", "how": "cli", "pid": 42, "ctx": {"a": 1}}


def test_stored_streamed_and_queried_shapes_render_alike() -> None:
    """The stored body, the SSE event (with subject) and Event.as_dict give one line."""
    iso = dt.datetime.fromtimestamp(_TS, dt.UTC).isoformat(timespec="milliseconds")
    stored = {"type": "HUMAN_ANSWERED", "agent": "human:al", "ts": _TS, "data": _DATA}
    streamed = {**stored, "subject": "events.HUMAN_ANSWERED.human:al"}
    queried = {"seq": 7, "type": "HUMAN_ANSWERED", "agent": "human:al", "ts": iso, **_DATA}
    lines = {render_event(e) for e in (stored, streamed, queried)}
    assert len(lines) == 1
    (line,) = lines
    assert line.split("  ")[1:3] == ["HUMAN_ANSWERED", "human:al"]
    assert line.endswith('prompt=prompt-1 answer="two words" how=cli pid=42 ctx={"a":1}')


def test_an_event_without_details_or_time_still_renders() -> None:
    """A bare event (no data, no ts) is time '-', its type and agent."""
    assert render_event({"type": "TEST_EVENT", "agent": "a-1"}) == "-  TEST_EVENT  a-1"


def test_claim_keys_and_times_read_as_people_read_them() -> None:
    """A file claim key shows as repo:path (also in a list); the time is the one format."""
    from agentcoord.kernel.timetext import human_time

    key = "file:/home/me/app/.git//src/app.py"
    event = {"type": "CLAIM_ACQUIRED", "agent": "a-1", "ts": _TS, "data": {"resource_key": key}}
    assert (
        render_event(event)
        == f"{human_time(_TS)}  CLAIM_ACQUIRED  a-1  resource_key=app:src/app.py"
    )
    many = {"type": "X", "agent": "a-1", "data": {"keys": [key, "deploy:prod"]}}
    assert render_event(many).endswith('keys=["app:src/app.py","deploy:prod"]')
