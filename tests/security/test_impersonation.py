"""Impersonation (the security pass): every tool that takes an ``agent`` or ``from``
argument, called by one agent with another agent's id, over the unix socket and over HTTP, is
refused with "identity mismatch" and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.daemon.test_http_transport import post
from tests.security.conftest import Tally
from tests.tools.conftest import AgentProc, ToolFailed
from tests.tools.session_helpers import unix_request

# Values that pass each tool's argument schema, so the identity check is what answers.
_FILL: dict[str, Any] = {
    "resource_key": "sec/file.py",
    "token": 1,
    "name": "secroom",
    "participants": ["someone"],
    "question": "q?",
    "choices": ["a", "b"],
    "schema": {"type": "object"},
    "offer": "offer-1",
    "accept": False,
    "text": "hello",
    "task": "t",
    "prompt": "p-1",
    "ask": "ask-1",
    "answer": "yes",
}


def _args(schema: dict[str, Any], victim: str, key: str, to: str) -> dict[str, Any]:
    props = schema.get("properties", {})
    args = {name: _FILL[name] for name in schema.get("required", []) if name in _FILL}
    if "to" in props:
        args["to"] = to  # send takes exactly one of to/channel
    if key == "from" and "agent" in props:
        args["agent"] = to  # send_message/ask: `agent` is the target, `from` the sender
    if "timeout_secs" in props:
        args["timeout_secs"] = 1  # nothing may wait long if a call were wrongly accepted
    args[key] = victim
    return args


@pytest.fixture
def pair(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[tuple[AgentProc, AgentProc]]:
    """Two agents: the impostor and the victim, each its own stand-in Claude session."""
    impostor = AgentProc(daemon, claude_bin, tmp_path / "work" / "impostor")
    victim = AgentProc(daemon, claude_bin, tmp_path / "work" / "victim")
    try:
        yield impostor, victim
    finally:
        impostor.close()
        victim.close()


def _identity_tools(d: Daemon) -> list[tuple[str, str, dict[str, Any]]]:
    tools = unix_request(d, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
    out = []
    for t in tools:
        props = t["inputSchema"].get("properties", {})
        for key in ("agent", "from"):
            if key == "agent" and "from" in props:
                continue  # there `agent` names the target (send_message, ask), not the caller
            if key in props:
                out.append((t["name"], key, t["inputSchema"]))
    return out


def test_every_tool_refuses_another_agents_id_over_the_socket(
    daemon: Daemon, pair: tuple[AgentProc, AgentProc], tally: Tally
) -> None:
    """Each agent/from-taking tool called with the victim's id: "identity mismatch"."""
    impostor, victim = pair
    victim.call("send", to=impostor.name, text="keep me")  # something of the victim's to steal
    tools = _identity_tools(daemon)
    assert len(tools) >= 15, [t[0] for t in tools]  # claims, messaging, humans, handoff, ...
    failures = []
    for name, key, schema in tools:
        args = _args(schema, victim.name, key, to=victim.name)
        try:
            impostor.call(name, **args)
            text = "accepted"
        except ToolFailed as exc:
            text = str(exc)
        if not tally("impersonation (unix)", "identity mismatch" in text):
            failures.append((name, key, text))
    assert failures == []
    # Nothing of the victim's was touched: its message is still there, for it alone.
    assert [m["text"] for m in impostor.call("inbox")["messages"]] == ["keep me"]
    assert victim.call("check_claims", holder=victim.name)["claims"] == []


def test_every_tool_refuses_another_agents_id_over_http(
    daemon: Daemon, pair: tuple[AgentProc, AgentProc], tally: Tally
) -> None:
    """The same over HTTP with the human's bearer token: the human cannot act as an agent."""
    _, victim = pair
    token = (daemon.state_dir / "human.token").read_text().strip()
    failures = []
    for name, key, schema in _identity_tools(daemon):
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": _args(schema, victim.name, key, victim.name)},
        }
        status, _, raw = post(daemon, body, {"authorization": f"Bearer {token}"})
        result = json.loads(raw).get("result", {})
        text = result.get("content", [{}])[0].get("text", "") if result.get("isError") else ""
        if not tally("impersonation (http)", status == 200 and "identity mismatch" in text):
            failures.append((name, key, status, raw[:200]))
    assert failures == []


def test_a_registration_belongs_to_its_registrant(
    pair: tuple[AgentProc, AgentProc], tally: Tally
) -> None:
    """Only its registrant may re-point, heartbeat or remove a registered agent."""
    impostor, victim = pair
    victim.call("register_agent", agent_id="reviewer", endpoint="http://127.0.0.1:9/victim")
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("register_agent", {"agent_id": "reviewer", "endpoint": "http://127.0.0.1:9/evil"}),
        ("heartbeat_agent", {"agent_id": "reviewer", "status": "degraded"}),
        ("deregister_agent", {"agent_id": "reviewer"}),
    ]
    failures = []
    for name, args in attempts:
        try:
            impostor.call(name, **args)
            text = "accepted"
        except ToolFailed as exc:
            text = str(exc)
        if not tally("registry hijack", "identity mismatch" in text):
            failures.append((name, text))
    assert failures == []
    row = victim.call("get_agent", agent_id="reviewer")["agent"]
    assert (row["endpoint"], row["registered_by"]) == ("http://127.0.0.1:9/victim", victim.name)
    victim.call("heartbeat_agent", agent_id="reviewer")  # the registrant still may
    assert victim.call("deregister_agent", agent_id="reviewer")["removed"] is True
