"""A session that starts past ``max_sessions`` runs anyway, but is told so at its start, and
the human hears of it through the desktop notifier, against the real daemon and stand-in
Claude Code sessions posting their hooks (docs/budgets.md "Sessions past the ceiling")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.agentops.conftest import wait_for
from tests.approvals.hooksession import Session
from tests.budgets.report import budgets
from tests.conftest import cli_json


def _context(s: Session) -> str:
    started = s.post("session-start", {"hook_event_name": "SessionStart", "source": "resume"})
    assert started is not None
    return str(started["hookSpecificOutput"]["additionalContext"])


def test_a_session_past_the_ceiling_is_told_and_the_human_notified(
    daemon_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """With max_sessions 1: the first session hears nothing of it; the second, at its start,
    is told it is past the ceiling (which names the other) and runs anyway; the human gets
    one desktop notice and a notice prompt, the audit says so, and the second start of the
    same session does not tell it again."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    record = tmp_path / "notified.txt"
    fake = bin_dir / "notify-send"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {record}\n')
    fake.chmod(0o755)
    d = daemon_factory(
        "ceil", PATH=f"{bin_dir}:{os.environ['PATH']}", AGENTCOORD_MAX_SESSIONS="1"
    ).start()
    first = Session(d, claude_bin, tmp_path / "one")
    second = Session(d, claude_bin, tmp_path / "two")
    try:
        assert "session ceiling" not in first.start_context
        assert (
            "agentcoord: this machine is past its session ceiling: 2 live sessions, "
            f"max_sessions = 1 (the others: {first.name}). This session runs anyway (the "
            "ceiling does not stop a session), and the human has been told; start no agents "
            "(spawn_subagent, run_agent) unless the human asks you to."
        ) in second.start_context
        assert "session ceiling" not in _context(second)  # told once, at its first start
        told = [e for e in cli_json(d, "audit", "--type", "SESSION_OVER_CEILING")["events"]]
        assert [(e["agent"], e["sessions"], e["ceiling"]) for e in told] == [
            (second.name, 2, "max_sessions = 1")
        ]
        assert budgets(d)["sessions"] == {"used": 2, "ceiling": 1}
        # The second session keeps working: its hooks are answered as any session's.
        assert second.asks("Bash", command="ls") is None
        lines = wait_for(lambda: record.exists() and record.read_text().splitlines())
        assert lines[1] == f"agentcoord: {second.name} asks"
        assert lines[2].startswith(
            f"Session {second.name} started past the session ceiling: 2 live sessions, "
            "max_sessions = 1. It runs anyway"
        )
        [notice] = [p for p in cli_json(d, "prompts")["prompts"] if p["agent"] == second.name]
        assert notice["kind"] == "notify"
    finally:
        first.close()
        second.close()
