"""A session's relayed permission request answered "allow for 1h" from the CLI (`agentcoord
answer ID --allow-for 1h [--repo | --session]`), against the real daemon: the dialog is
allowed, the standing approval it offers is granted and audited like any grant, and the
session's next such call is allowed by the hook (docs/approvals.md "From a permission
prompt")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agentcoord.claude.push import PERMISSION
from tests.approvals.hooksession import ALLOW
from tests.conftest import Daemon, cli_json
from tests.tools.test_channels_push import (
    ShimSession,
    _open_prompt,
    _open_prompts,
)
from tests.tools.test_channels_push import sessions as sessions  # the fixture


def _answer(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", "answer", *args],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _asking(d: Daemon, claude: Path, made: list[ShimSession], command: str) -> tuple[Any, str]:
    """A push session that asks to run ``command``: (the session, its agent name)."""
    s = ShimSession(d, claude, push=True)
    made.append(s)
    s.initialize()
    me = s.whoami()
    request = {
        "request_id": "abcde",
        "tool_name": "Bash",
        "description": "Run the tests",
        "input_preview": f'{{"command": "{command}", "description": "Run the tests"}}',
    }
    s.notify("notifications/claude/channel/permission_request", request)
    return s, me


def _permission_hook(s: ShimSession, command: str, cwd: Path) -> Any:
    payload = {
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "cwd": str(cwd),
    }
    return s.hook("permission-request", payload)


def test_allow_for_a_repository_grants_its_rule_and_allows_the_dialog(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """`answer ID --allow-for 1h --repo` on `npm test -x`: the dialog gets "allow", the
    approval Bash(npm test:*) covers the asking session's repository for an hour, is audited
    as the human's grant from the CLI, and answers that session's next `npm test` itself."""
    subprocess.run(["git", "init", "-q", str(daemon.root)], check=True, timeout=30)
    s, me = _asking(daemon, claude_bin, sessions, "npm test -x")
    prompt = _open_prompt(daemon, me)
    assert _permission_hook(s, "npm test --watch", daemon.root) is None  # nothing granted yet
    out = _answer(daemon, prompt["id"], "--allow-for", "1h", "--repo")
    assert out.returncode == 0, out.stderr
    assert f"answered {prompt['id']}: allow" in out.stdout
    assert f"allowed Bash(npm test:*) for repository {daemon.root.name} until" in out.stdout
    assert s.next_note(PERMISSION) == {"request_id": "abcde", "behavior": "allow"}
    [row] = cli_json(daemon, "allow", "--list")
    assert (row["rule"], row["scope"], row["label"]) == (
        "Bash(npm test:*)",
        "repository",
        daemon.root.name,
    )
    assert row["expires_at"] - row["granted_at"] == 3600
    [granted] = cli_json(daemon, "audit", "--type", "APPROVAL_GRANTED")["events"]
    assert (granted["id"], granted["how"]) == (row["id"], "cli")
    assert granted["agent"].startswith("human:")
    assert _permission_hook(s, "npm test --watch", daemon.root) == ALLOW
    assert _permission_hook(s, "npm publish", daemon.root) is None


def test_allow_for_one_session_and_what_is_refused(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """`--session` grants for the asking session alone; an answer other than allow, or both
    scopes at once, is refused and leaves the prompt open, with no approval made."""
    s, me = _asking(daemon, claude_bin, sessions, "make build -j4")
    prompt = _open_prompt(daemon, me)
    denied = _answer(daemon, prompt["id"], "deny", "--allow-for", "1h")
    assert denied.returncode != 0
    assert "--allow-for answers 'allow', not 'deny'" in denied.stderr
    both = _answer(daemon, prompt["id"], "--allow-for", "1h", "--repo", "--session")
    assert both.returncode != 0
    assert "give --repo or --session, not both" in both.stderr
    assert _open_prompts(daemon, me) != []
    assert cli_json(daemon, "allow", "--list") == []
    out = _answer(daemon, prompt["id"], "--allow-for", "30m", "--session")
    assert out.returncode == 0, out.stderr
    assert f"allowed Bash(make build:*) for session {me} until" in out.stdout
    assert s.next_note(PERMISSION) == {"request_id": "abcde", "behavior": "allow"}
    [row] = cli_json(daemon, "allow", "--list")
    assert (row["scope"], row["target"]) == ("session", me)
    assert _permission_hook(s, "make build", daemon.root) == ALLOW
