"""A minimal blocking JSON-RPC client for the daemon's unix socket (used by the CLI).

The human's commands present the human token first (``agentcoord/login``,
docs/security.md "Who a caller is"); both lines go out in one write, and the daemon takes the login
before the request.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from agentcoord.errors import DaemonTimeout, DaemonUnreachable, ProtocolError

__all__ = ["LOGIN", "START_HINT", "call_unix"]

LOGIN = "agentcoord/login"
START_HINT = "start it with `agentcoord serve` (or `agentcoord install --user`)"


def call_unix(
    path: Path,
    method: str,
    params: dict[str, Any],
    timeout: float = 10.0,
    *,
    token: str | None = None,
) -> Any:
    """Send one request over the unix socket (as the human with ``token``); its result."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError as exc:
        raise DaemonUnreachable(
            f"no daemon is listening on {path} ({exc.strerror or exc}); {START_HINT}"
        ) from None
    lines = []
    if token is not None:
        lines.append({"jsonrpc": "2.0", "id": 0, "method": LOGIN, "params": {"token": token}})
    lines.append({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    with sock:
        try:
            sock.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            buf = b""
            while buf.count(b"\n") < len(lines):
                chunk = sock.recv(65536)
                if not chunk:
                    raise DaemonUnreachable(
                        "the daemon closed the connection; check `agentcoord status` "
                        "and the daemon's log"
                    )
                buf += chunk
        except TimeoutError:
            raise DaemonTimeout(
                f"the daemon on {path} did not answer within {timeout:g}s; "
                "try again, or check `agentcoord status` and the daemon's log"
            ) from None
        except OSError as exc:  # reset mid-request: it stopped or restarted
            raise DaemonUnreachable(
                f"the daemon on {path} dropped the connection ({exc.strerror or exc}); {START_HINT}"
            ) from None
    for raw in buf.split(b"\n")[: len(lines)]:
        reply = json.loads(raw)
        if "error" in reply:
            err = reply["error"]
            raise ProtocolError(err.get("code", 0), err.get("message", "error"))
    return reply["result"]
