"""open_channel / close_channel and channel messages through the real daemon."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.tools.conftest import ToolFailed


def test_channel_messages_reach_participants_only(agents: Any) -> None:
    """A channel post reaches the participants' inboxes; an outsider neither reads nor posts."""
    a, b, c = agents("a"), agents("b"), agents("c")
    c.call("inbox")
    opened = a.call("open_channel", name="auth-refactor", participants=b.name, topic="auth")
    assert opened["created"] is True
    assert opened["subject"] == "channels.auth-refactor"
    assert opened["phase"] == "Open"
    assert opened["participants"] == [a.name, b.name]
    a.call("send", channel="auth-refactor", text="JWT it is")
    (msg,) = b.call("inbox")["messages"]
    assert (msg["channel"], msg["from"], msg["text"]) == ("auth-refactor", a.name, "JWT it is")
    assert a.call("inbox")["messages"] == []  # own post is not echoed back
    with pytest.raises(ToolFailed, match="not a participant"):
        c.call("send", channel="auth-refactor", text="let me in")
    assert c.call("inbox")["messages"] == []


def test_reopen_is_idempotent_and_adding_is_explicit(agents: Any) -> None:
    """Reopening keeps the participants (and says who was not added); add=true adds them."""
    a, b, c = agents("a"), agents("b"), agents("c")
    a.call("open_channel", name="ops", participants=[b.name])
    again = a.call("open_channel", name="ops", participants=[b.name, c.name])
    assert again["created"] is False
    assert again["not_added"] == [c.name]
    assert c.name not in again["participants"]
    with pytest.raises(ToolFailed, match="not a participant"):
        c.call("open_channel", name="ops", participants=[c.name], add=True)
    added = b.call("open_channel", name="ops", participants=[c.name], add=True)
    assert added["added"] == [c.name]
    assert added["participants"] == [a.name, b.name, c.name]
    a.call("send", channel="ops", text="welcome")
    assert [m["text"] for m in c.call("inbox")["messages"]] == ["welcome"]


def test_channel_needs_a_participant(agents: Any) -> None:
    """participants >= 1: an empty list is refused."""
    a = agents("a")
    with pytest.raises(ToolFailed, match="`participants` is required"):
        a.call("open_channel", name="empty", participants=[])
    with pytest.raises(ToolFailed, match="not a valid channel name"):
        a.call("open_channel", name="bad.name", participants=["x"])


def test_channel_expires_after_its_ttl(agents: Any) -> None:
    """Past its TTL a channel reads Expired and refuses posts."""
    a, b = agents("a"), agents("b")
    opened = a.call("open_channel", name="brief", participants=[b.name], ttl_secs=1)
    assert opened["expires_at"] > time.time()
    a.call("send", channel="brief", text="quick")
    time.sleep(1.1)
    with pytest.raises(ToolFailed, match="channel brief is expired"):
        a.call("send", channel="brief", text="too late")
    with pytest.raises(ToolFailed, match="expired"):
        a.call("open_channel", name="brief", participants=[b.name])
    assert [m["text"] for m in b.call("inbox")["messages"]] == ["quick"]


def test_closed_channel_refuses_posts(agents: Any) -> None:
    """close_channel moves it to Closed; later posts are refused."""
    a, b = agents("a"), agents("b")
    a.call("open_channel", name="done", participants=[b.name])
    assert b.call("close_channel", name="done")["phase"] == "Closed"
    with pytest.raises(ToolFailed, match="channel done is closed"):
        a.call("send", channel="done", text="anyone?")
