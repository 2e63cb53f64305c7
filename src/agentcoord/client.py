"""A minimal blocking JSON-RPC client for the daemon's unix socket (used by the CLI)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from agentcoord.errors import DaemonUnreachable, ProtocolError

__all__ = ["call_unix"]


def call_unix(path: Path, method: str, params: dict[str, Any], timeout: float = 10.0) -> Any:
    """Send one request over the unix socket and return its result (or raise)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError as exc:
        raise DaemonUnreachable(f"no daemon is listening on {path} ({exc.strerror})") from None
    with sock:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        sock.sendall(json.dumps(request).encode() + b"\n")
        buf = b""
        while b"\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise DaemonUnreachable("the daemon closed the connection")
            buf += chunk
    reply = json.loads(buf.split(b"\n", 1)[0])
    if "error" in reply:
        err = reply["error"]
        raise ProtocolError(err.get("code", 0), err.get("message", "error"))
    return reply["result"]
