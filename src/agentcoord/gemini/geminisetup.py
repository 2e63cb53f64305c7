"""``agentcoord setup gemini``: register ``agent-coord`` in Gemini CLI's settings.json
(``mcpServers``) and install its command hooks (``hooks``; docs/other-clis.md "Setup").
``--remove`` gives the file back byte for byte when nothing else changed
(:mod:`agentcoord.kernel.setuprecord`); otherwise only our server and hook groups go."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from agentcoord.errors import ConfigError
from agentcoord.gemini.geminitools import TOOLS
from agentcoord.kernel.setuprecord import JsonEntry, apply, give_back

__all__ = ["HOOKS", "entry", "registered", "remove_gemini", "settings_file", "setup_gemini"]

SERVER_NAME = "agent-coord"


def settings_file(home: Path, project: Path | None) -> Path:
    """``.gemini/settings.json`` in the project, else ``~/.gemini/settings.json``."""
    return (project or home) / ".gemini" / "settings.json"


def entry(path: Path, command: str = "agentcoord") -> JsonEntry:
    # trust: Gemini asks before each tool of an untrusted server, which ``gemini -p`` cannot.
    value: dict[str, object] = {"command": command, "args": ["mcp"], "trust": True}
    return JsonEntry("mcpServers", SERVER_NAME, value, str(path))


# Gemini event -> (matcher or None, our event, timeout in milliseconds: Gemini's unit).
HOOKS: dict[str, tuple[str | None, str, int]] = {
    "SessionStart": (None, "session-start", 10000),  # says who the session is
    "BeforeAgent": (None, "user-prompt-submit", 5000),  # inbox messages at each prompt
    "AfterTool": (None, "post-tool-use", 5000),  # inbox messages after each tool call
    # The write guard on write_file and replace, the working-tree guard on run_shell_command
    # (gemini/geminitools.py).
    "BeforeTool": (TOOLS.matcher(), "pre-tool-use", 5000),
    "SessionEnd": (None, "session-end", 5000),
    # The session's state (docs/activity.md "Other CLIs"): the turn ended; a tool waits for
    # the user's permission (its ToolPermission notification).
    "AfterAgent": (None, "stop", 5000),
    "Notification": (None, "notification", 5000),
}
_OUR_HOOK = re.compile(r"(^|/|')agentcoord'? hook gemini:")


def _ours(group: object) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and _OUR_HOOK.search(str(h.get("command", ""))) for h in hooks
    )


def _load(data: bytes, path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(data.decode() or "{}")
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); not touching it") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} does not hold a JSON object; not touching it")
    return loaded


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode() if data else b""


def _without_hooks(data: dict[str, Any]) -> dict[str, Any]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    kept = {}
    for event, groups in hooks.items():
        left = [g for g in groups if not _ours(g)] if isinstance(groups, list) else groups
        if left != [] or not isinstance(groups, list) or not any(map(_ours, groups)):
            kept[event] = left
    out = dict(data)
    if kept:
        out["hooks"] = kept
    else:
        del out["hooks"]
    return out


def _with_hooks(data: dict[str, Any], command: str, path: Path) -> dict[str, Any]:
    out = _without_hooks(data)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{path}: 'hooks' is not an object; not touching it")
    for event, (matcher, ours, timeout) in HOOKS.items():
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        run = f"{shlex.quote(command)} hook gemini:{ours}"  # a shell runs it
        group["hooks"] = [{"type": "command", "command": run, "timeout": timeout}]
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{path}: hooks.{event} is not a list; not touching it")
        groups.append(group)
    return out


def registered(path: Path) -> bool:
    return path.exists() and entry(path).present(path.read_bytes())


def hooks_installed(path: Path) -> bool:
    """Whether ``path`` holds our hook group for every event of :data:`HOOKS`, with today's
    matcher (a group an older setup wrote may miss a tool: setup again)."""
    try:
        hooks = _load(path.read_bytes(), path).get("hooks")
    except (OSError, ConfigError):
        return False

    def has(event: str, matcher: str | None) -> bool:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        return isinstance(groups, list) and any(
            _ours(g) and g.get("matcher") == matcher for g in groups if isinstance(g, dict)
        )

    return all(has(event, matcher) for event, (matcher, _, _) in HOOKS.items())


def setup_gemini(path: Path, command: str, backups: Path) -> str:
    server = entry(path, command)

    def change(current: bytes) -> bytes:
        data = _load(server.add(current), path)
        new = _with_hooks(data, command, path)
        return current if new == _load(current, path) else _dump(new)

    return apply(backups, path, change)


def remove_gemini(path: Path, backups: Path) -> str:
    server = entry(path)

    def without(current: bytes) -> bytes:
        stripped = _load(server.drop(current), path)
        left = _without_hooks(stripped)
        return current if left == _load(current, path) else _dump(left)

    return give_back(backups, path, without, server.same)
