"""One unix socket the daemon listens on for Claude Code's peers (docs/claude-code.md "The
native inbox"): same-user connections only, bounded lines, frames and rate, each frame handed
on with the connection it came on.

Who wrote a frame is read from the connection (``SO_PEERCRED``, and through :attr:`Conn.who`
the daemon's own identification of the process), never from the frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.claude.inbox.frames import MAX_LINE, FrameError, Incoming, parse_line
from agentcoord.identity.procprobe import peer_cred

__all__ = ["Conn", "Identify", "Limits", "Listener", "OnFrame"]

log = logging.getLogger(__name__)

_FRAMES_PER_CONNECTION = 8
_CONNECTION_S = 5.0  # a peer writes its frames and half-closes well within this
_MAX_CONNECTIONS = 64
_BURST = 30  # frames per peer process before the rate applies (Claude Code's own numbers)
_RATE = 0.5  # frames per second after the burst

# The daemon's identification of the process at the other end of a connected socket (a
# session or runner Caller), None when it is no agent's.
Identify = Callable[[socket.socket], Awaitable[Any]]


def peer_of(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a unix connection (the process probe's
    peer credentials; the connection is served while that process lives)."""
    cred = peer_cred(sock)
    cred.close()
    return cred.pid, cred.uid


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


class Limits:
    """What every listener of one daemon shares: the rate per peer process, the open
    connections, and a count of what was refused (tests and the log read it)."""

    def __init__(self, uid: int, max_connections: int = _MAX_CONNECTIONS) -> None:
        self.uid = uid
        self.max_connections = max_connections
        self.open = 0
        self.refused = 0
        self._buckets: dict[int, _Bucket] = {}

    def bucket(self, pid: int) -> _Bucket:
        if pid not in self._buckets and len(self._buckets) >= 4 * self.max_connections:
            for old in list(self._buckets)[: len(self._buckets) // 2]:
                del self._buckets[old]  # the least recently seen peers start afresh
        return self._buckets.setdefault(pid, _Bucket())


@dataclass
class Conn:
    """One accepted connection: the writer's pid and, on demand, who it is."""

    pid: int
    sock: socket.socket
    identify: Identify
    _who: Any = None
    _asked: bool = False

    async def who(self) -> Any:
        """The daemon's Caller for the writer (once per connection), or None."""
        if not self._asked:
            self._asked = True
            self._who = await self.identify(self.sock)
        return self._who


OnFrame = Callable[[Conn, "str | None", Incoming], Awaitable[None]]


class Listener:
    """Async context manager: a 0600 socket at ``path``; ``on_frame(conn, box, frame)`` for
    each frame, ``box`` being the agent this socket is the mailbox of (None: the daemon's
    own)."""

    def __init__(
        self,
        path: Path,
        box: str | None,
        on_frame: OnFrame,
        identify: Identify,
        limits: Limits,
    ) -> None:
        self.path = path
        self.box = box
        self._on_frame = on_frame
        self._identify = identify
        self._limits = limits
        self._server: asyncio.AbstractServer | None = None

    @property
    def address(self) -> str:
        return f"uds:{self.path}"

    async def __aenter__(self) -> Listener:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # named by our pid: a socket of a process that is gone
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.path), limit=MAX_LINE + 1
        )
        os.chmod(self.path, 0o600)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self._limits
        try:
            sock = writer.get_extra_info("socket")
            pid, uid = peer_of(sock)
            if uid != limits.uid or limits.open >= limits.max_connections:
                limits.refused += 1
                log.warning("refused a connection on %s (pid %d, uid %d)", self.path, pid, uid)
                return
            limits.open += 1
            try:
                async with asyncio.timeout(_CONNECTION_S):
                    await self._read(Conn(pid, sock, self._identify), reader)
            finally:
                limits.open -= 1
        except (TimeoutError, OSError) as exc:
            log.info("a native inbox connection ended early: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _read(self, conn: Conn, reader: asyncio.StreamReader) -> None:
        bucket = self._limits.bucket(conn.pid)
        for _ in range(_FRAMES_PER_CONNECTION):
            try:
                line = await reader.readline()
            except ValueError:  # over the line bound: the stream cannot be resynchronised
                self._limits.refused += 1
                log.warning("pid %d wrote a line over %d bytes: cut off", conn.pid, MAX_LINE)
                return
            if not line.strip():
                if reader.at_eof():
                    return
                continue
            if not bucket.take():
                self._limits.refused += 1
                log.warning("pid %d writes frames too fast: cut off", conn.pid)
                return
            try:
                frame = parse_line(line)
            except FrameError as exc:
                log.info("ignored a frame from pid %d: %s", conn.pid, exc)
                continue
            try:
                await self._on_frame(conn, self.box, frame)
            except Exception:
                log.exception("handling a frame from pid %d failed", conn.pid)
