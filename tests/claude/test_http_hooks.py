"""The real Claude Code with the http hooks ``agentcoord setup claude`` writes: the write guard
answers through the daemon's ``/hooks/pre-tool-use``, and with the daemon down the hooks fail
open while the SessionStart command hook tells the session once (docs/claude-code.md "Hooks")."""

from __future__ import annotations

import json
from pathlib import Path

from tests.claude.conftest import Claude
from tests.claude.model_api import Text, ToolUse, context_texts, tool_results
from tests.conftest import Daemon
from tests.tools.conftest import human_call


def _settings(claude: Claude) -> dict[str, list[dict[str, object]]]:
    path = Path(claude.env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    hooks: dict[str, list[dict[str, object]]] = json.loads(path.read_text())["hooks"]
    return hooks


def test_a_write_to_a_claimed_file_is_denied_through_the_http_hook(
    daemon: Daemon, claude: Claude
) -> None:
    """With PreToolUse an http hook only, a Write to a file the human write-claimed is denied
    in the tool_result the model gets, naming the holder; the file is not created, and a Write
    to an unclaimed file in the same turn goes through."""
    [pre] = _settings(claude)["PreToolUse"]
    assert [h["type"] for h in pre["hooks"]] == ["http"]  # type: ignore[attr-defined]
    claimed, free = claude.cwd / "auth.py", claude.cwd / "free.txt"
    human_call(daemon, "claim", resource_key=f"file:{claimed}", mode="write", ttl="5m")
    claude.api.script(
        ToolUse("Write", {"file_path": str(claimed), "content": "x = 1\n"}),
        ToolUse("Write", {"file_path": str(free), "content": "mine\n"}),
        Text("done"),
    )
    run = claude.run("write auth.py")
    run.check()
    denied, allowed = tool_results(run.requests[-1])
    assert denied.get("is_error"), denied
    assert "claimed for writing by human:" in denied["text"], denied
    assert not claimed.exists()
    assert not allowed.get("is_error"), allowed
    assert free.read_text() == "mine\n"


def test_with_the_daemon_down_hooks_fail_open_and_the_session_is_told_once(
    daemon: Daemon, claude: Claude
) -> None:
    """With the daemon stopped, Writes go through (each http hook's refused connection is a
    non-blocking error) and the model is told once, by the SessionStart hook, that
    coordination is off and how to start it; no other hook adds anything."""
    daemon.stop()
    one, two = claude.cwd / "one.txt", claude.cwd / "two.txt"
    claude.api.script(
        ToolUse("Write", {"file_path": str(one), "content": "1\n"}),
        ToolUse("Write", {"file_path": str(two), "content": "2\n"}),
        Text("done"),
    )
    run = claude.run("write two files")
    run.check()
    assert one.read_text() == "1\n"
    assert two.read_text() == "2\n"
    assert all(not r.get("is_error") for r in tool_results(run.requests[-1]))
    (told,) = context_texts(run.requests[-1], "SessionStart")
    assert "agentcoord is off for this session" in told
    assert "agentcoord serve" in told
    for event in ("PreToolUse", "PostToolUse", "UserPromptSubmit"):
        assert context_texts(run.requests[-1], event) == [], event
