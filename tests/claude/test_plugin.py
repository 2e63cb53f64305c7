"""The real Claude Code installs, runs and removes the agentcoord plugin that
``agentcoord setup claude --plugin`` generates (docs/plugin.md "Checking it")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentcoord.claude.plugin import MARKETPLACE_NAME, PLUGIN_ID, skill_text, write_plugin
from tests.claude.conftest import Claude, claude_env
from tests.claude.model_api import ModelAPI, Text, ToolUse, tool_results
from tests.conftest import Daemon
from tests.test_claude_plugin import skill_calls
from tests.tools.session_helpers import holding

# Claude Code names a plugin's server plugin:<plugin>:<server>, its tools
# mcp__plugin_<plugin>_<server>__<tool> (seen with 2.1.328).
LISTED = "plugin:agentcoord:agent-coord:"
TOOL_PREFIX = "mcp__plugin_agentcoord_agent-coord__"

# A user's own settings, in a layout json.dump would not give back: removal restores bytes.
USER_SETTINGS = '{\n    "model": "opus",\n    "permissions": {"allow": ["Bash(git status)"]}\n}\n'


def _env(d: Daemon, claude: Path, tmp: Path) -> dict[str, str]:
    """Claude Code's offline environment with the binary on PATH (setup runs `claude`) and the
    data dir, where the marketplace is generated, inside the test's temp dir."""
    env = claude_env(d, tmp / "home")
    env["PATH"] = os.pathsep.join([str(claude.parent), env["PATH"]])
    env["XDG_DATA_HOME"] = str(tmp / "data")
    return env


def _agentcoord(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude", "--plugin", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _claude(claude: Path, env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [str(claude), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _ours(claude: Path, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    listed = json.loads(_claude(claude, env, cwd, "plugin", "list", "--json"))
    return [p for p in listed if p["id"] == PLUGIN_ID]


def _snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` (a missing root holds none), by path."""
    return {
        str(p): p.read_bytes()
        for root in roots
        if root.exists()
        for p in root.rglob("*")
        if p.is_file()
    }


def test_validate_passes_on_the_generated_marketplace(real_claude: Path, tmp_path: Path) -> None:
    """`claude plugin validate` accepts the generated marketplace and plugin, and reports the
    plugin's server, its hooks and the coordination skill."""
    root = write_plugin(tmp_path / "mkt", "/opt/venv/bin/agentcoord", "127.0.0.1:7421")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "c")}
    market = _claude(real_claude, env, tmp_path, "plugin", "validate", str(root))
    assert "Validation passed" in market, market
    plugin = _claude(real_claude, env, tmp_path, "plugin", "validate", str(root / "agentcoord"))
    assert "Validation passed" in plugin, plugin
    assert "mcpServers: agent-coord stdio /opt/venv/bin/agentcoord" in plugin, plugin
    assert "skills: agentcoord:coordination" in plugin, plugin
    assert "hooks: SessionStart command" in plugin, plugin


def test_install_enables_connects_and_remove_restores_the_config(
    daemon: Daemon, real_claude: Path, tmp_path: Path
) -> None:
    """After `setup claude --plugin` (twice: idempotent) the real `claude plugin list` shows
    the plugin enabled at user scope, `claude mcp list` its agent-coord server connected to the
    daemon and `claude plugin details` the skill; `--remove` uninstalls it, drops the
    marketplace, and every file in Claude Code's config dir and the data dir is byte for
    byte what it was before."""
    env = _env(daemon, real_claude, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    config = Path(env["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(USER_SETTINGS)
    # Claude Code's own first-run state (.claude.json) comes from any run: let it be there.
    _claude(real_claude, env, project, "mcp", "list")
    data = tmp_path / "data"
    before = _snapshot(config, data, project)

    _agentcoord(env, project)
    out = _agentcoord(env, project)
    assert "already installed" in out, out
    [ours] = _ours(real_claude, env, project)
    assert ours["enabled"] is True, ours
    assert ours["scope"] == "user", ours
    assert ours["mcpServers"]["agent-coord"]["args"] == ["mcp"], ours
    listed = _claude(real_claude, env, project, "mcp", "list")
    line = [ln for ln in listed.splitlines() if ln.startswith(LISTED)]
    assert line, listed
    assert "✔ Connected" in line[0], listed
    details = _claude(real_claude, env, project, "plugin", "details", PLUGIN_ID)
    assert "Skills (1)  coordination" in details, details
    assert "MCP servers (1)  agent-coord" in details, details
    settings = json.loads((config / "settings.json").read_text())
    assert settings["enabledPlugins"] == {PLUGIN_ID: True}
    assert settings["model"] == "opus"

    out = _agentcoord(env, project, "--remove")
    assert f"restored {config / 'settings.json'}" in out, out
    assert _ours(real_claude, env, project) == []
    markets = json.loads(
        _claude(real_claude, env, project, "plugin", "marketplace", "list", "--json")
    )
    assert MARKETPLACE_NAME not in [m["name"] for m in markets]
    after = _snapshot(config, data, project)
    # Claude Code's own runs may add logs and caches outside the config files; none is ours.
    assert {k: v for k, v in after.items() if k in before} == before
    assert [k for k in after if k not in before and "plugin" in k.lower()] == []
    assert (config / "settings.json").read_text() == USER_SETTINGS


def test_project_scope_enables_it_there_and_remove_gives_the_project_back(
    daemon: Daemon, real_claude: Path, tmp_path: Path
) -> None:
    """`--project` enables the plugin in the project's .claude/settings.json (the marketplace,
    a path on this machine, stays in user settings); `--project --remove` leaves the project
    dir and Claude Code's config dir as they were."""
    env = _env(daemon, real_claude, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    config = Path(env["CLAUDE_CONFIG_DIR"])
    # Claude Code's own first-run state (.claude.json) comes from any run: let it be there.
    _claude(real_claude, env, project, "mcp", "list")
    before = _snapshot(config, project)

    _agentcoord(env, project, "--project")
    [ours] = _ours(real_claude, env, project)
    assert ours["scope"] == "project", ours
    assert ours["enabled"] is True, ours
    shared = json.loads((project / ".claude" / "settings.json").read_text())
    assert shared == {"enabledPlugins": {PLUGIN_ID: True}}
    assert str(tmp_path) not in (project / ".claude" / "settings.json").read_text()

    _agentcoord(env, project, "--project", "--remove")
    assert _ours(real_claude, env, project) == []
    assert not (project / ".claude").exists()
    after = _snapshot(config, project)
    assert {k: v for k, v in after.items() if k in before} == before
    assert [k for k in after if k not in before and "plugin" in k.lower()] == []


def test_a_session_lists_the_skill_loads_it_and_gets_every_tool_it_names(
    daemon: Daemon, real_claude: Path, model_api: ModelAPI, tmp_path: Path
) -> None:
    """In a real `claude -p` session with the plugin installed, the model is told of the
    agentcoord:coordination skill with its description, the plugin's SessionStart hook names
    the session's agent, every tool call the skill shows is an offered agent-coord tool taking
    those arguments, the tools not offered to models are not, and invoking the skill gives the
    model its text."""
    env = _env(daemon, real_claude, tmp_path)
    env.update(ANTHROPIC_BASE_URL=model_api.url, ENABLE_TOOL_SEARCH="false")
    project = tmp_path / "project"
    project.mkdir()
    _agentcoord(env, project)
    model_api.script(
        ToolUse("Skill", {"skill": "agentcoord:coordination"}),
        lambda r: Text("read: " + tool_results(r)[-1]["text"][:40]),
    )
    run = Claude(real_claude, env, project, model_api).run("coordinate")
    run.check()
    first = run.requests[0]
    sent = json.dumps(first.body)
    description = skill_text("coordination").split("description: ", 1)[1].split("\n", 1)[0]
    assert f"agentcoord:coordination: {description}" in sent, sent[:2000]
    assert "SessionStart hook additional context: agentcoord: you are agent" in sent
    for name, args in skill_calls(skill_text("coordination")):
        schema = first.tool(TOOL_PREFIX + name)["input_schema"]
        assert args <= set(schema.get("properties", {})), (name, args, schema)
    # The model is offered an agent's listing: escalate with its options, none of the tools
    # kept for programs and the human (docs/claude-code.md "Results for the model").
    offered = {n.removeprefix(TOOL_PREFIX) for n in first.tool_names if n.startswith(TOOL_PREFIX)}
    assert "escalate" in offered, offered
    kept_back = {"request_approval", "ask_choice", "request_input", "nats_credentials"}
    assert offered.isdisjoint(kept_back | {"audit", "list_channels", "answer_prompt"}), offered
    # The Skill tool's result says it launched; the skill's text follows it in the messages.
    assert "agentcoord:coordination" in tool_results(run.requests[-1])[-1]["text"]
    loaded = json.dumps(run.requests[-1].body["messages"][1:])
    assert "Lock protocol: claim before you modify" in loaded, loaded[:3000]
    assert "Lock protocol: claim before you modify" not in json.dumps(first.body["messages"])


def test_the_plugins_hook_guards_writes_and_its_server_answers(
    daemon: Daemon, real_claude: Path, model_api: ModelAPI, claude_bin: Path, tmp_path: Path
) -> None:
    """With only the plugin installed (no `setup claude`), its whoami tool answers as the
    session's agent, and its PreToolUse http hook denies a Write of a file another session
    holds a write claim on, naming the holder; the file is unchanged."""
    env = _env(daemon, real_claude, tmp_path)
    env.update(ANTHROPIC_BASE_URL=model_api.url, ENABLE_TOOL_SEARCH="false")
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    notes = project / "notes.txt"
    notes.write_text("original\n")
    _agentcoord(env, project)
    claim = {"resource_key": str(notes), "purpose": "rewrite"}
    with holding(daemon, claude_bin, [("claim", claim)]) as held:
        assert not held[0]["isError"], held
        holder = held[0]["structuredContent"]["claim"]["agent"]
        model_api.script(
            ToolUse(TOOL_PREFIX + "whoami", {}),
            ToolUse("Write", {"file_path": str(notes), "content": "overwritten\n"}),
            Text("done"),
        )
        allow = TOOL_PREFIX.rstrip("_")  # the server's every tool
        run = Claude(real_claude, env, project, model_api).run("rewrite", "--allowedTools", allow)
    run.check()
    who, write = tool_results(run.requests[-1])
    assert not who.get("is_error"), who
    me = json.loads(who["text"])
    assert me["kind"] == "session", me
    assert me["session"] == run.result["session_id"], me
    assert write.get("is_error"), write
    assert f"claimed for writing by {holder}" in write["text"], write
    assert notes.read_text() == "original\n"
