"""``agentcoord hook EVENT``: the Claude Code hook command. Thin, like the shim.

It forwards the hook's stdin JSON to the daemon (vendor method ``agentcoord/hook``) over the
unix socket, where the caller is identified by this process's ancestry (the ``claude`` that ran
the hook), and prints what the daemon returns. It never blocks Claude Code: with no daemon, or
on any error, it prints nothing and exits 0 (a PreToolUse hook then allows the tool).
"""

from __future__ import annotations

import json
import os
import socket
import sys

from agentcoord._paths import default_runtime_dir

__all__ = ["run_hook"]


def run_hook(event: str, timeout: float = 5.0) -> int:
    try:
        raw = sys.stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
    except ValueError:
        payload = {}
    path = default_runtime_dir(os.environ, os.getuid()) / "agentcoord.sock"
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "agentcoord/hook",
        "params": {"event": event, "payload": payload},
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(json.dumps(request).encode() + b"\n")
            buf = b""
            while b"\n" not in buf:
                chunk = sock.recv(65536)
                if not chunk:
                    return 0
                buf += chunk
        reply = json.loads(buf.split(b"\n", 1)[0])
    except (OSError, ValueError):
        return 0
    output = reply.get("result", {}).get("output") if isinstance(reply, dict) else None
    if output:
        sys.stdout.write(json.dumps(output) + "\n")
    return 0
