"""``agentcoord mcp``: the stdio shim Claude Code launches; bytes between stdio and the socket.

Nothing but the daemon's replies ever reaches stdout. Deliberately tiny (no asyncio, no config
parsing) because every Claude Code session starts one: the daemon identifies the caller from
this process's credentials and ancestry, so the shim adds nothing to the messages.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from pathlib import Path

from agentcoord._paths import default_runtime_dir

__all__ = ["run_shim"]


_stdin_done = threading.Event()


def _pump_in(sock: socket.socket) -> None:
    try:
        while data := os.read(0, 65536):
            sock.sendall(data)
    except OSError:
        pass
    finally:
        _stdin_done.set()
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)


def run_shim(runtime_dir: Path | None = None) -> int:
    """Connect stdin/stdout to the daemon's socket until either side closes."""
    path = (runtime_dir or default_runtime_dir(os.environ, os.getuid())) / "agentcoord.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError as exc:
        sys.stderr.write(
            f"agentcoord mcp: no daemon is listening on {path} ({exc.strerror}).\n"
            "Start it with `agentcoord serve` (or `agentcoord install --user` for a service).\n"
        )
        return 69  # EX_UNAVAILABLE
    threading.Thread(target=_pump_in, args=(sock,), daemon=True).start()
    try:
        while data := sock.recv(65536):
            view = memoryview(data)
            while view:
                view = view[os.write(1, view) :]
    except OSError as exc:
        sys.stderr.write(f"agentcoord mcp: connection to the daemon failed: {exc}\n")
        return 74  # EX_IOERR
    finally:
        sock.close()
    if not _stdin_done.is_set():
        sys.stderr.write("agentcoord mcp: the daemon closed the connection\n")
        return 74
    return 0
