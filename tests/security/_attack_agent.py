"""An agent for the attack suite (docs/reliability.md "Attack suite"), run under the stand-in
``claude`` so that its connections are a Claude session's:

    claude -- python _attack_agent.py SOCKET HTTP_ADDR

It holds the official MCP SDK client on ``http://HTTP_ADDR/mcp`` (no token: the daemon finds
the agent from the loopback peer) and makes the raw requests the suite asks for, from its own
process. Each stdin line is a JSON command, each answer one JSON line on stdout:

    {"op": "tools"}                              -> {"tools": [names]}
    {"op": "ping"}                               -> {"ok": true}
    {"op": "call", "name", "arguments"}          -> {"is_error", "text", "structured"}
    {"op": "unix", "frames": [b64]}              -> {"exchanges": [Exchange as a dict]}
    {"op": "http", "bodies": [b64]}              -> {"answers": [[status, b64 body, note]]}
    {"op": "flood_unix", "frame": b64, "count"}  -> {"sent": bytes}: sent, never read
    {"op": "flood_http", "body": b64, "count"}   -> {"sent": bytes}: pipelined, never read
    {"op": "drop_floods"}                        -> {"closed": n}

A failure of a command is ``{"exception": "..."}``; the agent goes on.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import select
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for tests.*

from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.security._attack_wire import UnixLine, http_exchange

FLOOD_SECONDS = 20.0  # a flood stops sending after this long even if the daemon still reads


def _b(data: str) -> bytes:
    return base64.b64decode(data)


def _s(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _flood(sock: socket.socket, frame: bytes, count: int) -> int:
    """Write ``frame`` ``count`` times without reading; stop when the daemon stops reading
    (its back-pressure, a right answer) or after :data:`FLOOD_SECONDS`."""
    sock.setblocking(False)
    blob = frame * count
    sent, deadline = 0, time.monotonic() + FLOOD_SECONDS
    while sent < len(blob) and time.monotonic() < deadline:
        try:
            sent += sock.send(blob[sent : sent + (1 << 20)])
        except BlockingIOError:
            poll = select.poll()
            poll.register(sock, select.POLLOUT)
            if not poll.poll(5000):
                break  # not read for 5 s: the daemon holds back, as it should
        except OSError:
            break  # the daemon closed it: a right answer to a flood too
    return sent


async def main(sock_path: str, addr: str) -> None:
    floods: list[socket.socket] = []
    async with Client(f"http://{addr}/mcp", mode="legacy", read_timeout_seconds=30) as client:
        while line := await asyncio.to_thread(sys.stdin.readline):
            cmd = json.loads(line)
            try:
                out = await _run(cmd, client, sock_path, addr, floods)
            except Exception as exc:  # the suite reports it; this agent goes on
                out = {"exception": f"{type(exc).__name__}: {exc}"[:2000]}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
    for s in floods:
        s.close()


async def _run(
    cmd: dict[str, Any], client: Client, sock_path: str, addr: str, floods: list[socket.socket]
) -> dict[str, Any]:
    op = cmd["op"]
    if op == "tools":
        listed = await client.list_tools(cache_mode="bypass")
        return {"tools": [t.name for t in listed.tools]}
    if op == "ping":
        with warnings.catch_warnings():  # ping is in every protocol version the daemon speaks
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_ping()
        return {"ok": True}
    if op == "call":
        try:
            result = await client.call_tool(cmd["name"], cmd["arguments"])
        except MCPError as exc:  # a JSON-RPC error reply
            return {"rpc_error": {"code": exc.code, "message": exc.message[:4000]}}
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        structured = result.structured_content
        return {"is_error": result.is_error, "text": text[:4000], "structured": structured}
    if op == "unix":
        return {"exchanges": await asyncio.to_thread(_unix, sock_path, cmd["frames"])}
    if op == "http":
        answers = []
        for body in cmd["bodies"]:
            status, data, note = await asyncio.to_thread(http_exchange, addr, _b(body))
            answers.append([status, _s(data[: 1 << 20]), note])
        return {"answers": answers}
    if op == "flood_unix":
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock_path)
        floods.append(s)
        return {"sent": await asyncio.to_thread(_flood, s, _b(cmd["frame"]), cmd["count"])}
    if op == "flood_http":
        host, port = addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=10)
        floods.append(s)
        body = _b(cmd["body"])
        head = (
            f"POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n"
            f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        request = head.encode() + body
        return {"sent": await asyncio.to_thread(_flood, s, request, cmd["count"])}
    if op == "drop_floods":
        n = len(floods)
        for s in floods:
            s.close()
        floods.clear()
        return {"closed": n}
    raise ValueError(f"unknown op {op!r}")


def _unix(sock_path: str, frames: list[str]) -> list[dict[str, Any]]:
    """Each frame then a ping on one connection (a new one after the daemon closed it)."""
    out = []
    line: UnixLine | None = None
    for frame in frames:
        if line is None:
            line = UnixLine(sock_path)
        ex = line.exchange(_b(frame))
        out.append(dataclasses.asdict(ex) | {"garbage": [g.decode("latin-1") for g in ex.garbage]})
        if ex.closed or ex.timeout:
            line.close()
            line = None
    if line is not None:
        line.close()
    return out


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
