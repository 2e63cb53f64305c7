"""handoff / answer_handoff: the offer -> accept/reject handshake between agent processes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.conftest import ToolFailed


def _offer(agent: Any) -> dict[str, Any]:
    """Wait for the handoff offer in ``agent``'s inbox."""
    msgs = agent.call("inbox", wait_secs=10)["messages"]
    offers = [m for m in msgs if m["kind"] == "offer"]
    assert len(offers) == 1, msgs
    return offers[0]  # type: ignore[no-any-return]


def test_handoff_accepted_records_successor_task(agents: Any) -> None:
    """The successor sees the handoff document; on accept both sides learn the successor task."""
    a, b = agents("a"), agents("b")
    pending = a.start(
        "handoff",
        to=b.name,
        task="finish the auth service",
        current_state="phase IMPLEMENT; scaffold done",
        in_progress="src/services/auth.ts 50%",
        decisions="JWT over session tokens,PostgreSQL",
        next_steps=["complete auth service", "add middleware"],
        reason="context window nearly full",
        timeout_secs=20,
    )
    offer = _offer(b)
    assert offer["from"] == a.name
    assert offer["handoff"] == {
        "task": "finish the auth service",
        "current_state": "phase IMPLEMENT; scaffold done",
        "in_progress": "src/services/auth.ts 50%",
        "decisions": ["JWT over session tokens", "PostgreSQL"],
        "next_steps": ["complete auth service", "add middleware"],
        "reason": "context window nearly full",
    }
    answered = b.call("answer_handoff", offer=offer["correlation_id"], accept=True)
    assert answered["task"]
    result = a.result(pending)
    assert result["accepted"] is True
    assert result["reply_kind"] == 3
    assert result["from"] == b.name
    assert result["task"] == answered["task"]
    (reply,) = a.call("inbox")["messages"]  # the answer is also kept in the offerer's inbox
    assert (reply["kind"], reply["correlation_id"]) == ("accept", offer["correlation_id"])


def test_handoff_rejected_via_send(agents: Any) -> None:
    """A REJECT sent with the offer's correlation id ends the handoff with accepted: false."""
    a, b = agents("a"), agents("b")
    pending = a.start("handoff", to=b.name, task="migrate db", timeout_secs=20)
    offer = _offer(b)
    b.call("send", to=a.name, kind="reject", correlation_id=offer["correlation_id"], text="busy")
    result = a.result(pending)
    assert result["accepted"] is False
    assert result["reply_kind"] == 4
    assert result["reason"] == "busy"
    assert "task" not in result


def test_handoff_times_out_and_late_answer_is_refused(agents: Any) -> None:
    """With no answer the call fails 'timed out'; answering the dead offer afterwards fails too."""
    a, b = agents("a"), agents("b")
    with pytest.raises(ToolFailed, match=f"handoff offer to {b.name} timed out"):
        a.call("handoff", to=b.name, task="t", timeout_secs=0.5)
    offer = _offer(b)  # the offer was durable: b finds it later
    with pytest.raises(ToolFailed, match="no open handoff offer"):
        b.call("answer_handoff", offer=offer["correlation_id"], accept=True)


def test_only_the_addressee_answers(agents: Any) -> None:
    """A third agent cannot accept an offer made to someone else."""
    a, b, c = agents("a"), agents("b"), agents("c")
    pending = a.start("handoff", to=b.name, task="t", timeout_secs=20)
    offer = _offer(b)
    with pytest.raises(ToolFailed, match=f"addressed to {b.name}"):
        c.call("answer_handoff", offer=offer["correlation_id"], accept=True)
    b.call("answer_handoff", offer=offer["correlation_id"], accept=False)
    assert a.result(pending)["accepted"] is False
    with pytest.raises(ToolFailed, match="yourself"):
        a.call("handoff", to=a.name, task="t")
