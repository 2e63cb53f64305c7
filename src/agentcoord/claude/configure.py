"""``agentcoord setup claude``: register the MCP server, install the hooks, and add the permission
rules that keep a session's file tools out of the daemon's state dir, in Claude Code.

Edits are surgical: only our own entries (server ``agent-coord``; hook commands starting with
``agentcoord hook``, and http hooks marked with our header; the state dir's ``permissions.deny``
rules) are added or removed, everything else in the user's files is kept, writes are atomic,
and running it twice changes nothing (docs/claude-code.md "Claude Code").

Hooks (docs/claude-code.md "Hooks"): every event but SessionStart is a ``type: "http"`` hook
posting to the daemon's loopback port (no process per tool call); PreToolUse only on the tools
that write files. SessionStart stays a command hook, ``agentcoord hook session-start``: Claude
Code runs no http hook on it, and it is the one hook that can tell the session the daemon is
down (a refused http hook says nothing to the model). Setups before this wrote command hooks
for every event and a Stop hook; those are removed on the next setup and by ``--remove``.

Project scope writes files people commit, so their commands are :data:`PORTABLE_COMMAND`, not
this machine's path. Removal gives the files back as they were: each file setup changes has a
record (kept outside the project, under ``backups``) of whether setup created it, the dirs it
created, and the file's bytes before; ``remove`` deletes what setup created and restores edited
files byte for byte, unless they were edited since in other ways (then only our entries go).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agentcoord.claude.claudetools import TOOLS as CLAUDE_TOOLS
from agentcoord.errors import ConfigError
from agentcoord.kernel import setuprecord
from agentcoord.kernel.files import write_atomic

if TYPE_CHECKING:
    from agentcoord.kernel.config import Config

__all__ = [
    "HOOKS",
    "HOOK_HEADER",
    "PORTABLE_COMMAND",
    "SetupReport",
    "hook_address",
    "http_hook_addrs",
    "missing_rules",
    "remove_claude",
    "setup_claude",
    "state_dir_rules",
    "user_config_file",
]

SERVER_NAME = "agent-coord"

# What project-scope files run: the `agentcoord` on the teammate's PATH, or $AGENTCOORD_BIN.
# Claude Code expands ${VAR:-default} in .mcp.json's command and args (code.claude.com/docs/
# en/mcp, "Environment variable expansion in .mcp.json"); hook commands run in a shell.
PORTABLE_COMMAND = "${AGENTCOORD_BIN:-agentcoord}"

# event -> (matcher or None, our event name, timeout seconds, "http" or "command")
HOOKS: dict[str, tuple[str | None, str, int, str]] = {
    # Identifies the session, or says once that coordination is off (claude/hookclient.py).
    "SessionStart": (None, "session-start", 10, "command"),
    "UserPromptSubmit": (None, "user-prompt-submit", 5, "http"),
    # Every tool: a message sent to the session arrives after its next tool call, whatever
    # the tool (docs/claude-code.md "Hooks" has the cost per call).
    "PostToolUse": (None, "post-tool-use", 5, "http"),
    # The write guard and the automatic edit leases: the file-writing tools; the working-tree
    # guard: Bash (claude/claudetools.py; docs/claims.md "The guards in each CLI").
    "PreToolUse": (CLAUDE_TOOLS.matcher(), "pre-tool-use", 5, "http"),
    # Ends the session's Agent at once; the daemon also sees the process exit (pidfd).
    "SessionEnd": (None, "session-end", 5, "http"),
    # Standing approvals answer a dialog before it is drawn, and a dialog left open shows the
    # session as waiting for permission (docs/approvals.md, docs/claude-code.md "Hooks"). The
    # dialog is drawn and answered in the terminal while the hook runs, so the daemon may hold
    # it for the human's answer up to permission_hold (at most 590 s: approvals/held.py).
    "PermissionRequest": (None, "permission-request", 600, "http"),
    # Waiting for permission or for input, as Claude Code says it (never in -p).
    "Notification": (None, "notification", 5, "http"),
}
# Marks an http hook as ours (a user's own hook may post to a loopback /hooks/... too); the
# daemon ignores it.
HOOK_HEADER = "X-Agentcoord-Hook"


@dataclass
class SetupReport:
    changed: list[Path]  # files that were there and now hold our entries (or lost them)
    unchanged: list[Path]
    denied: list[str] = field(default_factory=list)  # permission rules added (or removed)
    removed: list[Path] = field(default_factory=list)  # files setup had created, now deleted
    created: list[Path] = field(default_factory=list)  # files that were not there before


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); not touching it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; not touching it")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # A user's file keeps its own permissions; a new one is 0600 (it may hold tokens).
    write_atomic(path, json.dumps(data, indent=2) + "\n", keep_mode=True)


_OURS = re.compile(r"(^|/)agentcoord hook |^" + re.escape(PORTABLE_COMMAND) + " hook ")


def _is_ours(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    if hook.get("type") == "http":
        return _our_http_addr(hook) is not None
    return bool(_OURS.search(str(hook.get("command", ""))))


def _our_http_addr(hook: dict[str, Any]) -> str | None:
    """The ``host:port`` one of our http hooks posts to; None for any other hook."""
    headers = hook.get("headers")
    if not isinstance(headers, dict) or HOOK_HEADER not in headers:
        return None
    url = urlsplit(str(hook.get("url", "")))
    if url.scheme != "http" or not url.netloc or not url.path.startswith("/hooks/"):
        return None
    return url.netloc


def http_hook_addrs(settings: dict[str, Any]) -> set[str]:
    """Every ``host:port`` our http hooks in ``settings`` post to (doctor, hookclient)."""
    hooks = settings.get("hooks")
    found: set[str] = set()
    if not isinstance(hooks, dict):
        return found
    for groups in hooks.values():
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                addr = _our_http_addr(hook) if isinstance(hook, dict) else None
                if addr is not None and hook.get("type") == "http":
                    found.add(addr)
    return found


def hook_address(cfg: Config, project: bool = False) -> str:
    """The ``host:port`` our http hooks post to. User scope: the running daemon's, from
    ``http.addr`` as every client reads it, else the configured address. Project scope (a file
    teammates share): the configured address, never a port this daemon fell back to; the
    default where it is ``:0``. A daemon that later serves elsewhere leaves the hooks failing
    open until setup runs again (docs/claude-code.md "Hooks")."""
    from agentcoord.kernel.config import DEFAULT_HTTP_ADDR

    if not project:
        try:
            running = cfg.http_addr_file.read_text().strip()
        except OSError:
            running = ""
        if running:
            return running
    host, port = cfg.http_host, cfg.http_port
    if port == 0:
        return DEFAULT_HTTP_ADDR
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(data))
    return copied


def _hook(command: str, http_addr: str, sub: str, timeout: int, kind: str) -> dict[str, Any]:
    if kind == "command":
        return {"type": "command", "command": f"{command} {sub}", "timeout": timeout}
    return {
        "type": "http",
        "url": f"http://{http_addr}/hooks/{sub}",
        "headers": {HOOK_HEADER: "1"},
        "timeout": timeout,
    }


def with_hooks(settings: dict[str, Any], command: str, http_addr: str) -> dict[str, Any]:
    """``settings`` with our hook groups present exactly once (pure): ``command`` (``...
    agentcoord hook``) for the command hook, ``http_addr`` (``host:port``) for the http ones."""
    out = without_hooks(settings)
    hooks = out.setdefault("hooks", {})
    for event, (matcher, sub, timeout, kind) in HOOKS.items():
        group: dict[str, Any] = {"hooks": [_hook(command, http_addr, sub, timeout, kind)]}
        if matcher:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    return out


def without_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with every hook of ours removed, and groups/events left empty dropped (pure)."""
    out = _copy(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not _is_ours(h)]
                if not inner and group["hooks"]:
                    continue
                group = {**group, "hooks": inner}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def state_dir_rules(state_dir: Path, home: Path | None = None) -> list[str]:
    """Permission rules keeping a session's file tools out of the daemon's state dir, where
    the human token and the NATS credentials live (docs/security.md).

    Claude Code checks paths only in ``Read(...)`` and ``Edit(...)`` rules (``Edit`` covers
    every built-in tool that writes files; a ``Write(path)`` rule is ignored with a warning),
    and ``//`` starts an absolute path (code.claude.com/docs/en/permissions). Read deny rules
    also cover shell commands that name the file (cat, head, ...), and with Claude Code's
    sandbox on they become its ``denyRead``/``denyWrite`` paths.

    With ``home`` (project scope: a file people commit), a state dir inside it is written
    ``~/...``, which Claude Code resolves against each reader's home, so the rule holds on a
    teammate's machine with the default state dir too.
    """
    resolved = state_dir.expanduser().resolve()
    if home is not None and resolved.is_relative_to(home.resolve()):
        rel = resolved.relative_to(home.resolve()).as_posix()
        return [f"Read(~/{rel}/**)", f"Edit(~/{rel}/**)"]
    root = str(resolved).rstrip("/")
    return [f"Read(/{root}/**)", f"Edit(/{root}/**)"]


def with_permissions(settings: dict[str, Any], rules: list[str]) -> dict[str, Any]:
    """``settings`` with ``rules`` in ``permissions.deny`` exactly once, the rest kept (pure)."""
    out = _copy(settings)
    if not rules:
        return out
    perms = out.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise ConfigError("settings.json: `permissions` is not an object; not touching it")
    deny = perms.setdefault("deny", [])
    if not isinstance(deny, list):
        raise ConfigError("settings.json: `permissions.deny` is not a list; not touching it")
    deny.extend(rule for rule in rules if rule not in deny)
    return out


def without_permissions(settings: dict[str, Any], rules: list[str]) -> dict[str, Any]:
    """``settings`` without ``rules`` in ``permissions.deny``; emptied keys dropped (pure)."""
    out = _copy(settings)
    perms = out.get("permissions")
    if not isinstance(perms, dict) or not isinstance(perms.get("deny"), list):
        return out
    perms["deny"] = [rule for rule in perms["deny"] if rule not in rules]
    if not perms["deny"]:
        del perms["deny"]
    if not perms:
        del out["permissions"]
    return out


def missing_rules(settings_file: Path, state_dir: Path) -> list[str]:
    """The state-dir rules absent from ``settings_file``'s ``permissions.deny`` (doctor)."""
    try:
        deny = _load(settings_file).get("permissions", {}).get("deny", [])
    except (ConfigError, AttributeError):
        deny = []
    present = deny if isinstance(deny, list) else []
    return [rule for rule in state_dir_rules(state_dir) if rule not in present]


def with_server(config: dict[str, Any], command: str) -> dict[str, Any]:
    out = _copy(config)
    servers = out.setdefault("mcpServers", {})
    servers[SERVER_NAME] = {"type": "stdio", "command": command, "args": ["mcp"]}
    return out


def without_server(config: dict[str, Any]) -> dict[str, Any]:
    out = _copy(config)
    servers = out.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop(SERVER_NAME, None)
    return out


def user_config_file(home: Path, claude_dir: Path) -> Path:
    """Where Claude Code keeps its user-scope config (``mcpServers``): ``~/.claude.json``, or
    ``$CLAUDE_CONFIG_DIR/.claude.json`` when the config dir is moved (seen with Claude Code
    2.1.328: with CLAUDE_CONFIG_DIR set it reads no ``~/.claude.json``)."""
    if claude_dir == home / ".claude":
        return home / ".claude.json"
    return claude_dir / ".claude.json"


def _paths(home: Path, claude_dir: Path, project: Path | None) -> tuple[Path, Path]:
    if project is not None:
        return project / ".mcp.json", project / ".claude" / "settings.json"
    return user_config_file(home, claude_dir), claude_dir / "settings.json"


def _apply(path: Path, change: Any, report: SetupReport, backups: Path | None) -> None:
    before = _load(path)
    after = change(before)
    if after == before:
        report.unchanged.append(path)
        return
    existed = path.exists()
    if backups is not None:
        # A file that holds none of our entries (setup removed by hand since) is recorded
        # again; one that does keeps the first record: the state to give back.
        setuprecord.remember(backups, path, again=before == without_server(without_hooks(before)))
    _save(path, after)
    (report.changed if existed else report.created).append(path)


# -- the record of what setup changed, for an exact removal -----------------------------------


_CONTAINERS = ("mcpServers", "hooks", "permissions")


def _pruned(data: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the empty containers our entries left that ``like`` did not have."""
    return {k: v for k, v in data.items() if not (k in _CONTAINERS and v == {} and k not in like)}


def _undo(path: Path, change: Any, report: SetupReport, backups: Path | None) -> list[Path]:
    """Remove our entries from ``path`` as its record says; returns the dirs setup created
    for it (to remove when empty), when setup created the file and it is now gone."""
    before = _load(path)
    after = change(before)
    recalled = setuprecord.recall(backups, path) if backups is not None else None
    if recalled is None:
        if after == before:
            report.unchanged.append(path)
        else:
            _save(path, after)
            report.changed.append(path)
        return []
    dirs: list[Path] = []
    if recalled.created:
        if _pruned(after, {}) == {}:
            path.unlink()
            dirs = recalled.dirs
            report.removed.append(path)
        elif after != before:
            _save(path, after)
            report.changed.append(path)
        else:
            report.unchanged.append(path)
    else:
        was = recalled.original_json()
        if isinstance(was, dict) and _pruned(after, was) == was:
            # Nothing else changed since setup: the file's own bytes back, not a re-dump.
            setuprecord.restore_bytes(path, recalled.original)
            report.changed.append(path)
        elif after != before:
            _save(path, after)
            report.changed.append(path)
        else:
            report.unchanged.append(path)
    recalled.record.unlink()
    return dirs


def setup_claude(
    home: Path,
    claude_dir: Path,
    command: str = "agentcoord",
    project: Path | None = None,
    *,
    state_dir: Path | None = None,
    backups: Path | None = None,
    http_addr: str | None = None,
) -> SetupReport:
    """Register ``agent-coord``, install our hooks, and deny the session's file tools the
    daemon's ``state_dir`` (idempotent). With ``backups``, what each file was before is
    recorded there, so :func:`remove_claude` can give it back exactly. The http hooks post to
    ``http_addr``; None: :func:`hook_address` of the configuration."""
    if http_addr is None:
        from agentcoord.kernel.config import load_config

        http_addr = hook_address(load_config({}), project is not None)
    addr = http_addr
    server_file, settings_file = _paths(home, claude_dir, project)
    report = SetupReport([], [])
    rules_home = home if project is not None else None
    report.denied = state_dir_rules(state_dir, rules_home) if state_dir is not None else []
    _apply(server_file, lambda c: with_server(c, command), report, backups)
    _apply(
        settings_file,
        lambda s: with_permissions(with_hooks(s, f"{command} hook", addr), report.denied),
        report,
        backups,
    )
    return report


def remove_claude(
    home: Path,
    claude_dir: Path,
    project: Path | None = None,
    *,
    state_dir: Path | None = None,
    backups: Path | None = None,
) -> SetupReport:
    """Undo :func:`setup_claude`, leaving everything else as it was: with the ``backups`` it
    recorded, files it created are deleted (and the dirs it created, when empty) and files it
    edited get their own bytes back."""
    server_file, settings_file = _paths(home, claude_dir, project)
    report = SetupReport([], [])
    rules_home = home if project is not None else None
    report.denied = state_dir_rules(state_dir, rules_home) if state_dir is not None else []

    def settings_change(settings: dict[str, Any]) -> dict[str, Any]:
        return without_permissions(without_hooks(settings), report.denied)

    created_dirs: set[Path] = set()
    for path, change in ((server_file, without_server), (settings_file, settings_change)):
        if path.exists():
            created_dirs.update(_undo(path, change, report, backups))
    # Once both files are handled (a moved config dir holds both), deepest first.
    setuprecord.remove_dirs(list(created_dirs))
    return report
