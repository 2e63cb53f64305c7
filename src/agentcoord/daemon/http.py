"""A small HTTP/1.1 server on h11: parsing is h11's, this module only moves bytes.

Handlers take an :class:`HttpRequest` and return an :class:`HttpResponse`, whose body is bytes
or an async iterator of chunks (SSE, watch streams). Limits (header size, body size, idle time)
are enforced here so no handler sees an oversize or half-sent request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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

__all__ = ["HttpRequest", "HttpResponse", "HttpServer", "json_response", "status_for"]

log = logging.getLogger(__name__)

_HEADER_LIMIT = 64 * 1024
_HEADER_TIMEOUT = 10.0
_IDLE_TIMEOUT = 75.0
_BODY_TIMEOUT = 30.0
_LINGER_BYTES = 64 * 1024 * 1024


@dataclass
class ConnState:
    """Per-connection memory (for instance the resolved caller, reused across keep-alive)."""

    peer: tuple[str, int]
    local: tuple[str, int]
    values: dict[str, Any] = field(default_factory=dict)


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
    ) -> None:
        self._handler = handler
        self._host, self._port = host, port
        self._max_body = max_body
        self._ssl = ssl
        self._name = name
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.connections_total = 0

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def open_connections(self) -> int:
        return len(self._writers)

    async def __aenter__(self) -> HttpServer:
        self._server = await asyncio.start_server(
            self._serve_conn, self._host, self._port, ssl=self._ssl, limit=_HEADER_LIMIT
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        # Long-lived responses (SSE, watches) end with the server, not after it.
        for task in list(self._tasks):
            task.cancel("server stopping")
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                await self._server.wait_closed()

    async def _serve_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._writers.add(writer)
        self.connections_total += 1
        peer = writer.get_extra_info("peername") or ("", 0)
        local = writer.get_extra_info("sockname") or ("", 0)
        state = ConnState((peer[0], peer[1]), (local[0], local[1]))
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_HEADER_LIMIT)
        try:
            while True:
                if not await self._one_exchange(conn, reader, writer, state):
                    break
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    break
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    break
        except (ConnectionError, TimeoutError, _ssl.SSLError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # server stopping
        except Exception:
            log.exception("%s connection from %s failed", self._name, peer)
        finally:
            if task is not None:
                self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _next_event(
        self, conn: h11.Connection, reader: asyncio.StreamReader, timeout: float
    ) -> Any:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            async with asyncio.timeout(timeout):
                data = await reader.read(65536)
            conn.receive_data(data)

    async def _one_exchange(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: ConnState,
    ) -> bool:
        try:
            event = await self._next_event(conn, reader, _IDLE_TIMEOUT)
            if isinstance(event, h11.ConnectionClosed):
                return False
            if not isinstance(event, h11.Request):
                return False
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
            length = headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > self._max_body:
                raise _BodyTooLarge
            chunks: list[bytes] = []
            size = 0
            while True:
                body_event = await self._next_event(conn, reader, _BODY_TIMEOUT)
                if isinstance(body_event, h11.Data):
                    size += len(body_event.data)
                    if size > self._max_body:
                        raise _BodyTooLarge
                    chunks.append(bytes(body_event.data))
                elif isinstance(body_event, h11.EndOfMessage):
                    break
                else:
                    return False
        except _BodyTooLarge:
            await self._send(conn, writer, _too_large(self._max_body), close=True)
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
            response = await self._handler(request)
        except Exception:
            log.exception("%s %s %s failed", self._name, request.method, request.path)
            response = HttpResponse(500, b"internal error\n")
        await self._send(conn, writer, response)
        return True

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


def _too_large(limit: int) -> HttpResponse:
    body = (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request too large: limit '
        + str(limit).encode()
        + b' bytes"}}'
    )
    return json_response(413, body)
