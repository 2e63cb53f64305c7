"""`agentcoord setup claude` edits Claude Code's files surgically, idempotently, reversibly;
`agentcoord hook` talks to the daemon as the session that ran it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentcoord.claude_setup import (
    missing_rules,
    remove_claude,
    setup_claude,
    state_dir_rules,
    with_hooks,
    without_hooks,
)
from tests.conftest import Daemon

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}
USER_CLAUDE_JSON = {
    "numStartups": 12,
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
    "projects": {"/w": {"allowedTools": []}},
}


def test_hooks_added_once_and_user_hooks_kept() -> None:
    """Our hooks are added next to the user's; a second run changes nothing."""
    once = with_hooks(USER_SETTINGS, "agentcoord hook")
    twice = with_hooks(once, "agentcoord hook")
    assert once == twice
    pre = once["hooks"]["PreToolUse"]
    assert pre[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]  # type: ignore[index]
    ours = [g for g in pre if g.get("matcher") == "Write|Edit|MultiEdit"]
    assert ours[0]["hooks"][0]["command"] == "agentcoord hook pre-tool-use"
    assert set(once["hooks"]) == {
        "PreToolUse",
        "Stop",
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "SessionEnd",
    }
    assert once["model"] == "opus"


def test_remove_restores_exactly() -> None:
    """Removing our hooks gives back the user's settings unchanged."""
    assert (
        without_hooks(with_hooks(USER_SETTINGS, "/usr/local/bin/agentcoord hook")) == USER_SETTINGS
    )
    assert without_hooks(with_hooks({}, "agentcoord hook")) == {}


def test_setup_and_remove_on_files(tmp_path: Path) -> None:
    """setup adds agent-coord to ~/.claude.json and hooks to settings.json; remove undoes it."""
    home, claude_dir = tmp_path, tmp_path / ".claude"
    claude_dir.mkdir()
    (home / ".claude.json").write_text(json.dumps(USER_CLAUDE_JSON))
    (claude_dir / "settings.json").write_text(json.dumps(USER_SETTINGS))
    first = setup_claude(home, claude_dir, "/opt/bin/agentcoord")
    assert len(first.changed) == 2
    config = json.loads((home / ".claude.json").read_text())
    assert config["mcpServers"]["agent-coord"] == {
        "type": "stdio",
        "command": "/opt/bin/agentcoord",
        "args": ["mcp"],
    }
    assert config["mcpServers"]["github"] == USER_CLAUDE_JSON["mcpServers"]["github"]  # type: ignore[index]
    assert config["numStartups"] == 12
    second = setup_claude(home, claude_dir, "/opt/bin/agentcoord")
    assert second.changed == []
    remove_claude(home, claude_dir)
    assert json.loads((home / ".claude.json").read_text()) == USER_CLAUDE_JSON
    assert json.loads((claude_dir / "settings.json").read_text()) == USER_SETTINGS


def test_project_scope_writes_mcp_json(tmp_path: Path) -> None:
    """--project writes .mcp.json and .claude/settings.json in the project."""
    setup_claude(tmp_path / "home", tmp_path / "home" / ".claude", "agentcoord", tmp_path / "p")
    mcp = json.loads((tmp_path / "p" / ".mcp.json").read_text())
    assert mcp["mcpServers"]["agent-coord"]["args"] == ["mcp"]
    assert (tmp_path / "p" / ".claude" / "settings.json").exists()


def test_malformed_settings_are_not_clobbered(tmp_path: Path) -> None:
    """A settings file that is not JSON is left alone, with a clear error."""
    claude_dir = tmp_path / ".claude"
    claude_dir.mkdir()
    (claude_dir / "settings.json").write_text("{ not json")
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=dict(os.environ, HOME=str(tmp_path), CLAUDE_CONFIG_DIR=str(claude_dir)),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1
    assert "not valid JSON" in out.stderr
    assert (claude_dir / "settings.json").read_text() == "{ not json"


def test_session_start_hook_identifies_the_session(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """The SessionStart hook, run by a `claude` process, prints context naming its agent."""
    project = tmp_path / "shop"
    project.mkdir()
    hook_input = {"session_id": "s-hook", "hook_event_name": "SessionStart", "cwd": str(project)}
    out = subprocess.run(
        [str(claude_bin), "--", sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=dict(daemon.env, CLAUDE_CODE_SESSION_ID="s-hook"),
        cwd=project,
        input=json.dumps(hook_input),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    spec = json.loads(out.stdout)["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    assert "`shop-1`" in spec["additionalContext"]


def test_hook_without_daemon_is_silent(tmp_path: Path) -> None:
    """With no daemon the hook prints nothing and exits 0, so Claude Code is never blocked."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "hook", "pre-tool-use"],
        env=dict(os.environ, AGENTCOORD_RUNTIME_DIR=str(tmp_path / "none")),
        input='{"tool_name":"Write","tool_input":{"file_path":"/x"}}',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (out.returncode, out.stdout) == (0, "")


def test_state_dir_rules_use_claude_codes_absolute_path_syntax(tmp_path: Path) -> None:
    """Read and Edit deny rules on the state dir, `//` marking the absolute path."""
    state = tmp_path / "state"
    root = str(state.resolve())
    assert state_dir_rules(state) == [f"Read(/{root}/**)", f"Edit(/{root}/**)"]
    assert state_dir_rules(state)[0].startswith("Read(//")


def test_permission_rules_added_once_kept_beside_the_users_and_removed(tmp_path: Path) -> None:
    """setup adds the state-dir deny rules next to the user's own; twice is once; remove
    takes only ours away; doctor's check sees them missing, then present."""
    home, claude_dir, state = tmp_path, tmp_path / ".claude", tmp_path / "state"
    claude_dir.mkdir()
    settings = {**USER_SETTINGS, "permissions": {"deny": ["Bash(git push *)"]}}
    (claude_dir / "settings.json").write_text(json.dumps(settings))
    settings_file = claude_dir / "settings.json"
    assert missing_rules(settings_file, state) == state_dir_rules(state)
    report = setup_claude(home, claude_dir, "agentcoord", state_dir=state)
    assert report.denied == state_dir_rules(state)
    deny = json.loads(settings_file.read_text())["permissions"]["deny"]
    assert deny == ["Bash(git push *)", *state_dir_rules(state)]
    assert missing_rules(settings_file, state) == []
    assert setup_claude(home, claude_dir, "agentcoord", state_dir=state).changed == []
    remove_claude(home, claude_dir, state_dir=state)
    assert json.loads(settings_file.read_text()) == settings
    assert missing_rules(settings_file, state) == state_dir_rules(state)


def test_cli_setup_prints_the_rules_it_added(tmp_path: Path) -> None:
    """`agentcoord setup claude` says which permission rules it added, `--remove` which went."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))},
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "AGENTCOORD_STATE_DIR": str(tmp_path / "state"),
    }
    run = [sys.executable, "-m", "agentcoord", "setup", "claude"]
    added = subprocess.run(run, env=env, capture_output=True, text=True, timeout=30, check=True)
    rules = state_dir_rules(tmp_path / "state")
    assert "denies its file tools the daemon's state dir" in added.stdout
    assert all(rule in added.stdout for rule in rules)
    deny = json.loads((tmp_path / ".claude" / "settings.json").read_text())["permissions"]["deny"]
    assert deny == rules
    gone = subprocess.run(
        [*run, "--remove"], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    assert "no longer denies" in gone.stdout
    assert "permissions" not in json.loads((tmp_path / ".claude" / "settings.json").read_text())
