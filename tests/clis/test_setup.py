"""``agentcoord setup codex|gemini|opencode [--project] [--remove]``: the MCP server is
registered in each CLI's own file, the user's content kept, running it twice changes nothing,
and ``--remove`` gives the file back byte for byte (or deletes what it created); ``doctor``
checks each installed CLI (docs/other-clis.md "Setup")."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import make_env

# A user's own files, with what a re-dump would lose: comments, key order, odd spacing.
ORIGINAL = {
    "codex": (
        '# my codex\nmodel = "o5"   # fast\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
        "\n[features]\nweb_search = true\n"
    ),
    "gemini": '{\n    "theme": "Dracula",\n  "mcpServers": {"docs": {"command": "docs-mcp"}}\n}',
    "opencode": '{"$schema": "https://opencode.ai/config.json",\n "theme": "tokyonight"}\n',
}


def _file(cli: str, home: Path, project: Path | None = None) -> Path:
    base = project if project is not None else home
    return {
        "codex": base / ".codex" / "config.toml",
        "gemini": base / ".gemini" / "settings.json",
        "opencode": (project / "opencode.json")
        if project
        else home / ".config/opencode/opencode.json",
    }[cli]


def _server(cli: str, path: Path) -> object:
    """The agent-coord entry the CLI would read from ``path``."""
    if cli == "codex":
        return tomllib.loads(path.read_text())["mcp_servers"]["agent-coord"]
    table = "mcpServers" if cli == "gemini" else "mcp"
    return json.loads(path.read_text())[table]["agent-coord"]


def _setup(tmp_path: Path, cli: str, *flags: str, cwd: Path | None = None) -> str:
    env = make_env(tmp_path, HOME=str(tmp_path / "home"))
    env.pop("XDG_CONFIG_HOME")  # OpenCode's file then lives under ~/.config
    env.pop("CODEX_HOME", None)
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", cli, *flags],
        env=env,
        cwd=cwd or tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("cli", ["codex", "gemini", "opencode"])
def test_setup_then_remove_gives_the_users_file_back_byte_for_byte(
    tmp_path: Path, cli: str
) -> None:
    """Setup adds agent-coord (running `agentcoord mcp`) and keeps the user's entries; a second
    setup changes nothing; --remove restores the original bytes."""
    path = _file(cli, tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_text(ORIGINAL[cli])
    assert _setup(tmp_path, cli).startswith("updated ")
    server = _server(cli, path)
    command = server["command"]  # type: ignore[index]
    assert command in (["agentcoord", "mcp"],) or "agentcoord" in str(command), server
    text = path.read_text()
    assert "docs-mcp" in text or "tokyonight" in text
    assert _setup(tmp_path, cli).startswith("unchanged ")
    assert _setup(tmp_path, cli, "--remove").startswith("restored ")
    assert path.read_text() == ORIGINAL[cli]


@pytest.mark.parametrize("cli", ["codex", "gemini", "opencode"])
def test_a_file_setup_created_is_deleted_with_its_dirs(tmp_path: Path, cli: str) -> None:
    """With no file before, setup creates it (and its dir); --remove deletes both."""
    path = _file(cli, tmp_path / "home")
    _setup(tmp_path, cli)
    assert path.exists()
    assert _setup(tmp_path, cli, "--remove").startswith("deleted ")
    assert not path.exists()
    assert not path.parent.exists()


@pytest.mark.parametrize("cli", ["codex", "gemini", "opencode"])
def test_a_file_edited_since_keeps_the_edit_and_loses_only_ours(tmp_path: Path, cli: str) -> None:
    """A user edit after setup survives --remove; only agent-coord goes."""
    path = _file(cli, tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_text(ORIGINAL[cli])
    _setup(tmp_path, cli)
    if cli == "codex":
        path.write_text(path.read_text() + '\n[profiles.work]\nmodel = "o5"\n')
    else:
        data = json.loads(path.read_text())
        data["editor"] = "vim"
        path.write_text(json.dumps(data))
    assert _setup(tmp_path, cli, "--remove").startswith("stripped ")
    assert "agent-coord" not in path.read_text()
    assert "vim" in path.read_text() or "profiles.work" in path.read_text()


@pytest.mark.parametrize("cli", ["codex", "gemini", "opencode"])
def test_project_scope_writes_the_projects_file_with_the_path_free_command(
    tmp_path: Path, cli: str
) -> None:
    """--project writes the file in the current directory, running `agentcoord` from PATH (a
    committed file names no machine's path); --remove --project takes it back out."""
    project = tmp_path / "proj"
    project.mkdir()
    _setup(tmp_path, cli, "--project", cwd=project)
    path = _file(cli, tmp_path / "home", project)
    server = _server(cli, path)
    assert server["command"] in ("agentcoord", ["agentcoord", "mcp"]), server  # type: ignore[index]
    _setup(tmp_path, cli, "--project", "--remove", cwd=project)
    assert not path.exists()


def test_codex_setup_will_not_define_the_users_own_server_twice(tmp_path: Path) -> None:
    """A [mcp_servers.agent-coord] the user wrote is refused with a clear error, file kept."""
    path = _file("codex", tmp_path / "home")
    path.parent.mkdir(parents=True)
    mine = '[mcp_servers.agent-coord]\ncommand = "/opt/ac/bin/agentcoord"\nargs = ["mcp"]\n'
    path.write_text(mine)
    env = make_env(tmp_path, HOME=str(tmp_path / "home"))
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "codex"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "already defines [mcp_servers.agent-coord]" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert path.read_text() == mine


def test_bad_json_is_refused_untouched(tmp_path: Path) -> None:
    """A settings.json that is not JSON is named in a clear error and left as it was."""
    path = _file("gemini", tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    env = make_env(tmp_path, HOME=str(tmp_path / "home"))
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "gemini"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "is not valid JSON" in out.stderr, out.stderr
    assert path.read_text() == "{not json"


def test_doctor_checks_each_installed_cli(tmp_path: Path) -> None:
    """With a `gemini` on PATH and nothing registered, doctor fails its line naming the fix;
    after setup it passes, and fails again when the hooks are gone; a CLI not on PATH is a
    note, not a failure."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gemini").write_text("#!/bin/sh\n")
    (bin_dir / "gemini").chmod(0o755)
    env = make_env(tmp_path, HOME=str(tmp_path / "home"), PATH=f"{bin_dir}:/usr/bin:/bin")

    def checks() -> dict[str, dict[str, object]]:
        out = subprocess.run(
            [sys.executable, "-m", "agentcoord", "doctor", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return {c["name"]: c for c in json.loads(out.stdout)}

    before = checks()
    assert before["gemini"]["ok"] is False
    assert before["gemini"]["fix"] == "agentcoord setup gemini"
    assert (before["codex"]["ok"], before["codex"]["info"]) == (True, True)
    _setup(tmp_path, "gemini")
    assert checks()["gemini"]["ok"] is True
    settings = _file("gemini", tmp_path / "home")
    data = json.loads(settings.read_text())
    del data["hooks"]
    settings.write_text(json.dumps(data))
    hookless = checks()["gemini"]
    assert (hookless["ok"], hookless["fix"]) == (False, "agentcoord setup gemini")
    assert "hooks missing" in str(hookless["detail"])


def test_gemini_hooks_join_the_users_own_and_leave_with_remove(tmp_path: Path) -> None:
    """Setup adds our hook group (timeouts in ms) beside the user's own BeforeTool group on each
    event; --remove takes only ours out and gives the bytes back."""
    path = _file("gemini", tmp_path / "home")
    path.parent.mkdir(parents=True)
    mine = {"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"type": "command", "command": "/usr/local/bin/audit", "timeout": 2000}]}]}}  # fmt: skip
    original = json.dumps(mine)
    path.write_text(original)
    _setup(tmp_path, "gemini")
    hooks = json.loads(path.read_text())["hooks"]
    assert set(hooks) == {
        "SessionStart",
        "BeforeAgent",
        "AfterTool",
        "BeforeTool",
        "SessionEnd",
        "AfterAgent",
        "Notification",
    }
    assert hooks["BeforeTool"][0] == mine["hooks"]["BeforeTool"][0]
    ours = hooks["BeforeTool"][1]
    assert ours["matcher"] == "write_file|replace|run_shell_command"  # writes and the shell
    assert ours["hooks"][0]["command"].endswith("agentcoord hook gemini:pre-tool-use")
    assert ours["hooks"][0]["timeout"] == 5000
    assert _setup(tmp_path, "gemini").startswith("unchanged ")
    assert _setup(tmp_path, "gemini", "--remove").startswith("restored ")
    assert path.read_text() == original


def test_each_clis_hooks_are_found_where_setup_put_them(tmp_path: Path) -> None:
    """What doctor reads: after setup, Codex's hooks, Gemini's hooks and OpenCode's plugin are
    found in the user's files; before it, none is, nor after an older setup's (no shell
    tool)."""
    from agentcoord.codex.codexsetup import hooks_installed as codex_hooks
    from agentcoord.gemini.geminisetup import hooks_installed as gemini_hooks
    from agentcoord.opencode.opencodesetup import plugin_installed

    home = tmp_path / "home"
    files = {cli: _file(cli, home) for cli in ("codex", "gemini", "opencode")}
    found = {
        "codex": lambda: codex_hooks(files["codex"]),
        "gemini": lambda: gemini_hooks(files["gemini"]),
        "opencode": lambda: plugin_installed(files["opencode"]),
    }
    assert not any(f() for f in found.values())
    for cli in found:
        _setup(tmp_path, cli)
    assert all(f() for f in found.values())
    # What an older setup wrote, with no shell tool: doctor's "setup again".
    files["codex"].write_text(
        files["codex"].read_text().replace('"apply_patch|Bash"', '"apply_patch"')
    )
    settings = json.loads(files["gemini"].read_text())
    settings["hooks"]["BeforeTool"][0]["matcher"] = "write_file|replace"
    files["gemini"].write_text(json.dumps(settings))
    plugin = files["opencode"].parent / "plugin" / "agentcoord.js"
    plugin.write_text(plugin.read_text().replace(', "bash": ["command", "workdir"]', ""))
    assert not any(f() for f in found.values())


def test_codex_setup_hooks_the_shell_tool_and_remove_gives_the_file_back(tmp_path: Path) -> None:
    """Codex's PreToolUse hook matches apply_patch and its shell tool (Bash), running our
    pre-tool-use; --remove gives the user's bytes back."""
    path = _file("codex", tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_text(ORIGINAL["codex"])
    _setup(tmp_path, "codex")
    (group,) = tomllib.loads(path.read_text())["hooks"]["PreToolUse"]
    assert group["matcher"] == "apply_patch|Bash", group
    assert group["hooks"][0]["command"].endswith("agentcoord hook pre-tool-use"), group
    assert _setup(tmp_path, "codex", "--remove").startswith("restored ")
    assert path.read_text() == ORIGINAL["codex"]


def test_the_opencode_plugin_sends_bash_calls_and_leaves_with_remove(tmp_path: Path) -> None:
    """The plugin setup writes hands the daemon write, edit, patch and bash calls, each with
    only the fields the guards read (bash: command and workdir); --remove deletes it."""
    plugin = tmp_path / "home" / ".config" / "opencode" / "plugin" / "agentcoord.js"
    _setup(tmp_path, "opencode")
    text = plugin.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("const TOOLS = "))
    tools = json.loads(line.removeprefix("const TOOLS = ").rstrip(";"))
    assert tools == {
        "write": ["filePath"],
        "edit": ["filePath"],
        "patch": ["patchText"],
        "bash": ["command", "workdir"],
    }
    assert "__TOOLS__" not in text
    assert "__AGENTCOORD__" not in text
    _setup(tmp_path, "opencode", "--remove")
    assert not plugin.exists()


def test_state_hooks_join_the_users_own_and_leave_with_remove(tmp_path: Path) -> None:
    """Codex's Stop and PermissionRequest hooks and Gemini's AfterAgent and Notification hooks
    (the session's state: docs/activity.md "Other CLIs") go in beside the user's own hooks on
    the same events, and --remove gives both files back byte for byte."""
    home = tmp_path / "home"
    codex, gemini = _file("codex", home), _file("gemini", home)
    codex.parent.mkdir(parents=True)
    gemini.parent.mkdir(parents=True)
    codex_original = (
        '# mine\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
        'command = "/usr/local/bin/chime"   # ding\n'
    )
    gemini_original = json.dumps(
        {"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "/bin/chime"}]}]}}
    )
    codex.write_text(codex_original)
    gemini.write_text(gemini_original)
    _setup(tmp_path, "codex")
    _setup(tmp_path, "gemini")
    hooks = tomllib.loads(codex.read_text())["hooks"]
    stop = [h["command"] for g in hooks["Stop"] for h in g["hooks"]]
    assert stop[0] == "/usr/local/bin/chime", stop
    assert stop[1].endswith("agentcoord hook stop"), stop
    [asked] = [h["command"] for g in hooks["PermissionRequest"] for h in g["hooks"]]
    assert asked.endswith("agentcoord hook permission-request")
    settings = json.loads(gemini.read_text())["hooks"]
    said = [h["command"] for g in settings["Notification"] for h in g["hooks"]]
    assert said[0] == "/bin/chime", said
    assert said[1].endswith("agentcoord hook gemini:notification"), said
    [ended] = [h for g in settings["AfterAgent"] for h in g["hooks"]]
    assert ended["command"].endswith("agentcoord hook gemini:stop")
    assert ended["timeout"] == 5000  # Gemini's unit is milliseconds
    assert _setup(tmp_path, "codex", "--remove").startswith("restored ")
    assert _setup(tmp_path, "gemini", "--remove").startswith("restored ")
    assert codex.read_bytes() == codex_original.encode()
    assert gemini.read_bytes() == gemini_original.encode()
