"""``agentcoord mcp``: the stdio shim Claude Code launches; bytes between stdio and the socket.

Nothing but the daemon's replies (and the shim's own errors for requests a restart cut off)
ever reaches stdout. Deliberately small (no asyncio, no daemon import; the config file only
when there is one, for its dirs) because every Claude Code session starts one: the daemon
identifies the caller from this process's credentials and ancestry, so the shim adds nothing
to the messages.

The shim outlives the daemon's restarts: it reconnects, replays the session's ``initialize``
and answers requests the restart cut off with a retryable error (:mod:`agentcoord.client.relay`,
docs/claude-code.md "When the daemon restarts"). It finds the daemon where the environment says,
else where the daemon's pointer says (:mod:`agentcoord.kernel.locate`).

With no daemon listening, the shim starts one (:mod:`agentcoord.client.autostart`). When none can be
reached or started it does not just exit: Claude Code shows a failed stdio server only as
"Failed to connect" and keeps its stderr in the MCP log, where neither the user nor the model
looks. So the shim completes the MCP handshake itself, with ``instructions`` saying that
coordination is off, why, and what to do, and one ``agentcoord_status`` tool answering the
same (docs/claude-code.md "Daemon on demand").
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from agentcoord.kernel.locate import Located, connect_first, locate

__all__ = ["offline_reply", "run_shim"]


def _located(runtime_dir: Path | None) -> Located:
    if runtime_dir is not None:  # `agentcoord mcp --runtime-dir`
        return Located((runtime_dir,), runtime_dir, None, True)
    return locate(os.environ, os.getuid())


def _try(located: Located) -> tuple[socket.socket | None, str]:
    """A connection to the first candidate that accepts; else None and why the first failed."""
    try:
        return connect_first(located.candidates)[0], ""
    except OSError as exc:
        return None, f"{located.candidates[0] / 'agentcoord.sock'}: {exc.strerror or exc}"


def run_shim(runtime_dir: Path | None = None) -> int:
    """Relay stdin/stdout to the daemon's socket until stdin closes, across daemon restarts."""
    located = _located(runtime_dir)
    sock, why = _try(located)
    if sock is None:
        from agentcoord.client.autostart import connect_or_start
        from agentcoord.errors import DaemonUnreachable

        try:
            sock = connect_or_start(located, os.environ, why)
        except DaemonUnreachable as exc:
            sys.stderr.write(f"agentcoord mcp: {exc}\n")  # Claude Code's MCP log keeps it
            return _serve_offline(str(exc))
    from agentcoord.client.relay import Relay

    def connect(may_start: bool) -> tuple[socket.socket | None, str, bool]:
        where = located if runtime_dir is not None else _located(None)
        found, why = _try(where)
        if found is not None or not may_start:
            return found, f"no daemon yet ({why})" if why else "", False
        from agentcoord.client.autostart import connect_or_start, holder
        from agentcoord.errors import DaemonUnreachable

        pid = holder(where.start_runtime)
        if pid is not None:  # one is still draining its stop, or starting: not a second one
            return None, f"the daemon (pid {pid}) is stopping or starting; waiting for it", False

        try:
            return connect_or_start(where, os.environ, why), "", True
        except DaemonUnreachable as exc:
            return None, str(exc), True

    return Relay(connect, lambda: str(_located(runtime_dir).candidates[0]), os.environ).run(sock)


# -- coordination off: a minimal MCP server saying why ---------------------------------------

STATUS_TOOL = "agentcoord_status"
# The versions the daemon speaks (mcp/core.py SUPPORTED_PROTOCOLS), newest first.
_PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26")


def offline_text(reason: str) -> str:
    """What the session is told: coordination is off, why, and how to get it back."""
    return (
        "agentcoord coordination is OFF for this session: the agentcoord daemon is not "
        f"running. {reason[:1].upper()}{reason[1:]}. Until it runs, files are not guarded by "
        "claims, messages are not delivered and there are no agent-coord tools. Fix the "
        "cause, start the daemon (`agentcoord serve`, or `agentcoord install --user` for a "
        "service), then reconnect agent-coord (/mcp) or start a new session."
    )


def offline_reply(message: Any, text: str) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message while coordination is off (None: a notification)."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        if isinstance(message, dict) and "method" not in message and "id" in message:
            return None  # a reply to a request of ours: we make none
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "not a request"}}
    if "id" not in message:
        return None
    method, mid = message["method"], message["id"]
    raw = message.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    result: dict[str, Any]
    if method == "initialize":
        asked = params.get("protocolVersion")
        from agentcoord import __version__

        result = {
            "protocolVersion": asked if asked in _PROTOCOLS else _PROTOCOLS[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "agentcoord (off: no daemon)", "version": __version__},
            "instructions": text,
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {
            "tools": [
                {
                    "name": STATUS_TOOL,
                    "description": "Why agentcoord coordination is off here, and the fix.",
                    "inputSchema": {"type": "object", "properties": {}},
                }
            ]
        }
    elif method == "tools/call" and params.get("name") == STATUS_TOOL:
        result = {"content": [{"type": "text", "text": text}], "isError": True}
    elif method == "tools/call":
        return {
            "jsonrpc": "2.0",
            "id": mid,
            "error": {"code": -32602, "message": f"unknown tool: {text}"},
        }
    else:
        return {
            "jsonrpc": "2.0",
            "id": mid,
            "error": {"code": -32601, "message": f"method not found: {method}"},
        }
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def _serve_offline(reason: str) -> int:
    """Answer newline-delimited JSON-RPC on stdio (the MCP stdio transport) until stdin ends."""
    import json

    text = offline_text(reason)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply: dict[str, Any] | None = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "parse error"},
            }
        else:
            reply = offline_reply(message, text)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0
