"""``agentcoord setup codex``: register ``agent-coord`` as an MCP server in Codex's config.toml
and install its command hooks (docs/other-clis.md "Setup").

The file is TOML the user writes by hand, with comments; it is not re-serialised. Setup appends
one block between two marker comments, and ``--remove`` cuts exactly that block out, so the
file's own bytes come back (:mod:`agentcoord.kernel.setuprecord`). A table of that name the user
wrote is left alone: setup refuses rather than define it twice.

Setup also turns Codex's shared app-server daemon off (``[features] daemon_auto_start = false``,
docs/codex.md "The shared app-server"): in the block, or, when the user's file has its own
``[features]`` table (TOML defines a table once), as three marked lines under that table's
header, cut out again by ``--remove``.
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

__all__ = [
    "BEGIN",
    "END",
    "FEATURE",
    "HOOKS",
    "config_file",
    "registered",
    "remove_codex",
    "setup_codex",
]

SERVER_NAME = "agent-coord"
BEGIN = "# >>> agentcoord setup codex (`agentcoord setup codex --remove` takes this out)"
END = "# <<< agentcoord setup codex"
_BLOCK = re.compile(r"\n?" + re.escape(BEGIN) + r"\n.*?" + re.escape(END) + r"\n?", re.S)

# Codex's interactive mode, with this feature on (its default), runs every session's MCP
# servers under one shared `codex app-server`, which the daemon refuses (docs/codex.md "The
# shared app-server"); off, each session runs its own.
FEATURE = "daemon_auto_start"
_FEATURE_BEGIN = f"# >>> agentcoord setup codex: {FEATURE} (`--remove` takes this out)"
_FEATURE_END = f"# <<< agentcoord setup codex: {FEATURE}"
_FEATURE_LINES = f"\n{_FEATURE_BEGIN}\n{FEATURE} = false\n{_FEATURE_END}"
# Inserted at the end of the user's `[features]` header line, before its newline (if any).
_FEATURE_BLOCK = re.compile(
    r"\n" + re.escape(_FEATURE_BEGIN) + r"\n.*?" + re.escape(_FEATURE_END), re.S
)
# Where the user trusts our hooks, Codex records it next to them, so inside our block:
# `[hooks.state."<file>:<event>:<group>:<index>"]` tables holding each hook's `trusted_hash`
# (docs/codex.md "Hook trust"). Setup keeps them while the hooks are unchanged; --remove cuts
# them out with the hooks they trusted.
_TRUST_RECORD = re.compile(r"\n\[hooks\.state\.[^\n]*\n(?:[^\[\n#][^\n]*\n)*")
_FEATURES_HEADER = re.compile(r"^[ \t]*\[[ \t]*features[ \t]*\][^\n]*", re.M)


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


def _block(command: str, features: bool) -> str:
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
    if features:
        lines += ["", "[features]", f"{FEATURE} = false"]
    return "\n".join([*lines, END]) + "\n"


def _without(text: str) -> str:
    text = _FEATURE_BLOCK.sub("", text, count=1) if _FEATURE_BEGIN in text else text
    return _BLOCK.sub("", text, count=1) if BEGIN in text else text


def _daemon_auto_start(data: dict[str, object]) -> bool | None:
    """``features.daemon_auto_start`` in parsed TOML, None when unset."""
    features = data.get("features")
    value = features.get(FEATURE) if isinstance(features, dict) else None
    return value if isinstance(value, bool) else None


def _feature_mode(rest: dict[str, object], path: Path) -> str:
    """How setup turns the shared daemon off in a file whose own content is ``rest``: ``block``
    (no ``features`` table: ours defines it), ``insert`` (under the user's table) or ``none``
    (the user already turned it off)."""
    features = rest.get("features")
    if features is None:
        return "block"
    if not isinstance(features, dict):
        raise ConfigError(f"{path}: features is not a table; not touching it")
    value = features.get(FEATURE)
    if value is False:
        return "none"
    if value is not None:
        raise ConfigError(
            f"{path} sets [features] {FEATURE} = {json.dumps(value)}: interactive codex then "
            "serves every session's MCP servers from one shared app-server, which agentcoord "
            "refuses; set it to false (or delete the line) and run setup again"
        )
    return "insert"


def _insert_feature(text: str, path: Path) -> str:
    header = _FEATURES_HEADER.search(text)
    if header is None:  # a dotted-key or inline `features`: no header line to write under
        raise ConfigError(
            f"{path} defines features without a [features] header; add "
            f"`{FEATURE} = false` to it yourself and run setup again"
        )
    return text[: header.end()] + _FEATURE_LINES + text[header.end() :]


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
        if _FEATURE_BEGIN in text:
            text = _FEATURE_BLOCK.sub("", text, count=1)  # added again below when still needed
        rest = _parse(_without(text), path)
        servers = rest.get("mcp_servers", {})
        if isinstance(servers, dict) and SERVER_NAME in servers:
            raise ConfigError(
                f"{path} already defines [mcp_servers.{SERVER_NAME}] (not written by setup); "
                "remove it or keep it, setup will not define it twice"
            )
        mode = _feature_mode(rest, path)
        block = _block(command, features=mode == "block")
        ours = _BLOCK.search(text)
        if ours is not None:
            lead = "\n" if ours.group(0).startswith("\n") else ""
            if _TRUST_RECORD.sub("", ours.group(0)) == lead + block:
                new = text  # ours as it was, with the trust Codex recorded in it kept
            else:
                new = text[: ours.start()] + lead + block + text[ours.end() :]
        else:
            sep = (
                "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
            )
            new = text + sep + block
        if mode == "insert":
            new = _insert_feature(new, path)
        # Never leave a file Codex cannot read, nor one that leaves the shared daemon on.
        if _daemon_auto_start(_parse(new, path)) is not False:
            raise ConfigError(
                f"{path}: could not set [features] {FEATURE} = false; not touching it"
            )
        return new.encode()

    return apply(backups, path, change)


def remove_codex(path: Path, backups: Path) -> str:
    """Cut our block out; the file's bytes as before setup when nothing else changed."""
    # The same but for the newline setup put before its block when the file did not end with
    # one: the recorded bytes go back.
    return give_back(
        backups,
        path,
        lambda b: _without(b.decode()).encode(),
        lambda a, b: a.rstrip() == b.rstrip(),
    )
