"""sd_notify(3) without libsystemd: one datagram to ``$NOTIFY_SOCKET``."""

from __future__ import annotations

import contextlib
import socket

__all__ = ["sd_notify"]


def sd_notify(notify_socket: str | None, state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``) to systemd; False when there is no socket."""
    if not notify_socket:
        return False
    addr = notify_socket
    if addr.startswith("@"):  # abstract namespace
        addr = "\0" + addr[1:]
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(addr)
        sock.sendall(state.encode())
        return True
    return False
