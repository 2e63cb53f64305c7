"""send / inbox / broadcast through the real daemon, between agent processes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.conftest import ToolFailed


def test_send_to_offline_agent_is_queued_then_read_once(agents: Any) -> None:
    """A message to an agent that is not reading is queued, then inbox returns it exactly once."""
    a, b = agents("a"), agents("b")
    sent = a.call("send", to=b.name, text="hello b")
    assert sent["delivery"] == "queued"
    assert sent["subject"] == f"agents.{b.name}.inbox"
    got = b.call("inbox")
    assert [(m["from"], m["kind"], m["text"]) for m in got["messages"]] == [
        (a.name, "text", "hello b")
    ]
    assert b.call("inbox")["messages"] == []
