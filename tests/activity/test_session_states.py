"""Every session's state against the real daemon: its hooks (PermissionRequest, Notification,
PostToolUse, SessionEnd) and its registry entry move it, and ``agentcoord agents``,
``list_agents`` as a model reads it and the desktop notices (a stand-in notify-send) say who
waits, where and why (docs/activity.md)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.approvals.hooksession import Session
from tests.conftest import Daemon, cli_json
from tests.tools.conftest import AgentProc, cli


def _state(d: Daemon, name: str) -> Any:
    rows = cli_json(d, "agents", "--all")["agents"]
    [row] = [r for r in rows if r["name"] == name]
    return row.get("state")


def _notifier(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in notify-send on its own PATH dir, recording one line per notice."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    record = tmp_path / "notices.jsonl"
    fake = bin_dir / "notify-send"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    fake.chmod(0o755)
    return bin_dir, record


def _notices(record: Path, n: int) -> list[list[str]]:
    """The first ``n`` notices, once the stand-in has written them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = record.read_text().splitlines() if record.exists() else []
        if len(lines) >= n:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} notices: {record.read_text() if record.exists() else ''}")


def test_states_follow_the_hooks(daemon_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    """An unanswered PermissionRequest shows the session waiting for permission with the tool
    and its input (in ``agents`` and in ``list_agents`` as a model reads it); the tool's
    PostToolUse shows it working; Notification idle_prompt shows it waiting for input;
    SessionEnd ends it; its start and end are audited. Each new wait is one desktop notice
    naming the session, the repository and the reason, and the same wait asked again is not
    announced twice."""
    bin_dir, record = _notifier(tmp_path)
    d = daemon_factory("states", PATH=f"{bin_dir}:{os.environ['PATH']}").start()
    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=30)
    session = Session(d, claude_bin, repo)
    other = AgentProc(d, claude_bin, tmp_path / "peer")
    try:
        ask = {"tool_name": "Bash", "tool_input": {"command": "npm test"}}
        assert session.post("permission-request", ask) is None
        assert _state(d, session.name) == "waiting for permission: Bash npm test"
        assert session.post("permission-request", ask) is None  # asked again: the same wait
        # Another agent sees who is blocked: list_agents as a model reads it (no raw times).
        [row] = [r for r in other.call("list_agents")["agents"] if r["name"] == session.name]
        assert row["state"] == "waiting for permission: Bash npm test"
        assert "state_since" not in row
        assert session.post("post-tool-use", {"tool_name": "Bash"}) is None
        assert _state(d, session.name) == "working"
        assert session.post("notification", {"notification_type": "idle_prompt"}) is None
        assert _state(d, session.name) == "waiting for input"
        notices = _notices(record, 2)
        assert notices == [
            [
                "--app-name=agentcoord",
                f"agentcoord: {session.name} (shop) is waiting for permission",
                "waiting for permission: Bash npm test\n"
                "(answer it in the session, or `agentcoord allow` a rule for it)",
            ],
            [
                "--app-name=agentcoord",
                f"agentcoord: {session.name} (shop) is waiting for input",
                "waiting for input",
            ],
        ]
        plain = cli(d, "agents")
        assert "waiting for input (for " in plain.stdout, plain.stdout
        assert session.post("session-end", {"reason": "prompt_input_exit"}) is None
        assert _state(d, session.name) in (None, "ended")
    finally:
        session.close()
        other.close()
    [started] = [
        e
        for e in cli_json(d, "audit", "--type", "SESSION_STARTED")["events"]
        if e["agent"] == session.name
    ]
    assert started["cwd"] == str(repo)
    [ended] = cli_json(d, "audit", "--type", "SESSION_ENDED")["events"]
    assert (ended["agent"], ended["reason"]) == (session.name, "prompt_input_exit")
    waits = cli_json(d, "audit", "--type", "SESSION_WAITING")["events"]
    assert [(e["state"], e.get("tool"), e["repository"]) for e in waits] == [
        ("waiting-permission", "Bash", "shop"),
        ("waiting-input", None, "shop"),
    ]


def test_the_registry_status_shows_sessions_whose_hooks_said_nothing(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """A session's registry entry (``sessions/<pid>.json``, status busy or idle) shows it
    working or idle, and a newer entry overrides an older hook."""
    session = Session(daemon, claude_bin, tmp_path / "reg")
    try:
        sessions = Path(daemon.env["CLAUDE_CONFIG_DIR"]) / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        pid = session.proc.pid  # the stand-in claude: the session's claude process
        entry = sessions / f"{pid}.json"

        def registry(status: str) -> None:
            body = {"pid": pid, "status": status, "updatedAt": int(time.time() * 1000) + 1000}
            entry.write_text(json.dumps(body))

        registry("busy")
        assert _state(daemon, session.name) == "working"
        registry("idle")
        assert _state(daemon, session.name) == "idle"
    finally:
        session.close()
