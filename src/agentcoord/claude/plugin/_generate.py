"""The Claude Code plugin and its one-plugin marketplace, generated into a directory.

Layout (code.claude.com/docs/en/plugins-reference, and the plugins of the anthropics/
claude-code repository)::

    <dest>/.claude-plugin/marketplace.json   name, owner, plugins[{name, source, ...}]
    <dest>/agentcoord/.claude-plugin/plugin.json   name, version, description, mcpServers
    <dest>/agentcoord/hooks/hooks.json       {"hooks": {<Event>: [groups]}}, found by default
    <dest>/agentcoord/skills/coordination/SKILL.md   package data, copied as is

The server and hook commands name this install's ``agentcoord`` by absolute path, so the
plugin is generated on the machine that runs it, not shipped as static files. The server and
hooks come from :mod:`agentcoord.claude.configure` (``with_server``, ``with_hooks``), so the plugin
registers exactly what ``agentcoord setup claude`` does.
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from agentcoord import __version__
from agentcoord.claude.configure import hook_address, with_hooks, with_server
from agentcoord.kernel.files import write_atomic

__all__ = [
    "MARKETPLACE_NAME",
    "PLUGIN_ID",
    "PLUGIN_NAME",
    "SKILLS",
    "agentcoord_command",
    "hooks_config",
    "marketplace_manifest",
    "plugin_manifest",
    "skill_text",
    "write_plugin",
]

PLUGIN_NAME = "agentcoord"
MARKETPLACE_NAME = "agentcoord-local"
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE_NAME}"  # what `claude plugin install` takes
SKILLS = ("coordination",)  # skills/<name>/SKILL.md in this package's data
DESCRIPTION = (
    "Coordinate the coding agents on this machine: the agent-coord MCP server (claims, focus, "
    "messages, handoffs, human prompts), its session hooks, and a skill that teaches the "
    "protocol."
)
_OWNER = {"name": "agentcoord"}


def agentcoord_command() -> str:
    """This install's own ``agentcoord`` script: a venv's bin need not be on the PATH Claude
    Code starts servers and hooks with (as ``agentcoord setup claude`` registers it)."""
    own = Path(sys.executable).parent / "agentcoord"
    if own.is_file():
        return str(own)
    return shutil.which("agentcoord") or "agentcoord"


def plugin_manifest(command: str) -> dict[str, Any]:
    """``.claude-plugin/plugin.json``: metadata and the ``agent-coord`` stdio server (pure)."""
    return {
        "name": PLUGIN_NAME,
        "version": __version__,
        "description": DESCRIPTION,
        "author": _OWNER,
        "license": "Apache-2.0",
        "keywords": ["coordination", "multi-agent", "mcp", "claims", "handoff"],
        "mcpServers": with_server({}, command)["mcpServers"],
    }


def hooks_config(command: str, http_addr: str) -> dict[str, Any]:
    """``hooks/hooks.json``: the hooks ``setup claude`` installs (a command hook runs
    ``command``, http hooks post to the daemon at ``http_addr``), in the plugin's file (pure)."""
    return {
        "description": "agentcoord: session identity, claim guard, inbox and hand-off context",
        "hooks": with_hooks({}, f"{command} hook", http_addr)["hooks"],
    }


def marketplace_manifest() -> dict[str, Any]:
    """``.claude-plugin/marketplace.json`` listing the one plugin, sourced beside it (pure)."""
    return {
        "name": MARKETPLACE_NAME,
        "description": "The agentcoord plugin of this machine's agentcoord install.",
        "owner": _OWNER,
        "plugins": [
            {
                "name": PLUGIN_NAME,
                "source": f"./{PLUGIN_NAME}",
                "description": DESCRIPTION,
                "version": __version__,
            }
        ],
    }


def skill_text(name: str) -> str:
    """A skill's ``SKILL.md`` as shipped in the package."""
    ref = resources.files(__package__ or "agentcoord.claude.plugin")
    return ref.joinpath("skills", name, "SKILL.md").read_text(encoding="utf-8")


def _write(path: Path, text: str) -> None:
    """Write atomically (readable: Claude Code copies the plugin into its cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, mode=0o644, durable=False)  # regenerated from the package each time


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def write_plugin(dest: Path, command: str | None = None, http_addr: str | None = None) -> Path:
    """Write the marketplace and the plugin into ``dest`` (made if absent; our files are
    replaced, a skill no longer shipped is dropped); returns ``dest``, the directory
    ``claude plugin marketplace add`` takes. ``command`` defaults to this install's
    ``agentcoord``, ``http_addr`` (where the http hooks post) to the daemon's, as
    ``setup claude`` finds it (:func:`agentcoord.claude.configure.hook_address`)."""
    command = command or agentcoord_command()
    if http_addr is None:
        from agentcoord.kernel.config import load_config

        http_addr = hook_address(load_config({}))
    root = dest / PLUGIN_NAME
    _write(dest / ".claude-plugin" / "marketplace.json", _json(marketplace_manifest()))
    _write(root / ".claude-plugin" / "plugin.json", _json(plugin_manifest(command)))
    _write(root / "hooks" / "hooks.json", _json(hooks_config(command, http_addr)))
    skills = root / "skills"
    if skills.is_dir():
        for old in skills.iterdir():
            if old.name not in SKILLS:
                shutil.rmtree(old)
    for name in SKILLS:
        _write(skills / name / "SKILL.md", skill_text(name))
    return dest
