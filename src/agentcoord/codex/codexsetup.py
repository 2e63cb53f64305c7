"""``agentcoord setup codex``: register ``agent-coord`` as an MCP server in Codex's config.toml
and install its command hooks (docs/other-clis.md "Setup").

The file is TOML the user writes by hand, with comments; it is not re-serialised. Setup appends
one block between two marker comments, and ``--remove`` cuts exactly that block out, so the
file's own bytes come back (:mod:`agentcoord.kernel.setuprecord`). A table of that name the user
wrote is left alone: setup refuses rather than define it twice.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path

from agentcoord.codex.codextools import TOOLS
from agentcoord.errors import ConfigError
from agentcoord.kernel.setuprecord import apply, give_back

__all__ = ["BEGIN", "END", "HOOKS", "config_file", "registered", "remove_codex", "setup_codex"]

SERVER_NAME = "agent-coord"
BEGIN = "# >>> agentcoord setup codex (`agentcoord setup codex --remove` takes this out)"
END = "# <<< agentcoord setup codex"
_BLOCK = re.compile(r"\n?" + re.escape(BEGIN) + r"\n.*?" + re.escape(END) + r"\n?", re.S)


def config_file(home: Path, env: Mapping[str, str], project: Path | None) -> Path:
    """``.codex/config.toml`` in the project, else ``$CODEX_HOME/config.toml`` (default
    ``~/.codex``)."""
    if project is not None:
        return project / ".codex" / "config.toml"
    return Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"


def _parse(text: str, where: Path) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML ({exc}); not touching it") from None


# Codex's command hooks take Claude Code's JSON in and out (docs/codex.md), so
# they run the same hook client: event -> (matcher or None, our event name, timeout seconds).
HOOKS: dict[str, tuple[str | None, str, int]] = {
    "SessionStart": (None, "session-start", 10),  # says who the session is
    "UserPromptSubmit": (None, "user-prompt-submit", 5),  # inbox messages as context
    "PostToolUse": (None, "post-tool-use", 5),  # inbox messages after each tool call
    # The write guard on apply_patch (each patched file), the working-tree guard on its shell
    # tool (codex/codextools.py): "apply_patch|Bash".
    "PreToolUse": (TOOLS.matcher(), "pre-tool-use", 5),
    "SessionEnd": (None, "session-end", 5),
    # The session's state (docs/activity.md "Other CLIs"): the turn ended; a call waits for
    # the user's approval, which a standing approval answers first (docs/approvals.md).
    "Stop": (None, "stop", 5),
    "PermissionRequest": (None, "permission-request", 10),
}


def _block(command: str) -> str:
    # Codex gives MCP servers and hooks a cut-down environment: the shim and the hook client
    # find the daemon through the per-user pointer (docs/daemon.md "Finding the daemon"), so
    # no env is passed here.
    lines = [BEGIN, f"[mcp_servers.{SERVER_NAME}]", f"command = {json.dumps(command)}"]
    lines.append('args = ["mcp"]')
    for event, (matcher, ours, timeout) in HOOKS.items():
        lines += ["", f"[[hooks.{event}]]"]
        if matcher is not None:
            lines.append(f"matcher = {json.dumps(matcher)}")
        lines += [
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {json.dumps(f'{shlex.quote(command)} hook {ours}')}",  # a shell runs it
            f"timeout = {timeout}",
        ]
    return "\n".join([*lines, END]) + "\n"


def _without(text: str) -> str:
    return _BLOCK.sub("", text, count=1) if BEGIN in text else text


def registered(path: Path) -> bool:
    """Whether ``path`` defines the ``agent-coord`` MCP server (ours or the user's own)."""
    try:
        servers = tomllib.loads(path.read_text()).get("mcp_servers", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(servers, dict) and SERVER_NAME in servers


def hooks_installed(path: Path) -> bool:
    """Whether ``path`` holds our command hook on every event of :data:`HOOKS`, with today's
    matcher (a block an older setup wrote may miss a tool: setup again)."""
    try:
        hooks = tomllib.loads(path.read_text()).get("hooks", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False

    def has(event: str, matcher: str | None, ours: str) -> bool:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        return isinstance(groups, list) and any(
            str(h.get("command", "")).endswith(f" hook {ours}")
            for g in groups
            if isinstance(g, dict) and g.get("matcher") == matcher
            for h in g.get("hooks", [])
            if isinstance(h, dict)
        )

    return all(has(event, matcher, ours) for event, (matcher, ours, _) in HOOKS.items())


def setup_codex(path: Path, command: str, backups: Path) -> str:
    """Add (or update) our block; ``created``, ``updated`` or ``unchanged``."""

    def change(current: bytes) -> bytes:
        text = current.decode()
        rest = _without(text)
        servers = _parse(rest, path).get("mcp_servers", {})
        if isinstance(servers, dict) and SERVER_NAME in servers:
            raise ConfigError(
                f"{path} already defines [mcp_servers.{SERVER_NAME}] (not written by setup); "
                "remove it or keep it, setup will not define it twice"
            )
        if BEGIN in text:
            new = _BLOCK.sub(lambda _m: "\n" + _block(command), text, count=1)
        else:
            sep = (
                "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
            )
            new = text + sep + _block(command)
        _parse(new, path)  # never leave a file Codex cannot read
        return new.encode()

    return apply(backups, path, change)


def remove_codex(path: Path, backups: Path) -> str:
    """Cut our block out; the file's bytes as before setup when nothing else changed."""
    return give_back(backups, path, lambda b: _without(b.decode()).encode(), lambda a, b: a == b)
