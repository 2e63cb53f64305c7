"""`agentcoord setup claude` edits Claude Code's files surgically, idempotently, reversibly;
`agentcoord hook` talks to the daemon as the session that ran it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentcoord.claude.configure import (
    HOOK_HEADER,
    hook_address,
    http_hook_addrs,
    missing_rules,
    remove_claude,
    setup_claude,
    state_dir_rules,
    with_hooks,
    without_hooks,
)
from agentcoord.kernel.config import Config
from tests.conftest import Daemon

ADDR = "127.0.0.1:7421"

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
    once = with_hooks(USER_SETTINGS, "agentcoord hook", ADDR)
    twice = with_hooks(once, "agentcoord hook", ADDR)
    assert once == twice
    pre = once["hooks"]["PreToolUse"]
    assert pre[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]  # type: ignore[index]
    assert once["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]  # type: ignore[index]
    assert set(once["hooks"]) == {
        "PreToolUse",
        "Stop",
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "SessionEnd",
        "PermissionRequest",
        "Notification",
    }
    assert once["model"] == "opus"


def test_hooks_are_http_but_session_start_with_matchers() -> None:
    """SessionStart is the one command hook; the other events post to the daemon's address,
    PreToolUse only for the file-writing tools, PostToolUse for every tool; no Stop hook."""
    hooks = with_hooks({}, "/opt/bin/agentcoord hook", ADDR)["hooks"]
    assert hooks["SessionStart"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": "/opt/bin/agentcoord hook session-start",
                    "timeout": 10,
                }
            ]
        }
    ]
    assert "Stop" not in hooks
    for event, sub in (
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreToolUse", "pre-tool-use"),
        ("PostToolUse", "post-tool-use"),
        ("SessionEnd", "session-end"),
        ("PermissionRequest", "permission-request"),
        ("Notification", "notification"),
    ):
        [group] = hooks[event]
        assert group["hooks"] == [
            {
                "type": "http",
                "url": f"http://{ADDR}/hooks/{sub}",
                "headers": {HOOK_HEADER: "1"},
                # The daemon may hold a dialog for the human (docs/approvals.md).
                "timeout": 600 if event == "PermissionRequest" else 5,
            }
        ], event
    assert hooks["PreToolUse"][0]["matcher"] == "Write|Edit|MultiEdit|NotebookEdit|Bash"
    assert "matcher" not in hooks["PostToolUse"][0]
    assert "matcher" not in hooks["PermissionRequest"][0]  # standing approvals: every tool
    assert http_hook_addrs({"hooks": hooks}) == {ADDR}


def _old_setup(command: str) -> dict[str, object]:
    """What setup wrote before the http hooks: a command hook on every event, Stop too."""
    subs = {
        "SessionStart": "session-start",
        "UserPromptSubmit": "user-prompt-submit",
        "PostToolUse": "post-tool-use",
        "PreToolUse": "pre-tool-use",
        "Stop": "stop",
        "SessionEnd": "session-end",
    }
    return {
        event: [{"hooks": [{"type": "command", "command": f"{command} {sub}", "timeout": 10}]}]
        for event, sub in subs.items()
    }


def test_upgrade_replaces_the_old_command_hooks_and_remove_takes_both() -> None:
    """Settings holding the old command hooks (Stop included) get the new layout with none of
    the old left; removing either layout gives the user's settings back."""
    old = json.loads(json.dumps(USER_SETTINGS))
    for event, groups in _old_setup("/usr/bin/agentcoord hook").items():
        old["hooks"].setdefault(event, []).extend(groups)
    new = with_hooks(old, "/usr/bin/agentcoord hook", ADDR)
    assert new == with_hooks(USER_SETTINGS, "/usr/bin/agentcoord hook", ADDR)
    commands = [
        h.get("command") for groups in new["hooks"].values() for g in groups for h in g["hooks"]
    ]
    assert "/usr/bin/agentcoord hook stop" not in commands
    assert "/usr/bin/agentcoord hook pre-tool-use" not in commands
    assert without_hooks(old) == USER_SETTINGS
    assert without_hooks(new) == USER_SETTINGS


def test_a_users_own_loopback_http_hook_is_not_taken_for_ours() -> None:
    """A user's http hook on a loopback /hooks/ path without our header is kept by setup and
    by removal, and is not one of our addresses."""
    theirs = {"type": "http", "url": "http://127.0.0.1:8080/hooks/pre-tool-use", "timeout": 30}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}]}}
    assert without_hooks(with_hooks(settings, "agentcoord hook", ADDR)) == settings
    assert http_hook_addrs(settings) == set()


def test_hook_address_reads_the_running_daemons_address_for_user_scope(tmp_path: Path) -> None:
    """User scope takes the running daemon's http.addr (as clients read it), else the
    configured address; project scope always the configured one, the default for `:0`."""
    cfg = Config(state_dir=tmp_path / "s", runtime_dir=tmp_path / "r", http_addr="127.0.0.1:7500")
    assert hook_address(cfg) == "127.0.0.1:7500"
    cfg.runtime_dir.mkdir()
    cfg.http_addr_file.write_text("127.0.0.1:40123\n")
    assert hook_address(cfg) == "127.0.0.1:40123"
    assert hook_address(cfg, project=True) == "127.0.0.1:7500"
    anyport = Config(state_dir=cfg.state_dir, runtime_dir=tmp_path / "none", http_addr=":0")
    assert hook_address(anyport, project=True) == "127.0.0.1:7420"


def test_remove_restores_exactly() -> None:
    """Removing our hooks gives back the user's settings unchanged."""
    assert (
        without_hooks(with_hooks(USER_SETTINGS, "/usr/local/bin/agentcoord hook", ADDR))
        == USER_SETTINGS
    )
    assert without_hooks(with_hooks({}, "agentcoord hook", ADDR)) == {}


def test_setup_and_remove_on_files(tmp_path: Path) -> None:
    """setup adds agent-coord to ~/.claude.json and hooks to settings.json; remove undoes it."""
    home, claude_dir = tmp_path, tmp_path / ".claude"
    claude_dir.mkdir()
    (home / ".claude.json").write_text(json.dumps(USER_CLAUDE_JSON))
    (claude_dir / "settings.json").write_text(json.dumps(USER_SETTINGS))
    first = setup_claude(home, claude_dir, "/opt/bin/agentcoord", http_addr=ADDR)
    assert len(first.changed) == 2
    config = json.loads((home / ".claude.json").read_text())
    assert config["mcpServers"]["agent-coord"] == {
        "type": "stdio",
        "command": "/opt/bin/agentcoord",
        "args": ["mcp"],
    }
    assert config["mcpServers"]["github"] == USER_CLAUDE_JSON["mcpServers"]["github"]  # type: ignore[index]
    assert config["numStartups"] == 12
    second = setup_claude(home, claude_dir, "/opt/bin/agentcoord", http_addr=ADDR)
    assert second.changed == []
    remove_claude(home, claude_dir)
    assert json.loads((home / ".claude.json").read_text()) == USER_CLAUDE_JSON
    assert json.loads((claude_dir / "settings.json").read_text()) == USER_SETTINGS


def test_project_scope_writes_mcp_json(tmp_path: Path) -> None:
    """--project writes .mcp.json and .claude/settings.json in the project."""
    home = tmp_path / "home"
    setup_claude(home, home / ".claude", "agentcoord", tmp_path / "p", http_addr=ADDR)
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


def test_session_start_without_daemon_says_coordination_is_off(tmp_path: Path) -> None:
    """With no daemon the SessionStart hook exits 0 and tells the user (systemMessage) and the
    model (additional context) that coordination is off and how to start the daemon."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=dict(os.environ, AGENTCOORD_RUNTIME_DIR=str(tmp_path / "none")),
        input='{"hook_event_name":"SessionStart","cwd":"/x"}',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    told = json.loads(out.stdout)
    assert "daemon is not running" in told["systemMessage"]
    assert "agentcoord serve" in told["systemMessage"]
    spec = told["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    assert spec["additionalContext"] == told["systemMessage"]


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
    report = setup_claude(home, claude_dir, "agentcoord", state_dir=state, http_addr=ADDR)
    assert report.denied == state_dir_rules(state)
    deny = json.loads(settings_file.read_text())["permissions"]["deny"]
    assert deny == ["Bash(git push *)", *state_dir_rules(state)]
    assert missing_rules(settings_file, state) == []
    again = setup_claude(home, claude_dir, "agentcoord", state_dir=state, http_addr=ADDR)
    assert again.changed == []
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
    # setup created the file (the config dir was empty), so removing deletes it
    assert not (tmp_path / ".claude" / "settings.json").exists()


def _setup_env(root: Path, **extra: str) -> dict[str, str]:
    """A fresh HOME (Claude Code's config dir inside it), state dir and XDG config in ``root``."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }
    env.update(extra)
    return env


def _setup(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a dir), git's own dir aside."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
        if ".git" not in p.relative_to(root).parts
    }


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout


def test_project_setup_writes_commands_that_work_on_a_teammates_machine(tmp_path: Path) -> None:
    """--project writes `${AGENTCOORD_BIN:-agentcoord}` (PATH or the variable) into .mcp.json
    and the SessionStart hook, the configured (default) address into the http hooks, and a
    `~/` deny rule for a state dir in HOME: no path of this machine."""
    env = _setup_env(tmp_path)
    project = tmp_path / "repo"
    project.mkdir()
    _setup(env, project, "--project")
    mcp_text = (project / ".mcp.json").read_text()
    settings_text = (project / ".claude" / "settings.json").read_text()
    server = json.loads(mcp_text)["mcpServers"]["agent-coord"]
    assert server == {"type": "stdio", "command": "${AGENTCOORD_BIN:-agentcoord}", "args": ["mcp"]}
    settings = json.loads(settings_text)
    hooks = [h for groups in settings["hooks"].values() for g in groups for h in g["hooks"]]
    commands = [h["command"] for h in hooks if h["type"] == "command"]
    assert commands == ["${AGENTCOORD_BIN:-agentcoord} hook session-start"]
    urls = [h["url"] for h in hooks if h["type"] == "http"]
    assert len(urls) == 6
    assert all(u.startswith("http://127.0.0.1:7420/hooks/") for u in urls), urls
    assert settings["permissions"]["deny"] == [
        "Read(~/.local/state/agentcoord/**)",
        "Edit(~/.local/state/agentcoord/**)",
    ]
    for text in (mcp_text, settings_text):
        assert str(tmp_path) not in text
        assert sys.prefix not in text
    # Twice is once; the user scope still names this install's own script.
    again = _setup(env, project, "--project")
    assert "updated" not in again.stdout


def test_project_remove_restores_the_repository_exactly(tmp_path: Path) -> None:
    """In a git repository with its own .claude/settings.json (odd formatting, no newline at
    the end) and no .mcp.json, setup then --remove leaves `git status` clean: the created
    file deleted, the edited one byte for byte as it was."""
    env = _setup_env(tmp_path)
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    own = b'{"model":"sonnet",\n\t"permissions": {"allow": ["Bash(make)"]}}'
    (repo / ".claude" / "settings.json").write_bytes(own)
    (repo / "README").write_text("hi\n")
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    before = _tree(repo)
    _setup(env, repo, "--project")
    assert set(_git(repo, "status", "--porcelain").split()) == {
        "M",
        "??",
        ".claude/settings.json",
        ".mcp.json",
    }
    gone = _setup(env, repo, "--project", "--remove")
    assert f"removed {repo / '.mcp.json'}" in gone.stdout
    assert _git(repo, "status", "--porcelain", "--ignored") == ""
    assert _tree(repo) == before
    assert (repo / ".claude" / "settings.json").read_bytes() == own


def test_project_remove_deletes_the_dirs_it_created(tmp_path: Path) -> None:
    """A project with no .claude dir: --remove deletes .mcp.json, settings.json and .claude."""
    env = _setup_env(tmp_path)
    project = tmp_path / "empty-project"
    project.mkdir()
    _setup(env, project, "--project")
    assert (project / ".claude" / "settings.json").is_file()
    _setup(env, project, "--project", "--remove")
    assert _tree(project) == {}


def test_remove_from_an_empty_home_leaves_nothing(tmp_path: Path) -> None:
    """User scope from an empty HOME: --remove leaves no `{"mcpServers": {}}` ~/.claude.json,
    no `{}` settings.json and no ~/.claude dir; only the state dir it never touched."""
    env = _setup_env(tmp_path)
    home = Path(env["HOME"])
    _setup(env, home)
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["agent-coord"]
    _setup(env, home, "--remove")
    left = [p for p in _tree(home) if not p.startswith(".local")]
    assert left == []


def test_remove_keeps_what_the_user_changed_since(tmp_path: Path) -> None:
    """A settings file edited after setup (a new key) keeps that edit on --remove; only our
    entries go, and the record is dropped."""
    env = _setup_env(tmp_path)
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"model": "opus"}')
    _setup(env, project, "--project")
    path = project / ".claude" / "settings.json"
    edited = json.loads(path.read_text())
    edited["env"] = {"FOO": "1"}
    path.write_text(json.dumps(edited))
    _setup(env, project, "--project", "--remove")
    assert json.loads(path.read_text()) == {"model": "opus", "env": {"FOO": "1"}}
    state = Path(env["HOME"]) / ".local" / "state" / "agentcoord" / "claude-setup"
    assert list(state.iterdir()) == []


def test_doctor_hooks_check_reads_the_kind_and_the_address(tmp_path: Path) -> None:
    """doctor's hooks check: missing hooks fail; the old command hooks pass with a note to
    set up again; http hooks fail when they post where the running daemon does not serve
    (its http.addr), and pass when they post there or no daemon says otherwise."""
    from agentcoord.cli.doctor import _hooks

    cfg = Config(state_dir=tmp_path / "s", runtime_dir=tmp_path / "r", claude_dir=tmp_path / "c")
    cfg.claude_dir.mkdir()
    settings = cfg.claude_dir / "settings.json"
    assert _hooks(cfg, None).ok is False
    settings.write_text(json.dumps({"hooks": _old_setup("agentcoord hook")}))
    old = _hooks(cfg, None)
    assert (old.ok, old.info, old.fix) == (True, True, "agentcoord setup claude")
    settings.write_text(json.dumps(with_hooks({}, "agentcoord hook", ADDR)))
    assert _hooks(cfg, None).ok is True  # no daemon running: nothing to compare with
    cfg.runtime_dir.mkdir()
    cfg.http_addr_file.write_text("127.0.0.1:40999\n")
    moved = _hooks(cfg, None)
    assert moved.ok is False
    assert ADDR in moved.detail
    assert "127.0.0.1:40999" in moved.detail
    assert _hooks(cfg, {"http_addr": ADDR}).ok is True


def test_session_start_says_when_the_hooks_cannot_reach_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the daemon's http.addr hidden (a runner's sandbox masks it) and the hooks' address
    refusing connections, the SessionStart text says the hooks cannot reach the daemon; with
    the address listening, it says nothing."""
    from agentcoord.claude.hookclient import _moved_text

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        live = f"127.0.0.1:{listening.getsockname()[1]}"
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
            dead = f"127.0.0.1:{closed.getsockname()[1]}"
            config = tmp_path / "claude"
            config.mkdir()
            monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
            monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
            hidden = tmp_path / "masked-runtime"
            settings = config / "settings.json"
            settings.write_text(json.dumps(with_hooks({}, "agentcoord hook", dead)))
            text = _moved_text(hidden, {})
            assert f"cannot reach the daemon at {dead}" in text
            settings.write_text(json.dumps(with_hooks({}, "agentcoord hook", live)))
            assert _moved_text(hidden, {}) == ""
