"""The generated Claude Code plugin: its manifests parse and say what ``setup claude`` registers,
its skill names only tools (and arguments) the daemon has, and removal's record decides
correctly when a file is given back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest

from agentcoord import __version__
from agentcoord.claude.configure import HOOKS, user_config_file, with_hooks, with_server
from agentcoord.claude.plugin import (
    MARKETPLACE_NAME,
    PLUGIN_ID,
    PLUGIN_NAME,
    SKILLS,
    install_plugin,
    remove_plugin,
    set_up_directly,
    skill_text,
    write_plugin,
)
from agentcoord.claude.plugin._install import bare
from agentcoord.daemon.services import Services
from agentcoord.daemon.toolset import families
from agentcoord.errors import ConfigError
from agentcoord.tools.base import Tool, tools_of

pytestmark = pytest.mark.unit

COMMAND = "/opt/venv/bin/agentcoord"
ADDR = "127.0.0.1:7421"


class _Unused:
    """Stands in for a service while only the tools' names and schemas are read: building
    the tools may look an attribute up, calling anything is a failure."""

    def __getattr__(self, name: str) -> Any:
        return _Unused()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a tool module used its service while being built")


def _tools() -> dict[str, Tool]:
    """Every tool the daemon registers (daemon/toolset.py), built without a daemon."""
    u: Any = _Unused()
    return {t.name: t for family in families(cast(Services, u)) for t in tools_of(family)}


# A call as the skill writes it: `name(arg=..., ...)` in backticks.
_CALL = re.compile(r"`([a-z_]+)\(([^`]*)\)`", re.S)
_ARG = re.compile(r"(?:^|,)\s*([a-z_]+)=")


def skill_calls(text: str) -> list[tuple[str, set[str]]]:
    """The tool calls a skill text shows, each with the argument names it passes."""
    out = []
    for name, args in _CALL.findall(text):
        flat = re.sub(r"\[[^\]]*\]|\"[^\"]*\"", "", args)  # lists and strings hold no args
        out.append((name, set(_ARG.findall(flat))))
    return out


def _frontmatter(text: str) -> dict[str, str]:
    assert text.startswith("---\n"), "SKILL.md starts with YAML frontmatter"
    head = text[4 : text.index("\n---\n", 4)]
    return dict(line.split(": ", 1) for line in head.splitlines())


def test_written_manifests_parse_and_carry_what_setup_registers(tmp_path: Path) -> None:
    """write_plugin writes a marketplace listing the plugin beside it, a plugin.json with the
    package's name and version and agent-coord as with_server registers it, and hooks.json
    with exactly with_hooks' hooks: every event setup installs."""
    root = write_plugin(tmp_path / "mkt", COMMAND, ADDR)
    market = json.loads((root / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == MARKETPLACE_NAME
    assert market["owner"]["name"]
    [entry] = market["plugins"]
    assert f"{entry['name']}@{market['name']}" == PLUGIN_ID
    plugin_dir = (root / entry["source"]).resolve()
    manifest = json.loads((plugin_dir / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == PLUGIN_NAME == entry["name"]
    assert manifest["version"] == __version__ == entry["version"]
    assert manifest["description"]
    assert manifest["mcpServers"] == with_server({}, COMMAND)["mcpServers"]
    assert manifest["mcpServers"]["agent-coord"]["command"] == COMMAND
    hooks = json.loads((plugin_dir / "hooks" / "hooks.json").read_text())
    assert hooks["hooks"] == with_hooks({}, f"{COMMAND} hook", ADDR)["hooks"]
    assert set(hooks["hooks"]) == set(HOOKS)
    for name in SKILLS:
        assert (plugin_dir / "skills" / name / "SKILL.md").read_text() == skill_text(name)


def test_rewriting_is_idempotent_and_drops_a_stale_skill(tmp_path: Path) -> None:
    """Writing again gives the same bytes, with a new command, only the commands change, and a
    skill directory the package no longer ships is removed."""
    root = write_plugin(tmp_path / "mkt", COMMAND, ADDR)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    before = {p: p.read_bytes() for p in files}
    stale = root / PLUGIN_NAME / "skills" / "old-skill" / "SKILL.md"
    stale.parent.mkdir()
    stale.write_text("---\nname: old-skill\n---\n")
    write_plugin(root, COMMAND, ADDR)
    assert not stale.parent.exists()
    assert {p: p.read_bytes() for p in sorted(p for p in root.rglob("*") if p.is_file())} == before
    write_plugin(root, "/elsewhere/agentcoord", ADDR)
    manifest = json.loads((root / PLUGIN_NAME / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["mcpServers"]["agent-coord"]["command"] == "/elsewhere/agentcoord"
    assert "/elsewhere/agentcoord hook" in (root / PLUGIN_NAME / "hooks" / "hooks.json").read_text()


@pytest.mark.parametrize("name", SKILLS)
def test_skill_frontmatter_names_its_directory(name: str) -> None:
    """Each SKILL.md has the frontmatter Claude Code loads a skill by: a name equal to its
    directory (lowercase, hyphens) and a description within the 1,024-character limit."""
    meta = _frontmatter(skill_text(name))
    assert meta["name"] == name
    assert re.fullmatch(r"[a-z0-9-]{1,64}", name)
    assert 50 < len(meta["description"]) <= 1024


def test_skill_names_only_real_tools_with_real_arguments() -> None:
    """Every tool call the coordination skill shows is a daemon tool, and every argument it
    passes is in that tool's input schema."""
    tools = _tools()
    calls = skill_calls(skill_text("coordination"))
    assert calls
    for name, args in calls:
        assert name in tools, f"SKILL.md names {name}(), which the daemon does not have"
        props = set(tools[name].input_schema.get("properties", {}))
        assert args <= props, f"{name}() takes {sorted(props)}, SKILL.md passes {sorted(args)}"


def test_skill_teaches_the_whole_protocol() -> None:
    """The skill shows the calls of every step of the protocol (seed 003): check and claim
    before editing, focus, heartbeat and renew, release, inbox, checkpoint and handoff,
    escalation, and asking other agents; its claim example is a write claim of a file with a
    ttl, its handoff passes every section of the handoff document."""
    text = skill_text("coordination")
    calls = dict(skill_calls(text))
    wanted = {
        "check_claims",
        "claim",
        "annotate",
        "heartbeat",
        "renew",
        "release",
        "inbox",
        "checkpoint",
        "handoff",
        "escalate",
        "ask",
        "send_message",
    }
    assert wanted <= set(calls), sorted(wanted - set(calls))
    assert re.search(r'claim\(resource_key="file:[^"]+", mode="write", ttl="', text)
    assert {"current_state", "in_progress", "decisions", "next_steps"} <= calls["handoff"]


def test_skill_calls_parser_reads_arguments() -> None:
    """The call pattern reads names and top-level argument names, not words inside strings."""
    calls = skill_calls('`claim(resource_key="file:a=b", ttl="5m")` and `x(tags=["k=v"], n=1)`')
    assert calls == [("claim", {"resource_key", "ttl"}), ("x", {"tags", "n"})]


@pytest.mark.parametrize(
    ("now", "was", "same"),
    [
        # Claude Code's uninstall leaves emptied containers: the original again.
        (
            {"theme": "dark", "enabledPlugins": {}, "extraKnownMarketplaces": {}},
            {"theme": "dark"},
            True,
        ),
        (
            {"enabledPlugins": {"x@y": True}, "extraKnownMarketplaces": {}},
            {"enabledPlugins": {"x@y": True}},
            True,
        ),
        # A registry file it created: its format key and an empty map are all that is left.
        ({"version": 2, "plugins": {}}, {}, True),
        # Edited since: a new plugin enabled, a setting changed, a key the original had dropped.
        ({"enabledPlugins": {"other@m": True}}, {}, False),
        ({"theme": "light", "enabledPlugins": {}}, {"theme": "dark"}, False),
        ({"enabledPlugins": {}}, {"enabledPlugins": {}, "theme": "dark"}, False),
        # An empty container the original had stays part of the comparison.
        ({"permissions": {"allow": []}}, {"permissions": {"allow": []}}, True),
    ],
)
def test_bare_tells_leftovers_from_edits(now: Any, was: Any, same: bool) -> None:
    """Removal gives a file back only when what is left is the original plus the emptied
    containers (and a new file's format key) Claude Code leaves."""
    assert (bare(now, was) == was) is same


@pytest.mark.parametrize("step", [install_plugin, remove_plugin])
def test_without_claude_on_path_nothing_is_written(step: Any, tmp_path: Path) -> None:
    """With no `claude` on PATH, install and remove fail with a ConfigError saying how to get
    it, before writing a marketplace, a record or a setting."""
    env = {"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    with pytest.raises(ConfigError, match="no `claude` on PATH"):
        step(env, tmp_path / ".claude", tmp_path / "state")
    assert list(tmp_path.iterdir()) == []


def test_set_up_directly_reads_the_user_config(tmp_path: Path) -> None:
    """The plugin install warns of a direct setup only when the user config registers
    agent-coord itself."""
    claude_dir = tmp_path / ".claude"
    config = user_config_file(tmp_path, claude_dir)
    assert not set_up_directly(tmp_path, claude_dir)
    config.write_text(json.dumps({"mcpServers": {"github": {"command": "gh"}}}))
    assert not set_up_directly(tmp_path, claude_dir)
    config.write_text(json.dumps(with_server({}, COMMAND)))
    assert set_up_directly(tmp_path, claude_dir)
    config.write_text("not json")
    assert not set_up_directly(tmp_path, claude_dir)
