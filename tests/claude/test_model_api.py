"""The scripted Messages API stand-in itself (tests/claude/model_api.py): its events follow the
API's streaming format, and it answers what the binary should never send with errors it
records."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.claude.model_api import ModelAPI, Text, ToolUse, message_of, stream_of


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Server-sent events as (event, data) pairs (each event: `event:` and `data:` lines)."""
    out = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk:
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


@pytest.mark.unit
def test_a_tool_call_streams_as_a_tool_use_block_with_its_input_in_pieces() -> None:
    """A ToolUse turn streams message_start, one tool_use block whose input_json_delta pieces
    join to the input, message_delta with stop_reason tool_use, message_stop; every event's
    data names its own type."""
    events = _events(stream_of(message_of(ToolUse("Write", {"file_path": "/a", "x": [1]}), 7)))
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    start = events[1][1]["content_block"]
    assert (start["type"], start["name"], start["input"]) == ("tool_use", "Write", {})
    joined = "".join(data["delta"]["partial_json"] for name, data in events[2:4])
    assert json.loads(joined) == {"file_path": "/a", "x": [1]}
    assert events[5][1]["delta"]["stop_reason"] == "tool_use"
    assert events[0][1]["message"]["content"] == []


@pytest.mark.unit
def test_a_text_answer_streams_as_one_text_block_ending_the_turn() -> None:
    """A Text turn streams one text block filled by a text_delta and stops with end_turn."""
    events = _events(stream_of(message_of(Text("hello"), 1)))
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "hello"}
    assert events[4][1]["delta"]["stop_reason"] == "end_turn"


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def test_unexpected_requests_get_errors_and_are_recorded() -> None:
    """A non-streaming request gets the turn's Message as JSON; another path and a request
    past the end of the script get API errors, and both are noted as unexpected."""
    api = ModelAPI().start()
    try:
        api.script(Text("hi"))
        status, body = _post(f"{api.url}/v1/messages", {"stream": False, "messages": []})
        assert status == 200
        assert json.loads(body)["content"] == [{"type": "text", "text": "hi"}]
        assert _post(f"{api.url}/v1/messages/count_tokens", {})[0] == 404
        assert _post(f"{api.url}/v1/messages", {"stream": True})[0] == 400
    finally:
        api.stop()
    assert len(api.requests) == 3
    assert api.unexpected == [
        "POST /v1/messages/count_tokens",
        "request 3 past the end of the script",
    ]
