"""agentcoord's own place among Claude Code's peers: a socket in the sessions' socket dir and a
registry record for it (docs/claude-code.md "The native inbox").

A program that is not Claude Code can be a peer: a record ``sessions/<pid>.json`` naming a live
pid and a socket that accepts connections is listed by every session's ``ListAgents``, and a
session's ``SendMessage`` to it writes to that socket. The daemon keeps exactly one such record,
for its own pid, named :data:`ROUTER_NAME`; its socket is where sessions send idle notices,
delivery receipts and messages for the agents that are not Claude Code sessions. The record
carries :data:`OWNER_MARK`, so a record a crashed daemon left behind is recognised and swept at
the next start.

Who wrote a frame is read from the connection (``SO_PEERCRED``), never from the frame: only
connections from this user's processes are read at all, sizes and counts are bounded, and a
peer that writes too much too fast is cut off.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentcoord.claude.inbox.frames import MAX_LINE, FrameError, Incoming, parse_line
from agentcoord.claude.inbox.registry import (
    MAX_RECORD_BYTES,
    PEER_PROTOCOL,
    proc_start,
    sessions_dir,
)
from agentcoord.kernel.files import write_atomic
from agentcoord.kernel.tasks import TaskSet

__all__ = ["OWNER_MARK", "ROUTER_NAME", "Frame", "PeerSocket", "sweep_records"]

log = logging.getLogger(__name__)

ROUTER_NAME = "agentcoord"  # how sessions' ListAgents shows the daemon
OWNER_MARK = "agentcoord"  # the record's ``entrypoint``: a record of ours, dead or alive
_FRAMES_PER_CONNECTION = 8
_CONNECTION_S = 5.0  # a peer writes its frames and half-closes well within this
_MAX_CONNECTIONS = 64
_BURST = 30  # frames per peer process before the rate applies (Claude Code's own numbers)
_RATE = 0.5  # frames per second after the burst

Frame = Callable[[int, Incoming], Awaitable[None]]


def _peer_cred(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a unix connection."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid


@dataclass
class _Bucket:
    tokens: float = float(_BURST)
    at: float = field(default_factory=time.monotonic)

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(float(_BURST), self.tokens + (now - self.at) * _RATE)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


def _private_dir(path: Path, uid: int) -> None:
    """Make ``path`` (0700) or check that the one there is this user's and not shared."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
        raise PermissionError(f"{path} is not a private directory of this user")


def sweep_records(claude_dir: Path, uid: int, keep: int | None = None) -> list[int]:
    """Remove records (and their sockets) that a daemon left behind: ours by the owner mark,
    whose pid is gone or is another process now. The pids swept."""
    swept: list[int] = []
    folder = sessions_dir(claude_dir)
    try:
        names = os.listdir(folder)
    except OSError:
        return swept
    for name in names:
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        pid = int(name[:-5])
        if pid == keep:
            continue
        path = folder / name
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > MAX_RECORD_BYTES:
                continue
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("entrypoint") != OWNER_MARK:
            continue
        started = proc_start(pid)
        if started is not None and started == str(data.get("procStart")):
            continue  # a live daemon's (another state dir's): not ours to touch
        sock = data.get("messagingSocketPath")
        with contextlib.suppress(OSError):
            path.unlink()
        if isinstance(sock, str) and os.path.isabs(sock):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(sock).st_mode):
                    os.unlink(sock)
        swept.append(pid)
    return swept


class PeerSocket:
    """Async context manager: the daemon's socket and its registry record.

    ``on_frame(pid, frame)`` is called for every frame a same-user peer writes, with the
    writer's pid from the connection."""

    def __init__(
        self, claude_dir: Path, socks_dir: Path, on_frame: Frame, *, uid: int | None = None
    ) -> None:
        self._claude_dir = claude_dir
        self._uid = os.getuid() if uid is None else uid
        self._pid = os.getpid()
        self.path = socks_dir / f"{self._pid}.sock"
        self._record = sessions_dir(claude_dir) / f"{self._pid}.json"
        self._on_frame = on_frame
        self._server: asyncio.AbstractServer | None = None
        self._tasks = TaskSet("native inbox socket")
        self._buckets: dict[int, _Bucket] = {}
        self._open = 0
        self.refused = 0  # connections from another user, or over a bound (tests read it)

    @property
    def address(self) -> str:
        return f"uds:{self.path}"

    async def __aenter__(self) -> PeerSocket:
        swept = sweep_records(self._claude_dir, self._uid, keep=self._pid)
        if swept:
            log.info("swept registry records a stopped daemon left: %s", swept)
        _private_dir(self.path.parent, self._uid)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # our pid's path: a socket of a process that is gone
        await self._tasks.__aenter__()
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.path), limit=MAX_LINE + 1
        )
        os.chmod(self.path, 0o600)
        _private_dir(sessions_dir(self._claude_dir), self._uid)
        self._write_record()
        log.info("listening for Claude Code sessions on %s", self.path)
        return self

    async def __aexit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._record.unlink()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        await self._tasks.__aexit__(*exc)

    def _write_record(self) -> None:
        now = int(time.time() * 1000)
        record = {
            "pid": self._pid,
            "cwd": str(Path.home()),
            "startedAt": now,
            "procStart": proc_start(self._pid),
            "version": "agentcoord",
            "peerProtocol": PEER_PROTOCOL,
            "peerFeatures": ["notify_idle"],  # we are sent receipts and idle notices
            "kind": "interactive",
            "entrypoint": OWNER_MARK,
            "messagingSocketPath": str(self.path),
            "name": ROUTER_NAME,
            "nameSource": "agentcoord",
            "status": "idle",
            "updatedAt": now,
        }
        write_atomic(self._record, json.dumps(record), mode=0o600, durable=False)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = writer.get_extra_info("socket")
            pid, uid = _peer_cred(sock)
            if uid != self._uid or self._open >= _MAX_CONNECTIONS:
                self.refused += 1
                log.warning("refused a connection on the native inbox socket (pid %d)", pid)
                return
            self._open += 1
            try:
                async with asyncio.timeout(_CONNECTION_S):
                    await self._read(pid, reader)
            finally:
                self._open -= 1
        except (TimeoutError, OSError) as exc:
            log.info("a native inbox connection ended early: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _read(self, pid: int, reader: asyncio.StreamReader) -> None:
        bucket = self._buckets.setdefault(pid, _Bucket())
        if len(self._buckets) > 4 * _MAX_CONNECTIONS:  # forget the oldest peers' buckets
            for old in list(self._buckets)[: len(self._buckets) // 2]:
                if old != pid:
                    del self._buckets[old]
        for _ in range(_FRAMES_PER_CONNECTION):
            try:
                line = await reader.readline()
            except ValueError:  # over the line bound: the stream cannot be resynchronised
                self.refused += 1
                log.warning("pid %d wrote a line over %d bytes: connection cut", pid, MAX_LINE)
                return
            if not line.strip():
                if reader.at_eof():
                    return
                continue
            if not bucket.take():
                self.refused += 1
                log.warning("pid %d writes frames too fast: connection cut", pid)
                return
            try:
                frame = parse_line(line)
            except FrameError as exc:
                log.info("ignored a frame from pid %d: %s", pid, exc)
                continue
            try:
                await self._on_frame(pid, frame)
            except Exception:
                log.exception("handling a frame from pid %d failed", pid)
