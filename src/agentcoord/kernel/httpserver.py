"""A small HTTP/1.1 server on h11: parsing is h11's, this module only moves bytes.

Handlers take an :class:`HttpRequest` and return an :class:`HttpResponse`, whose body is bytes
or an async iterator of chunks (SSE, watch streams). Limits (header size, body size, idle time)
are enforced here so no handler sees an oversize or half-sent request. The head and the body
each have a deadline for the whole of it, not per read, so a peer that sends a byte now and
then cannot hold a connection; with :class:`ConnLimits`, each local user (the peer's uid) may
hold only so many connections (docs/security.md "Limits").

Stopping follows uvicorn's ``Server.shutdown`` (docs/architecture.md "Stopping"): stop accepting and
close idle keep-alive connections, let the requests being answered finish under a bound, then cancel
what is left (streams, and requests past the bound, which get a 503 saying why).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl as _ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import h11

from agentcoord.errors import (
    AgentCoordError,
    IdentityError,
    InvalidArguments,
    NotFound,
    ProtocolError,
)
from agentcoord.kernel.connlimits import ConnBudget, ConnLimits

__all__ = [
    "ConnLimits",
    "HttpRequest",
    "HttpResponse",
    "HttpServer",
    "PeerUid",
    "json_response",
    "status_for",
]

log = logging.getLogger(__name__)

_HEADER_LIMIT = 64 * 1024
_HEADER_TIMEOUT = 10.0
_IDLE_TIMEOUT = 75.0
_BODY_TIMEOUT = 30.0
_LINGER_BYTES = 64 * 1024 * 1024
# In-flight requests get this long to finish at stop: with the unix socket's drain, which runs
# alongside, it fits lifecycle's 4.5 s stop deadline (a SIGTERM stop ends within 5 s).
DRAIN_TIMEOUT = 2.0
_CANCEL_WAIT = 0.5  # then the cancelled rest (streams, overdue requests) gets this long to end


@dataclass
class ConnState:
    """Per-connection memory (for instance the resolved caller, reused across keep-alive)."""

    peer: tuple[str, int]
    local: tuple[str, int]
    values: dict[str, Any] = field(default_factory=dict)
    uid: int | None = None  # the peer's uid, when the server looks it up (``peer_uid``)


@dataclass
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    conn: ConnState

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query, keep_blank_values=True)


@dataclass
class HttpResponse:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: AsyncIterator[bytes] | None = None


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]
# The uid owning the peer's end of a connection (peer, local), or None when it cannot be read.
PeerUid = Callable[[tuple[str, int], tuple[str, int]], "int | None"]


def json_response(
    status: int, body: bytes, extra: list[tuple[str, str]] | None = None
) -> HttpResponse:
    return HttpResponse(status, body, [("content-type", "application/json"), *(extra or [])])


def status_for(exc: BaseException) -> int:
    """The one mapping from an agentcoord error to an HTTP status code."""
    if isinstance(exc, IdentityError):
        return 403
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, InvalidArguments | ProtocolError):
        return 400
    if isinstance(exc, AgentCoordError):
        return 409
    return 500


class _BodyTooLarge(Exception):
    pass


@dataclass
class _Conn:
    """What the stop needs to know of one connection: may it be closed now, or must it wait?"""

    writer: asyncio.StreamWriter
    busy: bool = False  # a request's head arrived and it is not yet answered: drained at stop
    streaming: bool = False  # a response with no end of its own (SSE, watch): cancelled at stop


class HttpServer:
    """An async context manager serving ``handler`` on ``host:port`` (optionally TLS)."""

    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        *,
        max_body: int,
        ssl: _ssl.SSLContext | None = None,
        name: str = "http",
        limits: ConnLimits | None = None,
        peer_uid: PeerUid | None = None,
    ) -> None:
        self._handler = handler
        self._budget = ConnBudget(limits) if limits is not None else None
        self._peer_uid = peer_uid
        self._idle_timeout = limits.idle_timeout if limits else _IDLE_TIMEOUT
        self._header_timeout = limits.header_timeout if limits else _HEADER_TIMEOUT
        self._body_timeout = limits.body_timeout if limits else _BODY_TIMEOUT
        self.refused_total = 0
        self._host, self._port = host, port
        self._max_body = max_body
        self._ssl = ssl
        self._name = name
        self._server: asyncio.Server | None = None
        self._conns: dict[asyncio.Task[Any], _Conn] = {}
        self._changed = asyncio.Event()  # a request was answered or a connection went
        self._deadline: float | None = None  # when the drain ends; set once stopping
        self._cutting = False  # past the drain: a cancelled request is answered 503
        self.connections_total = 0

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    async def __aenter__(self) -> HttpServer:
        self._server = await asyncio.start_server(
            self._serve_conn,
            self._host,
            self._port,
            ssl=self._ssl,
            limit=_HEADER_LIMIT,
            backlog=socket.SOMAXCONN,  # a burst of connects waits in the kernel, not refused
        )
        return self

    def stop_accepting(self) -> None:
        """Close the listening socket and the idle connections; requests being answered go on
        until ``__aexit__``'s drain ends, ``DRAIN_TIMEOUT`` from now. Idempotent."""
        if self._server is None or self._deadline is not None:
            return
        self._deadline = asyncio.get_running_loop().time() + DRAIN_TIMEOUT
        self._server.close()
        for task, conn in list(self._conns.items()):
            if not conn.busy and not conn.streaming:
                task.cancel(f"{self._name} server stopping: idle connection closed")

    async def __aexit__(self, *exc: object) -> None:
        if self._server is None:
            return
        self.stop_accepting()
        await self._drain()
        # Long-lived responses (SSE, watches) and overdue requests end with the server.
        for task in list(self._conns):
            task.cancel(f"{self._name} server stopping")
        if self._conns:
            await asyncio.wait(list(self._conns), timeout=_CANCEL_WAIT)
        for conn in list(self._conns.values()):  # a peer that does not read what we send
            conn.writer.transport.abort()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_CANCEL_WAIT):
                await self._server.wait_closed()

    async def _drain(self) -> None:
        """Wait, until the drain's deadline, for every request being answered to be answered."""
        assert self._deadline is not None
        left = self._deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(left, 0.0)):
                while self._busy():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            log.warning(
                "%s: %d request(s) still running after the %.1fs drain: cutting them off",
                self._name,
                self._busy(),
                DRAIN_TIMEOUT,
            )
            self._cutting = True

    def _busy(self) -> int:
        return sum(conn.busy for conn in self._conns.values())

    async def _serve_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self._deadline is not None:  # accepted just as the listener closed
            writer.close()
            return
        peer = writer.get_extra_info("peername") or ("", 0)
        local = writer.get_extra_info("sockname") or ("", 0)
        state = ConnState((peer[0], peer[1]), (local[0], local[1]))
        if self._budget is not None:
            # One exact netlink lookup, microseconds: inline, so no thread pool queue stands
            # between a connection and its admission.
            state.uid = self._peer_uid(state.peer, state.local) if self._peer_uid else None
            refusal = self._budget.admit(state.uid)
            if refusal is not None:
                await self._refuse(writer, refusal)
                return
        track = _Conn(writer)
        self._conns[task] = track
        self.connections_total += 1
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_HEADER_LIMIT)
        try:
            while True:
                if not await self._one_exchange(conn, reader, writer, state, track):
                    break
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    break
                if self._deadline is not None:  # stopping: no next request on this one
                    break
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    break
        except (ConnectionError, TimeoutError, _ssl.SSLError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("%s connection from %s failed", self._name, peer)
        # A CancelledError (the server stopping) propagates: this task ends cancelled.
        finally:
            del self._conns[task]
            if self._budget is not None:
                self._budget.release(state.uid)
            self._changed.set()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _refuse(self, writer: asyncio.StreamWriter, why: str) -> None:
        """Answer a connection over its uid's budget with a 503, unread, and close it."""
        self.refused_total += 1
        if self.refused_total & (self.refused_total - 1) == 0:  # 1st, 2nd, 4th, ...: no flood
            log.warning(
                "%s: refused a connection: %s (%d refused)", self._name, why, self.refused_total
            )
        body = f"{why}\n".encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        with contextlib.suppress(Exception):
            writer.write(head.encode() + body)
        writer.close()  # the few bytes above fit the socket's buffer: nothing waits

    async def _next_event(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        deadline: float | None,
        idle: float | None = None,
    ) -> Any:
        """The next h11 event, all of it by ``deadline`` (loop time); with ``idle``, the
        deadline starts only when the first byte comes, the wait before it bounded by
        ``idle``."""
        loop = asyncio.get_running_loop()
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            if deadline is None:
                assert idle is not None
                async with asyncio.timeout(idle):
                    data = await reader.read(65536)
                deadline = loop.time() + self._header_timeout
            else:
                async with asyncio.timeout_at(deadline):
                    data = await reader.read(65536)
            conn.receive_data(data)

    async def _one_exchange(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: ConnState,
        track: _Conn,
    ) -> bool:
        loop = asyncio.get_running_loop()
        try:
            # Pipelined bytes already read start the head's deadline at once.
            head_by = loop.time() + self._header_timeout if conn.trailing_data[0] else None
            event = await self._next_event(conn, reader, head_by, idle=self._idle_timeout)
            if isinstance(event, h11.ConnectionClosed):
                return False
            if not isinstance(event, h11.Request):
                return False
            track.busy = True  # from here the request is in flight: a stop lets it finish
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
            length = headers.get("content-length")
            max_body = self._body_limit(state)
            if length is not None and length.isdigit() and int(length) > max_body:
                raise _BodyTooLarge
            chunks: list[bytes] = []
            size = 0
            body_by = loop.time() + self._body_timeout
            while True:
                body_event = await self._next_event(conn, reader, body_by)
                if isinstance(body_event, h11.Data):
                    size += len(body_event.data)
                    if size > max_body:
                        raise _BodyTooLarge
                    chunks.append(bytes(body_event.data))
                elif isinstance(body_event, h11.EndOfMessage):
                    break
                else:
                    return False
        except _BodyTooLarge:
            await self._send(conn, writer, _too_large(self._body_limit(state)), close=True)
            await _linger(reader)
            return False
        except h11.RemoteProtocolError as exc:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                body = f"bad request: {exc}\n".encode()
                await self._send(conn, writer, HttpResponse(400, body), close=True)
            return False
        request = HttpRequest(
            event.method.decode("ascii", "replace"),
            event.target.decode("ascii", "replace"),
            headers,
            b"".join(chunks),
            state,
        )
        try:
            try:
                response = await self._handler(request)
            except asyncio.CancelledError:
                if self._cutting:  # the caller learns why rather than seeing a reset
                    await self._send(conn, writer, _stopping(), close=True)
                raise
            except Exception:
                log.exception("%s %s %s failed", self._name, request.method, request.path)
                response = HttpResponse(500, b"internal error\n")
            if response.stream is not None:
                track.streaming = True
                self._idle(track)  # a stream has no end of its own: the stop cancels it
            await self._send(conn, writer, response, close=self._deadline is not None)
        finally:
            self._idle(track)
        return True

    def _body_limit(self, state: ConnState) -> int:
        """Another uid's request is refused whatever it says: its body is kept small."""
        if self._budget is None or state.uid == self._budget.limits.owner_uid:
            return self._max_body
        return min(self._max_body, self._budget.limits.other_max_body)

    def _idle(self, track: _Conn) -> None:
        if track.busy:
            track.busy = False
            self._changed.set()

    async def _send(
        self,
        conn: h11.Connection,
        writer: asyncio.StreamWriter,
        response: HttpResponse,
        close: bool = False,
    ) -> None:
        headers = [(k, v) for k, v in response.headers]
        if close:
            headers.append(("connection", "close"))
        if response.stream is None:
            headers.append(("content-length", str(len(response.body))))
        else:
            headers.append(("cache-control", "no-cache"))
        try:
            writer.write(conn.send(h11.Response(status_code=response.status, headers=headers)))
            if response.stream is None:
                if response.body:
                    writer.write(conn.send(h11.Data(data=response.body)))
            else:
                async for chunk in response.stream:
                    writer.write(conn.send(h11.Data(data=chunk)))
                    await writer.drain()
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
        except h11.LocalProtocolError:
            log.debug("could not send response", exc_info=True)
        finally:
            if response.stream is not None and hasattr(response.stream, "aclose"):
                await response.stream.aclose()


async def _linger(reader: asyncio.StreamReader) -> None:
    """Discard what the client is still sending (bounded), so it can read our 413 instead of
    a connection reset (the lingering close of RFC 9112 section 9.6)."""
    discarded = 0
    with contextlib.suppress(TimeoutError, ConnectionError):
        async with asyncio.timeout(2):
            while discarded < _LINGER_BYTES and (chunk := await reader.read(65536)):
                discarded += len(chunk)


def _stopping() -> HttpResponse:
    body = f"the daemon is stopping: the request did not finish within {DRAIN_TIMEOUT:g} s\n"
    return HttpResponse(503, body.encode(), [("content-type", "text/plain")])


def _too_large(limit: int) -> HttpResponse:
    body = (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request too large: limit '
        + str(limit).encode()
        + b' bytes"}}'
    )
    return json_response(413, body)
