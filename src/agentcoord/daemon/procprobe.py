"""The process seam: peer credentials and process ancestry (Linux: SO_PEERCRED, /proc, psutil).

Everything platform-specific about "which process is on the other end" lives here, behind
:class:`ProcessProbe`, so macOS can add LOCAL_PEERPID/getpeereid without touching the tools.
"""

from __future__ import annotations

import os
import select
import socket
import struct
from typing import TYPE_CHECKING, Protocol

from agentcoord._lazy import on_first_use
from agentcoord.kernel.ancestry import ProcInfo

if TYPE_CHECKING:
    import psutil
else:  # ~6 ms of imports that the daemon's start-up does not need (agentcoord._lazy)
    psutil = on_first_use("psutil")

__all__ = ["PeerCred", "ProcessProbe", "PsutilProbe", "peer_cred", "tcp_peer_pid"]

_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)  # Linux >= 6.5


class PeerCred:
    """pid/uid of a unix-socket peer; ``pidfd`` (when the kernel has it) pins the process."""

    def __init__(self, pid: int, uid: int, gid: int, pidfd: int | None) -> None:
        self.pid, self.uid, self.gid, self.pidfd = pid, uid, gid, pidfd

    def still_alive(self) -> bool:
        """False when the pidfd says the peer exited (so its pid may be recycled)."""
        if self.pidfd is None:
            return psutil.pid_exists(self.pid)
        readable, _, _ = select.select([self.pidfd], [], [], 0)
        return not readable

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def peer_cred(sock: socket.socket) -> PeerCred:
    """Read SO_PEERCRED (and SO_PEERPIDFD where available) of a connected unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    pidfd: int | None
    try:
        pidfd = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD)
    except OSError:
        pidfd = None
    return PeerCred(pid, uid, gid, pidfd)


def tcp_peer_pid(peer: tuple[str, int], local: tuple[str, int]) -> tuple[int, int] | None:
    """(pid, uid) of the loopback process whose socket is ``peer`` connected to ``local``."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return None
    for conn in conns:
        if (
            conn.pid
            and conn.laddr
            and conn.raddr
            and (conn.laddr.ip, conn.laddr.port) == peer
            and conn.raddr.port == local[1]
        ):
            try:
                return conn.pid, psutil.Process(conn.pid).uids().real
            except psutil.Error:
                return None
    return None


class ProcessProbe(Protocol):
    """Reads the chain of processes from a pid up to init, nearest first."""

    def chain(self, pid: int) -> list[ProcInfo]: ...


class PsutilProbe:
    """The real probe: psutil over /proc."""

    def __init__(self, max_depth: int = 64) -> None:
        self._max_depth = max_depth

    def _info(self, proc: psutil.Process, with_env: bool) -> ProcInfo | None:
        try:
            with proc.oneshot():
                cmdline = proc.cmdline()
                try:
                    exe = proc.exe()
                except psutil.Error:
                    exe = ""
                try:
                    cwd: str | None = proc.cwd()
                except psutil.Error:
                    cwd = None
                env: dict[str, str] = {}
                if with_env:
                    try:
                        env = proc.environ()
                    except psutil.Error:
                        env = {}
                return ProcInfo(
                    pid=proc.pid,
                    create_time=proc.create_time(),
                    name=proc.name(),
                    argv0=cmdline[0] if cmdline else "",
                    exe=exe,
                    cwd=cwd,
                    environ=env,
                )
        except psutil.Error:
            return None

    def chain(self, pid: int) -> list[ProcInfo]:
        out: list[ProcInfo] = []
        try:
            proc: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            return out
        while proc is not None and len(out) < self._max_depth:
            # Only the peer's own environment matters (CLAUDE_CODE_SESSION_ID, DESIGN.md).
            info = self._info(proc, with_env=not out)
            if info is None:
                break
            out.append(info)
            if proc.pid <= 1:
                break
            try:
                proc = proc.parent()
            except psutil.Error:
                break
        return out
