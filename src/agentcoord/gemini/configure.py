"""``agentcoord setup gemini``: register ``agent-coord`` in Gemini CLI's settings.json
(``mcpServers``; docs/other-clis.md "Setup"). ``--remove`` gives the file back byte for byte
when nothing else changed (:mod:`agentcoord.kernel.setuprecord`)."""

from __future__ import annotations

from pathlib import Path

from agentcoord.kernel.setuprecord import JsonEntry, apply, give_back

__all__ = ["entry", "registered", "remove_gemini", "settings_file", "setup_gemini"]

SERVER_NAME = "agent-coord"


def settings_file(home: Path, project: Path | None) -> Path:
    """``.gemini/settings.json`` in the project, else ``~/.gemini/settings.json``."""
    return (project or home) / ".gemini" / "settings.json"


def entry(path: Path, command: str = "agentcoord") -> JsonEntry:
    # trust: Gemini asks before each tool of an untrusted server, which ``gemini -p`` cannot.
    value: dict[str, object] = {"command": command, "args": ["mcp"], "trust": True}
    return JsonEntry("mcpServers", SERVER_NAME, value, str(path))


def registered(path: Path) -> bool:
    return path.exists() and entry(path).present(path.read_bytes())


def setup_gemini(path: Path, command: str, backups: Path) -> str:
    return apply(backups, path, entry(path, command).add)


def remove_gemini(path: Path, backups: Path) -> str:
    ours = entry(path)
    return give_back(backups, path, ours.drop, ours.same)
