"""What the model reads is small: an agent's ``tools/list`` within its byte budget with every
documented argument kept, and agents' results without the CLI's extra fields
(docs/claude-code.md "Results for the model")."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from agentcoord.daemon.services import Services
from agentcoord.daemon.toolset import build_registry
from agentcoord.errors import InvalidArguments
from agentcoord.tools._shape import compact, short_time
from agentcoord.tools.arguments import check_arguments
from agentcoord.tools.base import model_schema
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc

# The bytes of the compact JSON tools array an agent's tools/list sends (every page): 8 KB.
# Every documented argument is listed with its type; an ``agent``/``from`` that can only name the
# caller, options for programs, and tools a model does not need are accepted but not listed
# (docs/claude-code.md "Results for the model").
AGENT_LISTING_BUDGET = 8_192

# Every argument docs/tools.md "Every tool" names for a tool: (type, required); arrays also take a
# comma-separated string, and the acting agent is `agent` or `from`.
STR, ARR, INT, BOOL, NUM = "string", "array", "integer", "boolean", "number"
SEED_ARGUMENTS: dict[str, dict[str, tuple[str, bool]]] = {
    # discovery, claims, messaging, handoff, prompts, lifecycle
    "list_agents": {
        "selector": (STR, False),
        "agent_type": (STR, False),
        "capability": (STR, False),
        "status": (STR, False),
        "limit": (INT, False),
    },
    "get_agent": {"agent_id": (STR, False)},
    "find_agents": {"query": (STR, False), "capability": (STR, False)},
    "annotate": {
        "intent": (STR, False),
        "files": (ARR, False),
        "symbols": (ARR, False),
        "concepts": (ARR, False),
        "agent": (STR, False),
    },
    "claim": {
        "resource_key": (STR, True),
        "mode": (STR, False),
        "ttl": (STR, False),
        "agent": (STR, False),
    },
    "release": {"resource_key": (STR, True), "agent": (STR, False)},
    "check_claims": {"prefix": (STR, False)},
    "spawn_subagent": {"name": (STR, True), "profile": (STR, False), "prompt": (STR, False)},
    "cancel": {"name": (STR, True)},
    "send": {"to": (STR, False), "kind": (STR, False), "text": (STR, False), "from": (STR, False)},
    "open_channel": {"name": (STR, True), "participants": (ARR, True), "topic": (STR, False)},
    "broadcast": {"text": (STR, True), "from": (STR, False)},
    "handoff": {
        "to": (STR, True),
        "task": (STR, True),
        "current_state": (STR, False),
        "in_progress": (STR, False),
        "decisions": (ARR, False),
        "next_steps": (ARR, False),
        "timeout_secs": (NUM, False),
        "from": (STR, False),
    },
    "merge": {"target": (STR, True), "source": (STR, True)},
    "escalate": {"question": (STR, True), "timeout_secs": (NUM, False), "agent": (STR, False)},
    "checkpoint": {"task": (STR, False)},
    "resume": {"task": (STR, True)},
    # the registry and dispatch
    "register_agent": {
        "agent_id": (STR, True),
        "agent_name": (STR, False),
        "agent_type": (STR, False),
        "capabilities": (STR, False),
        "endpoint": (STR, False),
        "metadata": (STR, False),
        "heartbeat_ttl": (INT, False),
        "transport": (STR, False),
    },
    "deregister_agent": {"agent_id": (STR, True)},
    "heartbeat_agent": {"agent_id": (STR, True), "status": (STR, False), "metadata": (STR, False)},
    "discover_local_agents": {"status": (STR, False)},
    "run_agent": {
        "agent_id": (STR, True),
        "task": (STR, True),
        "profile": (STR, False),
        "repo_url": (STR, False),
        "wait": (BOOL, False),
        "file_path": (STR, False),
    },
    "dispatch_to_agent": {
        "capability": (STR, True),
        "task": (STR, True),
        "profile": (STR, False),
        "repo_url": (STR, False),
        "wait": (BOOL, False),
        "file_path": (STR, False),
    },
    # agent to agent
    "send_message": {"agent": (STR, True), "text": (STR, True)},
    "ask": {"agent": (STR, True), "text": (STR, True)},
}


# The tools that only read (each declared with read_only=True).
READ_ONLY = {
    "whoami",
    "check_conflicts",
    "list_agents",
    "get_agent",
    "find_agents",
    "check_claims",
    "list_channels",
    "list_profiles",
    "discover_local_agents",
}


class _Unused:
    """Stands for every service: a tool family keeps its services and calls none while it is
    built."""

    def __getattr__(self, name: str) -> _Unused:
        return _Unused()


def _agent_listing() -> list[dict[str, Any]]:
    registry = build_registry(cast(Services, _Unused()))
    return [t.listing() for t in registry.listed_for("session")]


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.mark.unit
def test_agent_tools_list_within_budget() -> None:
    """An agent's tools/list, as the daemon encodes it, fits AGENT_LISTING_BUDGET bytes."""
    listing = _agent_listing()
    assert len(listing) >= 34
    size = _size(listing)
    biggest = sorted(((_size(t), t["name"]) for t in listing), reverse=True)[:5]
    assert size <= AGENT_LISTING_BUDGET, (size, biggest)


@pytest.mark.unit
def test_every_seed_argument_is_listed_with_its_type() -> None:
    """Each documented tool lists each documented argument, with a type that takes the documented
    one, required as documented."""
    tools = {t["name"]: t for t in _agent_listing()}
    for name, arguments in SEED_ARGUMENTS.items():
        assert name in tools, name
        schema = tools[name]["inputSchema"]
        assert schema["type"] == "object"
        props, required = schema.get("properties", {}), set(schema.get("required", []))
        for arg, (kind, needed) in arguments.items():
            assert arg in props, (name, arg)
            listed = props[arg]["type"]
            assert kind in (listed if isinstance(listed, list) else [listed]), (name, arg, listed)
            if kind == ARR:
                assert props[arg].get("items", {}).get("type") in (None, STR), (name, arg)
            assert (arg in required) == needed, (name, arg, sorted(required))


@pytest.mark.unit
def test_descriptions_are_one_short_sentence() -> None:
    """Every listed tool has a description of at most 120 characters."""
    for tool in _agent_listing():
        assert 0 < len(tool["description"]) <= 120, (tool["name"], tool["description"])


@pytest.mark.unit
def test_model_schema_drops_only_checker_limits() -> None:
    """The listed schema keeps types, enums, items and required, and drops the limits the
    argument checker enforces and an empty properties."""
    schema = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "maxLength": 512},
            "mode": {"type": "string", "enum": ["write", "read"]},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 9}},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500},
        },
        "required": ["key"],
    }
    assert model_schema(schema) == {
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "mode": {"type": "string", "enum": ["write", "read"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": "integer"},
        },
        "required": ["key"],
    }
    assert model_schema({"type": "object", "properties": {}}) == {"type": "object"}


@pytest.mark.unit
def test_compact_drops_empty_fields_but_zero_and_kept_ones() -> None:
    """compact drops None, False, "", [] and {} (not 0), and keeps the fields named in keep."""
    row: dict[str, Any] = {
        "a": None,
        "b": False,
        "c": "",
        "d": [],
        "e": {},
        "f": 0,
        "g": "x",
        "profile": "",
    }
    assert compact(row, keep=("profile",)) == {"f": 0, "g": "x", "profile": ""}


@pytest.mark.unit
def test_short_time_is_iso_to_the_second() -> None:
    """Epoch seconds and millisecond ISO times in UTC become YYYY-MM-DDTHH:MM:SSZ; others stay."""
    assert short_time(1796126144.987) == "2026-12-01T11:55:44Z"
    assert short_time("2026-12-01T11:55:44.768Z") == "2026-12-01T11:55:44Z"
    assert short_time("2026-12-01T11:55:44.632+00:00") == "2026-12-01T11:55:44Z"
    assert short_time("2026-12-01T11:55:44+00:00") == "2026-12-01T11:55:44Z"
    assert short_time("2026-12-01T11:55:44+02:00") == "2026-12-01T11:55:44+02:00"
    assert short_time(None) is None


def test_an_agent_reads_no_pids_internal_ids_or_raw_times(agents: Any) -> None:
    """Through the real daemon an agent's whoami, claims, inbox and channels carry no pids,
    acquisition times, internal labels or sender keys, and times to the second; the documented
    fields are all there."""
    a, b = agents("a"), agents("b")
    who = a.call("whoami")
    assert who["agent"] == a.name
    assert who["kind"] == "session"
    assert who["via"] == "unix"
    assert "pid" not in who
    assert "session_pid" not in who
    a.call("annotate", intent="fix the parser", files=["src/p.py"])
    (row,) = [r for r in b.call("list_agents")["agents"] if r["name"] == a.name]
    assert {"name", "profile", "pool", "phase", "focus", "labels"} <= set(row)
    assert row["focus"] == {"intent": "fix the parser", "files": ["src/p.py"]}
    assert not any(k.endswith(("/session-proc", "/session-id")) for k in row["labels"])
    got = a.call("claim", resource_key="lock:db", ttl="10m")
    assert got["acquired"] is True
    assert isinstance(got["revision"], int)
    assert got["token"] >= 1
    assert "token" not in got["claim"]
    assert "acquired_at" not in got["claim"]
    (held,) = b.call("check_claims", prefix="lock:")["claims"]
    assert set(held) == {"resource_key", "agent", "mode", "ttl", "expires_at", "token"}
    assert len(held["expires_at"]) == 20
    assert held["expires_at"].endswith("Z")
    b.call("send", to=a.name, text="hi", idempotency_key="k-1")
    (msg,) = a.call("inbox")["messages"]
    assert set(msg) == {"from", "kind", "seq", "ts", "text"}
    assert msg["ts"].endswith("Z")
    a.call("open_channel", name="shape", participants=[b.name])
    (chan,) = b.call("list_channels")["channels"]
    assert set(chan) == {"name", "participants", "created_by", "phase"}


def test_a_file_claim_in_your_own_worktree_omits_worktree_and_branch(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """Two agents in one git worktree: each sees the other's file claim by its path and
    repository, without the worktree and branch they share (another worktree's are shown:
    tests/tools/test_repo_claims.py)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    holder, looker = AgentProc(daemon, claude_bin, repo), AgentProc(daemon, claude_bin, repo)
    try:
        holder.call("claim", resource_key="file:src/app.py")
        (row,) = looker.call("check_claims", prefix="file:src/")["claims"]
        assert row["path"] == "src/app.py"
        assert row["repository"] == os.path.realpath(repo / ".git")
        assert "worktree" not in row
        assert "branch" not in row
        lost = looker.call("claim", resource_key="file:src/app.py")
        assert lost["acquired"] is False
        assert lost["holder"]["agent"] == holder.name
        assert "worktree" not in lost["holder"]
    finally:
        holder.close()
        looker.close()


@pytest.mark.unit
def test_unlisted_arguments_are_checked_and_shown_to_the_human() -> None:
    """An unlisted argument is absent from an agent's listing, present in the human's, and
    accepted (with its type checked) by the argument checker."""
    registry = build_registry(cast(Services, _Unused()))
    send = registry.get("send")
    assert send is not None
    agent_props = send.listing()["inputSchema"]["properties"]
    human_props = send.listing(full=True)["inputSchema"]["properties"]
    assert "queue_unknown" not in agent_props
    assert human_props["queue_unknown"] == {"type": "boolean"}  # no marker leaks out
    assert check_arguments(send.input_schema, {"to": "a", "queue_unknown": True}) == {
        "to": "a",
        "queue_unknown": True,
    }
    with pytest.raises(InvalidArguments, match="`queue_unknown` must be a boolean"):
        check_arguments(send.input_schema, {"to": "a", "queue_unknown": "yes"})
    unlisted_tools = {t.name for t in registry.all()} - {t["name"] for t in _agent_listing()}
    assert {"request_approval", "ask_choice", "request_input", "nats_credentials"} <= (
        unlisted_tools
    )


@pytest.mark.unit
def test_only_the_reading_tools_are_marked_read_only() -> None:
    """The tools that change nothing carry readOnlyHint in the human's listing and are named in
    every initialize result (the shim resends them across a daemon restart); no tool that
    writes is, and an agent's listing spends no bytes on it."""
    registry = build_registry(cast(Services, _Unused()))
    full = [t.listing(full=True) for t in registry.listed_for("human")]
    marked = {t["name"] for t in full if t.get("annotations", {}).get("readOnlyHint")}
    assert marked == READ_ONLY
    assert set(registry.read_only_names()) == READ_ONLY
    assert not marked & {"claim", "release", "send", "inbox", "annotate", "ask", "cancel"}
    assert all("annotations" not in t for t in _agent_listing())
