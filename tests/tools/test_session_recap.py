"""After Claude Code compacts a conversation or the user runs /clear, the SessionStart hook
(source ``compact`` or ``clear``) tells the session again who it is, the claims it holds with
their expiry, its focus and how many messages wait (docs/claude-code.md "After compaction or
/clear"): over the daemon's http hook route and through the ``agentcoord hook`` command, with
the payloads Claude Code sends, against the real daemon."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from agentcoord.kernel.timetext import human_time
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc
from tests.tools.test_http_hooks import _session_posts

SESSION = "8d7f3c1e-5b2a-4c9e-9f1d-2a6b7c8d9e0f"


def _payload(d: Daemon, source: str, cwd: Path) -> dict[str, Any]:
    """SessionStart's stdin JSON as Claude Code sends it (code.claude.com/docs/en/hooks)."""
    return {
        "session_id": SESSION,
        "transcript_path": str(d.root / "claude-home" / "projects" / "p" / f"{SESSION}.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "source": source,
    }


def _context(body: str) -> str:
    spec = json.loads(body)["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    return str(spec["additionalContext"])


def _command_hook(d: Daemon, claude: Path, payload: dict[str, Any], cwd: Path) -> str:
    """``agentcoord hook session-start`` under a stand-in ``claude`` of the same session (the
    command hook setup installs on SessionStart); its additionalContext."""
    out = subprocess.run(
        [str(claude), "--", sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=dict(d.env, CLAUDE_CODE_SESSION_ID=SESSION),
        cwd=cwd,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return _context(out.stdout)


def _repo(root: Path) -> Path:
    repo = root / "app"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "parser.py").write_text("x = 1\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "."]):
        subprocess.run(["git", *argv], cwd=repo, check=True, timeout=60)
    return repo


def test_after_compaction_the_session_is_told_its_name_claims_focus_and_inbox(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """SessionStart with source compact, posted to /hooks/session-start by the session,
    answers its agent name, each claim it holds (the file as repository and path) with its
    expiry, its focus and the count of waiting messages; an inbox read empties the count."""
    repo = _repo(tmp_path)
    me = AgentProc(daemon, claude_bin, repo, session_id=SESSION)
    peer = AgentProc(daemon, claude_bin, tmp_path / "peer")
    try:
        me.call("annotate", intent="porting the parser", files=["src/parser.py"])
        file_claim = me.call("claim", resource_key=f"{repo}/src/parser.py", ttl="10m")
        lock = me.call("claim", resource_key="deploy-lock", mode="write", ttl="5m")
        assert file_claim["acquired"]
        assert lock["acquired"]
        for text in ("review my diff", "tests are green"):
            peer.call("send", to=me.name, text=text)

        [(status, body)] = _session_posts(
            daemon,
            claude_bin,
            [("session-start", _payload(daemon, "compact", repo))],
            CLAUDE_CODE_SESSION_ID=SESSION,
        )
        assert status == 200, body
        text = _context(body)
        lines = text.splitlines()
        assert "compacted" in lines[0], text
        assert f"`{me.name}`" in lines[0], text
        file_line = next(ln for ln in lines if "parser.py" in ln)
        assert file_line.startswith("  - write "), file_line
        assert re.search(r"\bapp\b", file_line), file_line  # the repository, by its name
        assert "file:" not in text  # not the internal key
        assert str(repo / ".git") not in text
        # as the claim said, in the one time format people read (docs/architecture.md)
        expires = datetime.fromisoformat(file_claim["claim"]["expires_at"]).timestamp()
        assert f"expires {human_time(expires)} (in " in file_line, file_line
        lock_line = next(ln for ln in lines if "deploy-lock" in ln)
        assert "expires " in lock_line
        assert "(in " in lock_line
        assert "- your focus: porting the parser (files: src/parser.py)" in lines
        assert "- messages waiting in your inbox: 2 (read them with inbox)" in lines
        assert len(lines) <= 8, text  # a few lines, not a report

        assert [m["text"] for m in me.call("inbox")["messages"]] == [
            "review my diff",
            "tests are green",
        ]
        again = _command_hook(daemon, claude_bin, _payload(daemon, "compact", repo), repo)
        assert "- messages waiting in your inbox: 0" in again.splitlines(), again
        assert "deploy-lock" in again  # the recap reads, it releases nothing
        assert me.call("check_claims", prefix="deploy-lock")["claims"]
    finally:
        me.close()
        peer.close()


def test_after_clear_a_session_holding_nothing_is_told_so(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """The command hook with source clear: the same agent name, and "none" for claims and
    focus and 0 messages; a plain start (source startup) keeps the one-line greeting."""
    cwd = tmp_path / "work"
    me = AgentProc(daemon, claude_bin, cwd, session_id=SESSION)
    try:
        text = _command_hook(daemon, claude_bin, _payload(daemon, "clear", cwd), cwd)
        lines = text.splitlines()
        assert "cleared" in lines[0], text
        assert f"`{me.name}`" in lines[0], text
        assert "- claims you hold: none" in lines
        assert "- your focus: none set (annotate says what you are working on)" in lines
        assert "- messages waiting in your inbox: 0" in lines
        start = _command_hook(daemon, claude_bin, _payload(daemon, "startup", cwd), cwd)
        assert start.startswith(f"agentcoord: you are agent `{me.name}`")
        assert "claims you hold" not in start
    finally:
        me.close()
