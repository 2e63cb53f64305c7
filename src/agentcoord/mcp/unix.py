"""The unix-socket MCP transport: newline JSON, one MCP session per connection.

The socket is created 0600 inside a 0700 runtime dir; each connection's caller is resolved once
from SO_PEERCRED (docs/security.md "By transport"). Requests on one connection run concurrently (a
blocking ``ask`` must not stall a ``ping``), replies are written whole, one write each. A peer that
maps to no agent is anonymous until an ``agentcoord/login`` with the human token.

What a connection can make the daemon hold is bounded (docs/security.md "Limits"): at most
``max_inflight`` of its requests run at once, and its replies wait, unwritten, while more than
``_OUTBOUND_LIMIT`` bytes of earlier ones are still unsent; past either, the connection is not
read until it drains, so a client that sends and never reads is held back by its own socket
buffer (backpressure), not by the daemon's memory.

Stopping drains, as uvicorn's ``Server.shutdown`` does (docs/architecture.md "Stopping"): the
listener closes and no connection reads another request; the requests in flight get
``DRAIN_TIMEOUT`` to be answered; those still running then (a long ``ask``, an ``inbox`` wait) are
cancelled and answered with a "daemon is stopping" error; then the connections close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcoord.claude.push import opted_in
from agentcoord.errors import IdentityError, PeerGone, ProtocolError
from agentcoord.identity.callers import IdentityResolver
from agentcoord.identity.procprobe import peer_cred
from agentcoord.kernel.framing import OVERSIZE, LineSplitter
from agentcoord.kernel.jsonrpc import INVALID_REQUEST, decode, error_response
from agentcoord.mcp.connections import Connections
from agentcoord.mcp.core import ACCESS_DENIED, McpCore, McpSession
from agentcoord.mcp.hangup import cancel_on_hangup

__all__ = ["UnixListener"]

log = logging.getLogger(__name__)

LOGIN = "agentcoord/login"  # the human's proof on this transport (docs/security.md)
# JSON-RPC 2.0 reserves -32000..-32099 for server errors: the request was cut off by a stop.
STOPPING = -32002
# In-flight requests get this long to finish at stop; the HTTP port drains alongside, and both
# fit lifecycle's 4.5 s stop deadline (a SIGTERM stop ends within 5 s).
DRAIN_TIMEOUT = 2.0
_CANCEL_WAIT = 0.5  # then the cut-off requests get this long to send their error and end
_CUT_OFF = f"the daemon is stopping: the request did not finish within {DRAIN_TIMEOUT:g} s"
# Bytes of replies a connection may have queued unsent before its next reply waits (above the
# transport's 64 KiB high-water mark, so each wait is on the transport resuming).
_OUTBOUND_LIMIT = 1 << 20


@dataclass
class _Conn:
    """One connection as the stop sees it: its request reader and its MCP session."""

    reading: asyncio.Task[None] | None = None  # None while the peer is being identified
    session: McpSession | None = None


class UnixListener:
    """Async context manager serving the MCP core on a unix socket."""

    def __init__(
        self,
        path: Path,
        core: McpCore,
        identity: IdentityResolver,
        connections: Connections,
        max_frame: int,
        *,
        inherited: socket.socket | None = None,
    ) -> None:
        self._path = path
        self._inherited = inherited  # socket activation: systemd owns the socket file
        self._core = core
        self._identity = identity
        self._connections = connections
        self._max_frame = max_frame
        self._server: asyncio.Server | None = None
        self._conns: dict[asyncio.Task[Any], _Conn] = {}
        self._stopping = False
        self._cutting = False  # past the drain: a cancelled request is answered STOPPING

    async def __aenter__(self) -> UnixListener:
        if self._core.push is not None:
            # Channel push writes on these connections only: it lives and stops with them.
            await self._core.push.__aenter__()
        try:
            await self._listen()
        except BaseException:
            if self._core.push is not None:
                await self._core.push.__aexit__(None, None, None)
            raise
        return self

    async def _listen(self) -> None:
        _raise_nofile_limit()
        if self._inherited is not None:
            self._server = await asyncio.start_unix_server(self._serve, sock=self._inherited)
            return
        # We hold the runtime-dir lock, so a socket file here is a dead daemon's: remove it.
        with contextlib.suppress(FileNotFoundError):
            self._path.unlink()
        old = os.umask(0o177)  # the socket is born 0600; no window with wider permissions
        try:
            # A burst of connects waits in the kernel's queue, not refused at 100 (asyncio's
            # default backlog).
            self._server = await asyncio.start_unix_server(
                self._serve, path=str(self._path), backlog=socket.SOMAXCONN
            )
        finally:
            os.umask(old)
        os.chmod(self._path, 0o600)

    async def relisten(self) -> bool:
        """Bind the socket file again (its dir was removed, docs/daemon.md "The runtime
        dir"): new connections arrive there, open ones go on. False when systemd owns the
        socket or we are stopping."""
        if self._inherited is not None or self._stopping:
            return False
        old = self._server
        await self._listen()
        if old is not None:
            old.close()  # its file is gone: nothing reaches it any more
        return True

    def stop_accepting(self) -> None:
        """Close the listener and stop reading requests; those in flight go on. Idempotent."""
        if self._stopping:
            return
        self._stopping = True
        if self._server is not None:
            self._server.close()
        for task, conn in self._conns.items():
            self._stop_reading(task, conn)

    def _stop_reading(self, task: asyncio.Task[Any], conn: _Conn) -> None:
        if conn.reading is not None:
            conn.reading.cancel("the daemon is stopping: no new requests")
        else:  # still identifying the peer, or refusing it: nothing in flight
            task.cancel("the daemon is stopping")

    async def __aexit__(self, *exc: object) -> None:
        self.stop_accepting()
        if self._conns:
            # Each connection ends once its requests in flight are answered.
            _, late = await asyncio.wait(list(self._conns), timeout=DRAIN_TIMEOUT)
            if late:
                self._cut_off(late)
                _, stuck = await asyncio.wait(late, timeout=_CANCEL_WAIT)
                if stuck:  # a peer that does not read its error reply; the stop goes on
                    log.warning("%d unix connection(s) did not close after a cancel", len(stuck))
        if self._inherited is None:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
        if self._core.push is not None:
            await self._core.push.__aexit__(None, None, None)

    def _cut_off(self, late: set[asyncio.Task[Any]]) -> None:
        running = sum(
            len(c.session.inflight) for t in late if (c := self._conns.get(t)) and c.session
        )
        log.warning(
            "%d unix request(s) still running after the %.1fs drain: cutting them off",
            running,
            DRAIN_TIMEOUT,
        )
        self._cutting = True
        for task in late:
            task.cancel("the daemon is stopping: the drain ended")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self._stopping:  # accepted just as the listener closed
            writer.close()
            return
        conn = _Conn()
        self._conns[task] = conn
        self._connections.unix += 1
        try:
            await self._serve_conn(reader, writer, conn)
        except ConnectionError:
            pass
        except Exception:
            log.exception("unix connection failed")
        # A CancelledError (the daemon stopping) propagates: this task ends cancelled.
        finally:
            self._connections.unix -= 1
            del self._conns[task]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_conn(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Conn
    ) -> None:
        sock: socket.socket = writer.get_extra_info("socket")
        cred = peer_cred(sock)

        async def send(reply: Any) -> None:
            if reply is None:
                return
            data = self._core.encode_reply(reply) + b"\n"
            # The outbound queue is bounded: wait while earlier replies are still unsent.
            while writer.transport.get_write_buffer_size() > _OUTBOUND_LIMIT:
                if writer.is_closing():
                    raise ConnectionResetError("the connection is closed")
                await writer.drain()
            if writer.is_closing():  # the peer reset it while this reply was being made
                raise ConnectionResetError("the connection is closed")
            # One write() per reply keeps replies whole (the transport buffers it entire, with
            # no await in between); concurrent drain() waiters are fine, so no lock.
            writer.write(data)
            await writer.drain()

        async def push(note: Any) -> None:
            """A channel notification (claude/push.py): a line like a reply, so it never
            splits one; and an error, not a silent drop, once the connection is closing, since
            the push acknowledges what it wrote."""
            if writer.is_closing():
                raise ConnectionResetError("the connection is closed")
            await send(note)

        try:
            try:
                caller = await self._identity.from_unix(cred)
            except IdentityError as exc:
                log.warning("refused unix peer pid %s uid %s: %s", cred.pid, cred.uid, exc)
                gone = isinstance(exc, PeerGone)
                await self._refuse(reader, send, str(exc), cred.pid if gone else None)
                return
            # Read while the pidfd pins the peer: its launcher's opt-in to channel push.
            opt_in = (
                caller.kind == "session"
                and self._core.push is not None
                and opted_in(cred.pid)
                and cred.still_alive()
            )
        finally:
            cred.close()
        session = conn.session = McpSession(caller=caller, send=push, push_opt_in=opt_in)
        try:
            await self._session(reader, sock, session, send, conn)
        finally:
            self._core.closed(session)
            # A refused login with nothing after it is audited now (identity/callers.py).
            self._identity.hung_up(session.caller)

    async def _session(
        self,
        reader: asyncio.StreamReader,
        sock: socket.socket,
        session: McpSession,
        send: Any,
        conn: _Conn,
    ) -> None:
        async with asyncio.TaskGroup() as tg:
            # Reading is its own task so that a stop can end it alone, leaving the requests
            # in flight to finish; a cancelled child does not cancel the group.
            conn.reading = tg.create_task(self._read(reader, session, send, tg))
            if self._stopping:  # the stop came while the peer was being identified
                conn.reading.cancel("the daemon is stopping: no new requests")
            await asyncio.wait([conn.reading])
            await cancel_on_hangup(sock, lambda: list(session.inflight.values()))

    async def _read(
        self, reader: asyncio.StreamReader, session: McpSession, send: Any, tg: asyncio.TaskGroup
    ) -> None:
        splitter = LineSplitter(self._max_frame)
        slots = asyncio.Semaphore(self._core.limits.max_inflight)
        with contextlib.suppress(ConnectionError):  # a reset: the hang-up watch cancels the rest
            await self._read_lines(reader, splitter, session, send, tg, slots)

    async def _read_lines(
        self,
        reader: asyncio.StreamReader,
        splitter: LineSplitter,
        session: McpSession,
        send: Any,
        tg: asyncio.TaskGroup,
        slots: asyncio.Semaphore,
    ) -> None:
        while data := await reader.read(65536):
            for line in splitter.feed(data):
                if line is OVERSIZE:
                    too_big = ProtocolError(
                        INVALID_REQUEST, f"Request too large: limit {self._max_frame} bytes"
                    )
                    await send(error_response(None, too_big))
                    continue
                assert isinstance(line, bytes)
                try:
                    value = decode(line)
                except ProtocolError as exc:
                    await send(error_response(None, exc))
                    continue
                if isinstance(value, dict) and value.get("method") == LOGIN:
                    # Inline, not a task: the requests after it on this connection must
                    # see the caller it leaves behind.
                    await send(self._login(value, session))
                    continue
                if isinstance(value, dict) and value.get("method") == "notifications/cancelled":
                    # Inline and slot-free: a client at its in-flight limit can still cancel.
                    await self._core.handle_payload(value, session)
                    continue
                # Past the connection's in-flight limit or its caller's, nothing more is read
                # until a request ends (backpressure; docs/security.md "Limits").
                await slots.acquire()
                try:
                    await self._core.slots.acquire(session.caller.agent)
                except BaseException:
                    slots.release()
                    raise
                self._start(tg, value, session, send, slots)

    def _login(self, value: dict[str, Any], session: McpSession) -> dict[str, Any]:
        """``agentcoord/login {token}``: the CLI's proof that it is the human (the shim never
        sends it). A refusal leaves the connection's caller as it was."""
        msg_id = value.get("id")
        reply_id = msg_id if isinstance(msg_id, str | int) else None
        params = value.get("params")
        token = params.get("token") if isinstance(params, dict) else None
        try:
            session.caller = self._identity.login(session.caller, token)
        except IdentityError as exc:
            log.warning("refused human login from pid %s: %s", session.caller.pid, exc)
            return error_response(reply_id, ProtocolError(ACCESS_DENIED, f"Access denied: {exc}"))
        return {"jsonrpc": "2.0", "id": reply_id, "result": {"agent": session.caller.agent}}

    def _start(
        self,
        tg: asyncio.TaskGroup,
        value: Any,
        session: McpSession,
        send: Any,
        slots: asyncio.Semaphore,
    ) -> None:
        """Run one request. It holds a slot of its connection until its reply is written, and
        one of its caller (both taken by the reader) only until its reply is made: a reply
        waiting on a client that does not read holds back that connection, never the caller's
        other connections (docs/security.md "Limits")."""
        msg_id = value.get("id") if isinstance(value, dict) else None
        agent = session.caller.agent
        caller_slot = [True]  # still held

        def release_caller_slot() -> None:
            if caller_slot[0]:
                caller_slot[0] = False
                self._core.slots.release(agent)

        async def run() -> None:
            try:
                reply = await self._core.handle_payload(value, session)
                release_caller_slot()
                with contextlib.suppress(ConnectionError):  # the peer is gone: nobody to tell
                    await send(reply)
            except asyncio.CancelledError:
                # Cancelled by notifications/cancelled or a hang-up, the spec says send nothing;
                # cut off by a stop, the caller learns why instead of seeing the socket close.
                if self._cutting and isinstance(msg_id, str | int):
                    await send(error_response(msg_id, ProtocolError(STOPPING, _CUT_OFF)))
                raise
            finally:
                if isinstance(msg_id, str | int):
                    session.inflight.pop(msg_id, None)

        def ended(_: asyncio.Task[None]) -> None:
            # A callback, not a finally: it runs also for a task cancelled before it started.
            slots.release()
            release_caller_slot()

        task = tg.create_task(run())
        task.add_done_callback(ended)
        if isinstance(msg_id, str | int) and not isinstance(msg_id, bool):
            session.inflight[msg_id] = task

    async def _refuse(
        self, reader: asyncio.StreamReader, send: Any, why: str, gone: int | None = None
    ) -> None:
        """Answer every request on a refused connection with an access error, then close.
        ``gone``: the pid of a peer that left before it could be identified, whose login or
        human-only call is audited (docs/security.md "When the proof is taken")."""
        splitter = LineSplitter(self._max_frame)
        data = await reader.read(65536)
        values: list[Any] = []
        for line in splitter.feed(data):
            value = None
            if isinstance(line, bytes):
                with contextlib.suppress(ProtocolError):
                    value = decode(line)
            values.append(value)
        if gone is not None:
            self._identity.refused_gone(gone, values)
        for value in values:
            msg_id = value.get("id") if isinstance(value, dict) else None
            err = ProtocolError(ACCESS_DENIED, f"Access denied: {why}")
            await send(error_response(msg_id if isinstance(msg_id, str | int) else None, err))


def _raise_nofile_limit() -> None:
    """Raise the soft descriptor limit to the hard one (systemd's default soft limit is 1024):
    the connection budgets (docs/security.md "Limits"), not the soft limit, bound the
    descriptors, and the daemon waits on them with epoll and poll, never select()."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError):
            log.debug("could not raise RLIMIT_NOFILE from %s to %s", soft, hard, exc_info=True)
