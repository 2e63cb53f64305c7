"""send / inbox / broadcast through the real daemon, between agent processes."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
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


def test_idempotent_retry_is_not_duplicated(agents: Any) -> None:
    """A retried send with the same idempotency key is stored once and says it is a duplicate."""
    a, b = agents("a"), agents("b")
    first = a.call("send", to=b.name, text="once", idempotency_key="k-1")
    again = a.call("send", to=b.name, text="once", idempotency_key="k-1")
    assert again["duplicate"] is True
    assert again["seq"] == first["seq"]
    other = a.call("send", to=b.name, text="twice", idempotency_key="k-2")
    assert "duplicate" not in other
    texts = [m["text"] for m in b.call("inbox")["messages"]]
    assert texts == ["once", "twice"]


def test_send_to_live_reader_is_delivered(agents: Any) -> None:
    """While the recipient long-polls its inbox, send reports delivered and the reader has it."""
    a, b = agents("a"), agents("b")
    b.call("inbox")  # its inbox exists
    for attempt in range(30):
        poll = b.start("inbox", wait_secs=10)
        time.sleep(0.1 * (attempt + 1))  # let the long poll reach the server
        sent = a.call("send", to=b.name, text=f"live {attempt}")
        got = [m["text"] for m in b.result(poll)["messages"]]
        if sent["delivery"] == "delivered":
            assert got == [f"live {attempt}"]
            return
        assert got == [f"live {attempt}"]  # queued, then taken by the same poll
    pytest.fail("send never reported delivered to a live reader")


def test_send_argument_errors(agents: Any) -> None:
    """Unknown kinds, a foreign `from`, and missing/duplicate targets are errors, not guesses."""
    a, b = agents("a"), agents("b")
    with pytest.raises(ToolFailed, match="unknown kind 'shout'"):
        a.call("send", to=b.name, text="x", kind="shout")
    with pytest.raises(ToolFailed, match="identity mismatch"):
        a.call("send", to=b.name, text="x", **{"from": b.name})
    with pytest.raises(ToolFailed, match="exactly one of"):
        a.call("send", text="x")
    with pytest.raises(ToolFailed, match="not a valid agent id"):
        a.call("send", to="bad.id", text="x")
    with pytest.raises(ToolFailed, match="handoff tool"):
        a.call("send", to=b.name, text="x", kind="offer")
    assert b.call("inbox")["messages"] == []


def test_control_kind_round_trips(agents: Any) -> None:
    """kind=control is carried on the wire and shown to the reader as control."""
    a, b = agents("a"), agents("b")
    a.call("send", to=b.name, text="drain", kind="MESSAGE_CONTROL")
    (msg,) = b.call("inbox")["messages"]
    assert (msg["kind"], msg["text"]) == ("control", "drain")


def test_broadcast_reaches_others_not_sender(agents: Any) -> None:
    """A broadcast lands in every other agent's inbox once, and not back in the sender's."""
    a, b, c = agents("a"), agents("b"), agents("c")
    for agent in (a, b, c):
        agent.call("inbox")
    out = a.call("broadcast", text="release at noon")
    assert out["subject"] == "agents.broadcast"
    for agent in (b, c):
        msgs = agent.call("inbox")["messages"]
        assert [(m["from"], m["text"]) for m in msgs] == [(a.name, "release at noon")]
    assert a.call("inbox")["messages"] == []


def _send_all(agent: Any, to: str, n: int) -> list[int]:
    return [agent.call("send", to=to, text=f"{agent.name}:{i}")["seq"] for i in range(n)]


def test_many_messages_to_offline_agent_arrive_once_in_order(agents: Any) -> None:
    """10k messages from two senders to an offline agent: each read exactly once, in order."""
    a, b, c = agents("a"), agents("b"), agents("c")
    n = 5000
    with ThreadPoolExecutor(2) as pool:
        seqs = list(pool.map(lambda s: _send_all(s, c.name, n), (a, b)))
    assert all(s == sorted(s) for s in seqs)
    received: list[str] = []
    while batch := c.call("inbox", limit=1000)["messages"]:
        received += [m["text"] for m in batch]
    assert len(received) == 2 * n
    assert len(set(received)) == 2 * n
    for sender in (a, b):
        mine = [t for t in received if t.startswith(sender.name + ":")]
        assert mine == [f"{sender.name}:{i}" for i in range(n)]
