"""Claude Code hooks against the real daemon: a claimed file's write is denied and allowed
after release; pending messages come back in the additional-context format."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.tools.session_helpers import finish, read_results, session_call, spawn_session


def _hook(d: Daemon, claude: Path, event: str, payload: dict[str, Any], **env: str) -> str:
    out = subprocess.run(
        [str(claude), "--", sys.executable, "-m", "agentcoord", "hook", event],
        env=dict(d.env, **env),
        cwd=d.root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_pre_tool_use_denies_claimed_file_until_released(daemon: Daemon, claude_bin: Path) -> None:
    """A write claim by one session makes the PreToolUse hook deny another's Write, naming the
    holder and its intent; once the holder is gone the same hook allows it."""
    target = daemon.root / "src" / "auth.py"
    holder = spawn_session(
        daemon,
        claude_bin,
        [
            ("annotate", {"intent": "rewriting the login flow"}),
            ("claim", {"resource_key": f"file:{target}", "mode": "write", "ttl": "5m"}),
            ("whoami", {}),
        ],
        hold=True,
    )
    try:
        results = read_results(holder)
        assert results[1]["structuredContent"]["acquired"] is True
        holder_name = results[2]["structuredContent"]["agent"]
        payload = {
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": str(target), "content": "x"},
            "cwd": str(daemon.root),
        }
        out = json.loads(_hook(daemon, claude_bin, "pre-tool-use", payload))["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny"
        assert holder_name in out["permissionDecisionReason"]
        assert "rewriting the login flow" in out["permissionDecisionReason"]
        relative = dict(payload, tool_input={"file_path": "src/auth.py"})
        assert "deny" in _hook(daemon, claude_bin, "pre-tool-use", relative)
    finally:
        finish(holder)  # the holder exits: its claims are released (holder-exited)
    deadline = time.monotonic() + 60
    while _hook(daemon, claude_bin, "pre-tool-use", payload) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _hook(daemon, claude_bin, "pre-tool-use", payload) == ""


def test_prompt_hook_injects_pending_messages(daemon: Daemon, claude_bin: Path) -> None:
    """UserPromptSubmit prints pending inbox messages as additionalContext, once."""
    me = session_call(daemon, claude_bin, [("whoami", {})])[0]["structuredContent"]["agent"]
    # The recipient is named by its session id, so later processes of that session are it.
    env = {"CLAUDE_CODE_SESSION_ID": "s-recipient"}
    recipient = subprocess.run(
        [str(claude_bin), "--", sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=dict(daemon.env, **env),
        cwd=daemon.root,
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    name = recipient.stdout.split("`")[1]
    sent = session_call(
        daemon, claude_bin, [("send", {"to": name, "text": "tests are green on main"})]
    )
    assert sent[0]["isError"] is False, sent
    out = _hook(daemon, claude_bin, "user-prompt-submit", {"prompt": "hi"}, **env)
    spec = json.loads(out)["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    assert "tests are green on main" in spec["additionalContext"]
    assert me != name
    assert _hook(daemon, claude_bin, "user-prompt-submit", {"prompt": "again"}, **env) == ""
