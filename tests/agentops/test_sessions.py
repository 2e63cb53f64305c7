"""Interactive sessions the daemon did not start: an ask lands in the session's inbox and
waits for its ``reply``; its depth and chain still count (agents are separate processes under
a stand-in ``claude``, identified by the daemon from their ancestry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agentops.conftest import needs_bwrap, ok, wait_for
from tests.tools.conftest import AgentProc, ToolFailed

pytestmark = needs_bwrap


@pytest.fixture
def two(local_daemon: Any, claude_bin: Path, tmp_path: Path) -> Any:
    """A daemon with runners, and two interactive sessions on it."""
    d, _, call = local_daemon()
    a = AgentProc(d, claude_bin, tmp_path / "work" / "alpha")
    b = AgentProc(d, claude_bin, tmp_path / "work" / "beta")
    yield d, call, a, b
    a.close()
    b.close()


def _next_ask(proc: AgentProc) -> dict[str, Any]:
    got = proc.call("inbox", wait_secs=10)
    assert got["count"] == 1, got
    return got["messages"][0]  # type: ignore[no-any-return]


def test_ask_a_session_waits_for_its_reply(two: Any) -> None:
    """The text lands in B's inbox attributed to A's owner (and in B's audit); A's ask
    returns B's reply and says it went through the inbox."""
    _, call, a, b = two
    rid = a.start("ask", agent=b.name, text="what is six times seven?", timeout_secs=20)
    msg = _next_ask(b)
    assert msg["from"] == a.name
    assert msg["text"].startswith(f"Message from agent {a.name} (for ")
    assert "what is six times seven?" in msg["text"]
    ask_id = msg["correlation_id"]
    with pytest.raises(ToolFailed, match="addressed to"):
        a.call("reply", ask=ask_id, text="not yours")
    assert b.call("reply", ask=ask_id, text="42") == {"replied": True, "ask": ask_id, "to": a.name}
    res = a.result(rid)
    assert res["answered"] is True
    assert res["answer"] == "42"
    assert res["via"] == "inbox"
    assert "interactive session the daemon did not start" in res["note"]
    assert "waited for its reply" in res["note"]
    # the audit trail is written behind the action (best effort, batched): wait for it
    events = wait_for(
        lambda: ok(call, "audit", actor=b.name, type="MESSAGE_RECEIVED")["events"],
        what="the audit event",
    )
    assert events[-1]["attributed"].startswith(f"agent {a.name} (for ")
    assert events[-1]["from"] == a.name
    assert events[-1]["via"] == "inbox"


def test_ask_a_session_times_out_and_says_so(two: Any) -> None:
    """Without a reply the ask ends at its timeout with answered false and the reason."""
    _, _, a, b = two
    res = a.call("ask", agent=b.name, text="anyone?", timeout_secs=0.5)
    assert res["answered"] is False
    assert "no reply came within 0.5 s" in res["note"]
    ask_id = _next_ask(b)["correlation_id"]
    with pytest.raises(ToolFailed, match="no open ask"):
        b.call("reply", ask=ask_id, text="too late")


def test_send_message_to_a_session_goes_to_its_inbox(two: Any) -> None:
    """send_message to a session returns at once and the text waits in its inbox."""
    _, _, a, b = two
    res = a.call("send_message", agent=b.name, text="fyi")
    assert res["sent"] is True
    assert res["via"] == "inbox"
    assert _next_ask(b)["text"].endswith("fyi")


def test_session_holding_an_ask_calls_one_deeper(two: Any) -> None:
    """A session answering an ask at depth 1 runs a depth-1 turn, so its own ask to a
    runner is depth 2, as the runner itself sees through whoami: the daemon counts, not A."""
    _, call, a, b = two
    ok(call, "spawn_subagent", name="helper")
    rid = a.start("ask", agent=b.name, text="ask the helper", timeout_secs=30)
    ask_id = _next_ask(b)["correlation_id"]
    res = b.call("ask", agent="helper", text="whoami")
    assert res["depth"] == 2
    who = json.loads(res["answer"])["whoami"]
    assert who["agent"] == "helper"
    assert who["kind"] == "runner"
    assert who["depth"] == 2
    b.call("reply", ask=ask_id, text="done")
    assert a.result(rid)["depth"] == 1
    assert b.call("ask", agent="helper", text="whoami")["depth"] == 1  # no ask held now


def test_a_to_b_to_a_is_refused(two: Any) -> None:
    """Session A asks runner B, whose turn asks A back: refused as a cycle."""
    _, call, a, _ = two
    ok(call, "spawn_subagent", name="bee")
    res = a.call("ask", agent="bee", text=f"ask {a.name} answer loop")
    assert res["answer"] == (
        f"error: refused: {a.name} -> bee -> {a.name} is a cycle "
        f"({a.name} is already waiting in this chain)"
    )


def test_two_concurrent_asks_from_one_agent_open_two_sessions(two: Any) -> None:
    """Agent A asks B twice at once: "From A" is busy, so "From A (2)" opens; A's next ask
    resumes "From A"."""
    _, call, a, _ = two
    ok(call, "spawn_subagent", name="bee")
    first = a.start("ask", agent="bee", text="sleep 1\nanswer one")
    second = a.start("ask", agent="bee", text="sleep 1\nanswer two")
    got = sorted((a.result(first), a.result(second)), key=lambda r: r["session"])
    assert [r["session"] for r in got] == [f"From {a.name}", f"From {a.name} (2)"]
    assert {r["answer"] for r in got} == {"one", "two"}
    again = a.call("ask", agent="bee", text="answer three")
    assert again["session"] == f"From {a.name}"
    assert again["resumed"] is True
