"""annotate, find_agents, list_agents and get_agent through MCP on a real daemon."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.tools.session_helpers import holding, own_call, session_call


def _sc(result: dict[str, Any]) -> dict[str, Any]:
    assert not result["isError"], result["content"][0]["text"]
    return result["structuredContent"]  # type: ignore[no-any-return]


def test_annotate_find_and_list(daemon: Daemon, claude_bin: Path) -> None:
    """A session's focus is found by keyword (ranked) and joined onto its list/get row."""
    calls = [
        ("whoami", {}),
        (
            "annotate",
            {"intent": "Refactor the auth middleware", "files": "src/auth.py,src/app.py"},
        ),
    ]
    with holding(daemon, claude_bin, calls) as out:
        me = _sc(out[0])["agent"]
        assert _sc(out[1]) == {"ok": True, "agent": me}
        other = session_call(
            daemon, claude_bin, [("whoami", {}), ("annotate", {"concepts": ["auth"]})]
        )
        them = _sc(other[0])["agent"]
        found = _sc(own_call(daemon, "find_agents", {"query": "AUTH"}))["matches"]
        assert [m["agent"] for m in found] == [them, me]  # an exact tag beats a substring
        assert found[1]["files"] == ["src/auth.py", "src/app.py"]
        assert (
            _sc(own_call(daemon, "find_agents", {"query": "auth", "limit": 1}))["matches"][0][
                "agent"
            ]
            == them
        )
        rows = {a["name"]: a for a in _sc(own_call(daemon, "list_agents", {}))["agents"]}
        assert rows[me]["focus"]["intent"] == "Refactor the auth middleware"
        assert rows[me]["phase"] == "Running"
        got = _sc(own_call(daemon, "get_agent", {"name": me}))
        assert got["found"]
        assert got["agent"]["focus"]["files"] == ["src/auth.py", "src/app.py"]
        assert _sc(own_call(daemon, "get_agent", {"name": "nobody"})) == {"found": False}


def test_annotate_is_a_whole_record_write(daemon: Daemon, claude_bin: Path) -> None:
    """A second annotate without files clears them (a whole-record write: docs/tools.md)."""
    out = session_call(
        daemon,
        claude_bin,
        [
            ("annotate", {"intent": "one", "files": ["a.py"], "symbols": ["f"]}),
            ("annotate", {"intent": "two"}),
            ("whoami", {}),
        ],
    )
    me = _sc(out[2])["agent"]
    found = _sc(own_call(daemon, "find_agents", {"query": "two"}))["matches"]
    assert found == [
        {"agent": me, "intent": "two", "files": [], "symbols": [], "concepts": [], "score": 2}
    ]
    assert _sc(own_call(daemon, "find_agents", {"query": "a.py"}))["matches"] == []
    deadline = time.monotonic() + 60  # audit appends are asynchronous
    while True:
        events = _sc(own_call(daemon, "audit", {"type": "AGENT_ANNOTATED", "actor": me}))
        if len(events["events"]) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [e["intent"] for e in events["events"]] == ["one", "two"]
