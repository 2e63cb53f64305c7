"""The HTTP job client against a real HTTP/1.1 server on loopback (asyncio streams): one pooled
connection, the retry flag of every failure (docs/localagents.md "HTTP agents: the job
contract"), a bound on the whole exchange, and the pool closed on exit."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agentcoord.localagents._failures import DispatchFailed
from agentcoord.localagents.httpjobs import JobClient

Writer = asyncio.StreamWriter
Route = Callable[[Writer], Awaitable[None]]


def reply(code: int, body: bytes, ctype: str = "application/json") -> Route:
    async def send(w: Writer) -> None:
        head = f"HTTP/1.1 {code} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
        w.write(head.encode() + body)
        await w.drain()

    return send


async def silent(w: Writer) -> None:
    await asyncio.Event().wait()  # accepts the request, never answers


async def drip(w: Writer) -> None:
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99999\r\n\r\n")
    while True:  # one byte at a time, each well inside httpx's per-read timeout
        w.write(b" ")
        await w.drain()
        await asyncio.sleep(0.05)


async def huge(w: Writer) -> None:
    size = 5 * 1024 * 1024
    w.write(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
    w.write(b"[" + b" " * (size - 2) + b"]")
    await w.drain()


class Agent:
    """A minimal keep-alive HTTP server: each path answers by its route; it records requests,
    connections and the closing of each connection by the client."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.requests: list[tuple[str, str, Any]] = []
        self.connections = 0
        self.open = 0
        self.all_closed = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.handlers: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, r: asyncio.StreamReader, w: Writer) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.connections += 1
        self.open += 1
        self.all_closed.clear()
        try:
            while head := await r.readuntil(b"\r\n\r\n"):
                lines = head.decode().split("\r\n")
                method, path, _ = lines[0].split(" ")
                headers = dict(h.lower().split(": ", 1) for h in lines[1:] if h)
                raw = await r.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((method, path, json.loads(raw) if raw else None))
                await self.routes[path](w)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client hung up
        finally:
            self.open -= 1
            if not self.open:
                self.all_closed.set()
            w.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await w.wait_closed()
            self.handlers.discard(task)


@pytest.fixture
async def agent() -> AsyncIterator[Agent]:
    srv = Agent({})
    srv.server = await asyncio.start_server(srv._serve, "127.0.0.1", 0)
    async with srv.server:
        yield srv


async def failure(client: JobClient, endpoint: str, job_id: str = "j") -> DispatchFailed:
    with pytest.raises(DispatchFailed) as caught:
        await client.get_job(endpoint, job_id)
    return caught.value


async def test_one_pooled_connection_and_closed_on_exit(agent: Agent) -> None:
    """post then polls reuse one keep-alive connection; exit closes it (the server sees EOF)
    and a later request fails with retry (the daemon is stopping)."""
    agent.routes["/jobs"] = reply(202, b'{"id": 7, "status": "queued"}')
    agent.routes["/jobs/7"] = reply(200, b'{"status": "done", "result": "ok"}')
    async with JobClient() as client:
        posted = await client.post_job(agent.url + "/", {"task": "x"})
        assert posted["job_id"] == "7", "an integer id is accepted as a string"
        final = await client.wait_job(agent.url, "7", deadline_s=5)
        assert final == {"status": "done", "result": "ok"}
        assert agent.requests == [("POST", "/jobs", {"task": "x"}), ("GET", "/jobs/7", None)]
        assert agent.connections == 1
        assert agent.open == 1
    async with asyncio.timeout(60):
        await agent.all_closed.wait()
    err = await failure(client, agent.url)
    assert err.data["retry"] is True
    assert "stopping" in err.data["error"]


@pytest.mark.parametrize(
    ("code", "retry"), [(500, True), (503, True), (429, True), (404, False), (400, False)]
)
async def test_status_codes_set_the_retry_flag(agent: Agent, code: int, retry: bool) -> None:
    """5xx and 429 are worth retrying; other 4xx are not; the message names the code."""
    agent.routes["/jobs/j"] = reply(code, b'{"error": "x"}')
    async with JobClient() as client:
        err = await failure(client, agent.url)
    assert err.data["retry"] is retry
    assert f"answered {code}" in err.data["error"]


@pytest.mark.parametrize(
    ("body", "words"),
    [(b"<html>", "did not answer JSON"), (b"[1]", "did not answer a JSON object")],
)
async def test_bad_replies_are_not_retried(agent: Agent, body: bytes, words: str) -> None:
    """A reply that is not a JSON object fails without retry; so does a POST with no job id."""
    agent.routes["/jobs/j"] = reply(200, body)
    agent.routes["/jobs"] = reply(202, b'{"status": "queued"}')
    async with JobClient() as client:
        err = await failure(client, agent.url)
        assert err.data["retry"] is False
        assert words in err.data["error"]
        with pytest.raises(DispatchFailed, match="no job_id") as caught:
            await client.post_job(agent.url, {"task": "x"})
    assert caught.value.data["retry"] is False


async def test_silence_and_a_slow_drip_time_out_with_retry(agent: Agent) -> None:
    """A server that never answers, and one that sends a byte every 50 ms (each read inside
    httpx's per-read timeout), both fail within the client's timeout, with retry."""
    agent.routes["/jobs/quiet"] = silent
    agent.routes["/jobs/drip"] = drip
    async with JobClient(timeout=0.5) as client:
        for job_id in ("quiet", "drip"):
            # The drip would keep per-read timeouts happy for over an hour: only the client's
            # whole-request timeout ends it (the generous bound turns a hang into a failure).
            async with asyncio.timeout(60):
                err = await failure(client, agent.url, job_id)
            assert err.data["retry"] is True
            assert "no answer within 0.5s" in err.data["error"]


async def test_a_reply_over_4_mib_is_refused(agent: Agent) -> None:
    """A body past the 4 MiB cap is refused without retry rather than read whole."""
    agent.routes["/jobs/j"] = huge
    async with JobClient() as client:
        err = await failure(client, agent.url)
    assert err.data["retry"] is False
    assert "more than 4194304 bytes" in err.data["error"]


async def test_refused_connection_retries_and_bad_url_does_not() -> None:
    """A refused connection is worth retrying; an endpoint that is not http(s) is not."""
    async with JobClient(timeout=2) as client:
        refused = await failure(client, "http://127.0.0.1:9")
        assert refused.data["retry"] is True
        assert "GET http://127.0.0.1:9/jobs/j failed" in refused.data["error"]
        scheme = await failure(client, "ftp://127.0.0.1:9")
    assert scheme.data["retry"] is False
