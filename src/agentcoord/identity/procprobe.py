"""The process seam: peer credentials and process ancestry (Linux: SO_PEERCRED, /proc, psutil).

Everything platform-specific about "which process is on the other end" lives here, behind
:class:`ProcessProbe`, so macOS can add LOCAL_PEERPID/getpeereid without touching the tools.

A loopback TCP peer has no SO_PEERCRED: its socket is looked up by its exact 4-tuple with
sock_diag (one netlink request answered from the kernel's hash table, whatever the number of
sockets), which gives its owner uid and inode; the process holding that inode is then found
among the daemon's own uid's processes only, through an index of their socket inodes that a
miss rebuilds once for every caller waiting (docs/security.md "Limits"). A caller that already
knows which processes the peer may be (the http hooks' earlier connections, mcp/http.py) checks
just those first (:func:`peer_among`). This is the daemon's one lookup of a TCP peer's process.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from agentcoord.identity.procinfo import ProcInfo
from agentcoord.kernel.connlimits import ConnLimits
from agentcoord.kernel.lazy import on_first_use

if TYPE_CHECKING:
    import psutil

    from agentcoord.kernel.config import Config
else:  # ~6 ms of imports that the daemon's start-up does not need (agentcoord.kernel.lazy)
    psutil = on_first_use("psutil")

__all__ = [
    "PeerCred",
    "ProcessProbe",
    "PsutilProbe",
    "holds_socket",
    "listener_limits",
    "peer_among",
    "peer_cred",
    "pid_holding",
    "process_started",
    "tcp_peer_pid",
    "tcp_socket",
]

_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)  # Linux >= 6.5


class PeerCred:
    """pid/uid of a unix-socket peer; ``pidfd`` (when the kernel has it) pins the process."""

    def __init__(self, pid: int, uid: int, gid: int, pidfd: int | None) -> None:
        self.pid, self.uid, self.gid, self.pidfd = pid, uid, gid, pidfd

    def still_alive(self) -> bool:
        """False when the pidfd says the peer exited (so its pid may be recycled)."""
        if self.pidfd is None:
            return psutil.pid_exists(self.pid)
        # poll, not select: select() cannot take a descriptor above FD_SETSIZE (1024), and a
        # daemon with many connections holds such pidfds.
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        return not poller.poll(0)

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


# sock_diag (linux/sock_diag.h, linux/inet_diag.h): one socket looked up by its 4-tuple, in
# microseconds, where /proc/net/tcp is generated whole on every read (milliseconds on a busy
# host, and seconds with thousands of sockets).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NO_COOKIE = b"\xff" * 8  # INET_DIAG_NOCOOKIE, twice
_DIAG_UID_INODE = 16 + 4 + 48 + 12  # nlmsghdr, inet_diag_msg's head, sockid, three counters


def tcp_socket(peer: tuple[str, int], local: tuple[str, int]) -> tuple[int, int] | None:
    """(inode, uid) of the peer's end of the TCP connection ``peer`` -> ``local``, or None
    when there is no such socket."""
    family = socket.AF_INET6 if ":" in peer[0] else socket.AF_INET
    try:
        src = socket.inet_pton(family, peer[0]).ljust(16, b"\0")
        dst = socket.inet_pton(family, local[0]).ljust(16, b"\0")
        sockid = struct.pack("!HH16s16s", peer[1], local[1], src, dst)
        sockid += struct.pack("=I", 0) + _NO_COOKIE
        req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        head = struct.pack("=IHHII", 16 + len(req), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    except (OSError, ValueError):
        return None
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.sendto(head + req, (0, 0))
            data = nl.recv(65536)
    except OSError:  # no sock_diag here (a kernel without inet_diag): the table, read once
        return _from_proc_net(family, src, dst, peer[1], local[1])
    if len(data) < _DIAG_UID_INODE + 8:
        return None
    (kind,) = struct.unpack_from("=H", data, 4)
    if kind != _SOCK_DIAG_BY_FAMILY:
        return None  # NLMSG_ERROR: no such socket
    uid, inode = struct.unpack_from("=II", data, _DIAG_UID_INODE)
    return inode, uid


def _from_proc_net(
    family: int, src: bytes, dst: bytes, sport: int, dport: int
) -> tuple[int, int] | None:
    """The same lookup in /proc/net/tcp{,6}, whose addresses are the kernel's 32-bit words in
    host order, printed in hex."""
    width = 4 if family == socket.AF_INET else 16

    def hexaddr(addr: bytes, port: int) -> str:
        words = [addr[i : i + 4] for i in range(0, width, 4)]
        return "".join(f"{int.from_bytes(w, 'little'):08X}" for w in words) + f":{port:04X}"

    want = (hexaddr(src, sport), hexaddr(dst, dport))
    table = "/proc/net/tcp" if family == socket.AF_INET else "/proc/net/tcp6"
    try:
        with open(table) as f:
            next(f, None)
            for line in f:
                cols = line.split()
                if len(cols) > 9 and (cols[1], cols[2]) == want:
                    return int(cols[9]), int(cols[7])
    except (OSError, ValueError):
        pass
    return None


class _SocketIndex:
    """Socket inode -> (pid, fd) over the processes of one uid; rebuilt on a miss, once for all
    the lookups that missed while it was being rebuilt."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_inode: dict[int, tuple[int, str]] = {}
        self._generation = 0

    def find(self, inode: int, uid: int) -> int | None:
        with self._lock:
            seen = self._generation
            hit = self._check(inode)
        if hit is not None:
            return hit
        with self._lock:
            if self._generation == seen:  # nobody rebuilt it while we waited: rebuild
                self._by_inode = _scan(uid)
                self._generation += 1
            return self._check(inode)

    def _check(self, inode: int) -> int | None:
        """The pid holding ``inode``, checked on its fd link now (the index may be stale)."""
        found = self._by_inode.get(inode)
        if found is None:
            return None
        pid, fd = found
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                return pid
        except OSError:
            pass
        return None


def _scan(uid: int) -> dict[int, tuple[int, str]]:
    out: dict[int, tuple[int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{name}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out[int(link[8:-1])] = (int(name), fd)
    return out


_INDEX = _SocketIndex()


def pid_holding(inode: int, uid: int) -> int | None:
    """The pid of a process of ``uid`` that holds the socket ``inode``, or None."""
    return _INDEX.find(inode, uid)


def tcp_peer_pid(peer: tuple[str, int], local: tuple[str, int]) -> tuple[int, int] | None:
    """(pid, uid) of the loopback process whose socket is ``peer`` connected to ``local``.

    Only the daemon's own uid's processes are searched: another uid may not use the daemon
    (its caller is refused on its uid, with no search), and a daemon that is not root cannot
    read another uid's descriptors anyway."""
    found = tcp_socket(peer, local)
    if found is None:
        return None
    inode, uid = found
    if uid != os.geteuid():
        return None
    pid = pid_holding(inode, uid)
    return None if pid is None else (pid, uid)


def holds_socket(pid: int, inode: int) -> bool:
    """Whether the process ``pid`` holds the socket ``inode`` now (one walk of its fd table)."""
    link = f"socket:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                return True
        except OSError:
            continue
    return False


def process_started(pid: int) -> float | None:
    """The start time of the process ``pid`` (psutil's ``create_time``), None when it is gone."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def peer_among(
    peer: tuple[str, int], local: tuple[str, int], known: Iterable[tuple[int, float, int]]
) -> int | None:
    """The pid among ``known`` (pid, start time, uid) whose process holds the peer's end of the
    TCP connection ``peer`` -> ``local`` now, and is the same process (its start time) as when
    it was known; None when none does (then :func:`tcp_peer_pid` searches them all)."""
    found = tcp_socket(peer, local)
    if found is None:
        return None
    inode, uid = found
    for pid, started, owner in known:
        if owner == uid and holds_socket(pid, inode) and process_started(pid) == started:
            return pid
    return None


def listener_limits(cfg: Config) -> dict[str, Any]:
    """An HTTP listener's connection limits from ``cfg`` and how it reads a peer's uid, as
    keyword arguments of :class:`agentcoord.kernel.httpserver.HttpServer`."""

    def peer_uid(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
        found = tcp_socket(peer, local)
        return None if found is None else found[1]

    limits = ConnLimits(
        owner_uid=os.geteuid(),
        owner=max(1, cfg.http_conns_owner),
        per_uid=max(1, cfg.http_conns_per_uid),
        other_uids=max(1, cfg.http_conns_other_uids),
        idle_timeout=float(max(1, cfg.http_idle_timeout)),
        header_timeout=float(max(1, cfg.http_header_timeout)),
        body_timeout=float(max(1, cfg.http_body_timeout)),
    )
    return {"limits": limits, "peer_uid": peer_uid}


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
                    args=tuple(cmdline),
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
            # Only the peer's own environment matters (CLAUDE_CODE_SESSION_ID: docs/mcp.md).
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
