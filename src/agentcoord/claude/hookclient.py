"""``agentcoord hook EVENT``: the Claude Code hook command. Thin, like the shim.

It forwards the hook's stdin JSON to the daemon (vendor method ``agentcoord/hook``) over the
unix socket, where the caller is identified by this process's ancestry (the ``claude`` that ran
the hook), and prints what the daemon returns. It never blocks Claude Code: with no daemon, or
on any error, it exits 0 (a PreToolUse hook then allows the tool). SessionStart starts the
daemon when none listens, as the shim does (:mod:`agentcoord.client.autostart`), within its bound.

``setup claude`` installs it on SessionStart only; the other events are http hooks the daemon
answers on its loopback port (docs/claude-code.md "Hooks"). An http hook that cannot connect
says nothing to the model, so this one says it, once per session start: with no daemon (none
could be started), coordination is off; with the http hooks posting to an address the daemon
no longer serves, or one this session cannot reach (a sandbox with a network namespace of its
own), they are off.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from agentcoord.errors import DaemonUnreachable
from agentcoord.kernel.locate import connect_first, locate

__all__ = ["run_hook"]

_START = "start it with `agentcoord serve` (or `agentcoord install --user`)"


def run_hook(event: str, timeout: float = 5.0) -> int:
    # ``gemini:EVENT``: Gemini CLI's hook, the same request, its answer in Gemini's shape
    # (gemini/hookshape.py; docs/gemini.md).
    shape = None
    if event.startswith("gemini:"):
        from agentcoord.gemini.hookshape import gemini_output

        event, shape = event.removeprefix("gemini:"), gemini_output
    if event == "inbox-wait":
        # It waits up to the daemon's bound (INBOX_WAIT_S in claude/hooks.py, 600 s) for
        # messages (docs/opencode.md "Wake-ups").
        timeout = 630.0
    try:
        raw = sys.stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
    except ValueError:
        payload = {}
    if shape is not None and isinstance(payload, dict):
        from agentcoord.gemini.hookshape import gemini_input

        payload = gemini_input(event, payload)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "agentcoord/hook",
        "params": {"event": event, "payload": payload},
    }
    try:
        sock, runtime = _connect(event)
        with sock:
            sock.settimeout(timeout)
            sock.sendall(json.dumps(request).encode() + b"\n")
            buf = b""
            while b"\n" not in buf:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionResetError("the daemon closed the connection")
                buf += chunk
    except DaemonUnreachable as exc:
        _print(_notice("", _off_text(str(exc))))
        return 0
    except OSError:
        if event == "session-start":
            _print(_notice("", _off_text()))
        return 0
    try:
        reply = json.loads(buf.split(b"\n", 1)[0])
    except ValueError:
        return 0
    output = reply.get("result", {}).get("output") if isinstance(reply, dict) else None
    if event == "session-start":
        moved = _moved_text(runtime, payload)
        if moved:
            output = _notice(_context_of(output), moved)
    if output:
        _print(shape(event, output) if shape is not None else output)
    return 0


def _connect(event: str) -> tuple[socket.socket, Path]:
    """The daemon's socket (where the environment says, else where its pointer says, as the
    shim finds it) and its runtime dir; SessionStart starts the daemon when none listens
    (docs/claude-code.md "Daemon on demand"), the other events never wait for one."""
    located = locate(os.environ, os.getuid())
    try:
        return connect_first(located.candidates)
    except OSError as exc:
        if event != "session-start":
            raise
        first = exc
    from agentcoord.client.autostart import connect_or_start

    # Within the hook's 10 s (claude_setup.HOOKS), the request's own 5 s after it.
    why = first.strerror or str(first)
    sock = connect_or_start(located, os.environ, why, timeout=4.0)
    return sock, located.start_runtime


def _print(output: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(output) + "\n")


def _off_text(why: str = "") -> str:
    because = f" ({why})" if why else ""
    return (
        "agentcoord is off for this session: the coordination daemon is not running"
        f"{because}, so files are not guarded by claims, messages are not delivered and the "
        f"agent-coord tools fail; {_START}, then start a new session."
    )


def _notice(context: str, text: str) -> dict[str, Any]:
    """SessionStart output telling both the user (``systemMessage``) and the model."""
    joined = f"{context}\n\n{text}" if context else text
    return {
        "systemMessage": text,
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": joined},
    }


def _context_of(output: Any) -> str:
    spec = output.get("hookSpecificOutput") if isinstance(output, dict) else None
    text = spec.get("additionalContext") if isinstance(spec, dict) else None
    return text if isinstance(text, str) else ""


def _settings_files(payload: dict[str, Any]) -> list[Path]:
    """The settings files this session reads hooks from (code.claude.com/docs/en/settings):
    the user's, and the project's shared and local ones."""
    home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    files = [Path(config) / "settings.json" if config else home / ".claude" / "settings.json"]
    cwd = payload.get("cwd")
    project = os.environ.get("CLAUDE_PROJECT_DIR") or (cwd if isinstance(cwd, str) else "")
    if project:
        files += [Path(project) / ".claude" / n for n in ("settings.json", "settings.local.json")]
    return files


def _moved_text(runtime: Path, payload: dict[str, Any]) -> str:
    """Why our http hooks miss the daemon, which answered on its socket: they post where it
    no longer serves, or cannot reach it from here (a sandbox with a network namespace of its
    own, a firewall); "" when they reach it."""
    from agentcoord.claude.configure import http_hook_addrs

    posts: list[tuple[str, Path]] = []
    for path in _settings_files(payload):
        try:
            settings = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(settings, dict):
            posts += [(addr, path) for addr in sorted(http_hook_addrs(settings))]
    if not posts:
        return ""
    try:
        serving = (runtime / "http.addr").read_text().strip()
    except OSError:
        serving = ""  # hidden (a runner's sandbox masks it): reachability still tells
    stale = [f"{addr} ({path})" for addr, path in posts if serving and addr != serving]
    if stale:
        return (
            f"agentcoord hooks post to {', '.join(stale)} but the daemon serves {serving}: "
            "file claims are not checked and messages are not delivered in this session; run "
            "`agentcoord setup claude` (`--project` for the project's file), then start a new "
            "session."
        )
    unreachable = sorted({addr for addr, _ in posts if not _reachable(addr)})
    if unreachable:
        return (
            f"agentcoord hooks cannot reach the daemon at {', '.join(unreachable)} from this "
            "session (no network to it here?): file claims are not checked and messages are "
            "not delivered in this session."
        )
    return ""


def _reachable(addr: str, timeout: float = 0.5) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False
