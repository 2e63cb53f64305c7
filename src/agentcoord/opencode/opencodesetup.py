"""``agentcoord setup opencode``: register ``agent-coord`` as a local MCP server in OpenCode's
opencode.json (``mcp``; docs/other-clis.md "Setup"). ``--remove`` gives the file back byte for
byte when nothing else changed (:mod:`agentcoord.kernel.setuprecord`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from agentcoord.errors import ConfigError
from agentcoord.kernel.setuprecord import JsonEntry, apply, give_back
from agentcoord.opencode.opencodetools import plugin_fields

__all__ = [
    "config_file",
    "entry",
    "plugin_file",
    "plugin_installed",
    "plugin_text",
    "registered",
    "remove_opencode",
    "setup_opencode",
]

SERVER_NAME = "agent-coord"


def config_file(home: Path, env: Mapping[str, str], project: Path | None) -> Path:
    """``opencode.json`` in the project, else ``$XDG_CONFIG_HOME/opencode/opencode.json``
    (default ``~/.config``)."""
    if project is not None:
        return project / "opencode.json"
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode" / "opencode.json"


def entry(path: Path, command: str = "agentcoord") -> JsonEntry:
    value: dict[str, object] = {"type": "local", "command": [command, "mcp"]}
    return JsonEntry("mcp", SERVER_NAME, value, str(path))


def registered(path: Path) -> bool:
    return path.exists() and entry(path).present(path.read_bytes())


def setup_opencode(path: Path, command: str, backups: Path) -> str:
    return apply(backups, path, entry(path, command).add)


def remove_opencode(path: Path, backups: Path) -> str:
    ours = entry(path)
    return give_back(backups, path, ours.drop, ours.same)


_PLUGIN_MARK = "// agentcoord's OpenCode plugin, written by `agentcoord setup opencode`"


def plugin_file(config: Path, project: Path | None) -> Path:
    """Where OpenCode loads plugins from: ``.opencode/plugin/`` in the project, else the
    ``plugin/`` dir beside the user's opencode.json."""
    base = project / ".opencode" if project is not None else config.parent
    return base / "plugin" / "agentcoord.js"


def plugin_text(command: str) -> bytes:
    """The plugin (``opencode/plugin.js``) running ``command`` as the hook client, handing the
    daemon the calls of the tools in ``opencode/opencodetools.py``."""
    source = (Path(__file__).parent / "plugin.js").read_text()
    source = source.replace('"__TOOLS__"', json.dumps(plugin_fields()))
    return source.replace('"__AGENTCOORD__"', json.dumps(command)).encode()


def setup_plugin(path: Path, command: str, backups: Path) -> str:
    def change(current: bytes) -> bytes:
        if current and not current.decode(errors="replace").startswith(_PLUGIN_MARK):
            raise ConfigError(f"{path} exists and is not agentcoord's plugin; not touching it")
        return plugin_text(command)

    return apply(backups, path, change)


def remove_plugin(path: Path, backups: Path) -> str:
    def without(current: bytes) -> bytes:
        return b"" if current.decode(errors="replace").startswith(_PLUGIN_MARK) else current

    return give_back(backups, path, without, lambda a, b: a == b)


def plugin_installed(config: Path) -> bool:
    """Whether agentcoord's plugin is beside the user's opencode.json, handing the daemon
    today's tools (one an older setup wrote may send fewer: setup again)."""
    try:
        text = plugin_file(config, None).read_text()
    except OSError:
        return False
    return text.startswith(_PLUGIN_MARK) and f"const TOOLS = {json.dumps(plugin_fields())};" in text
