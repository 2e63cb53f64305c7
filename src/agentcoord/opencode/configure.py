"""``agentcoord setup opencode``: register ``agent-coord`` as a local MCP server in OpenCode's
opencode.json (``mcp``; docs/other-clis.md "Setup"). ``--remove`` gives the file back byte for
byte when nothing else changed (:mod:`agentcoord.kernel.setuprecord`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentcoord.kernel.setuprecord import JsonEntry, apply, give_back

__all__ = ["config_file", "entry", "registered", "remove_opencode", "setup_opencode"]

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
