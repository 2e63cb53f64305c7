"""A stop drains (docs/architecture.md "Stopping"): on SIGTERM the listeners stop accepting, the
``tools/call`` requests in flight on the unix socket and on HTTP ``/mcp`` finish, those longer than
the drain are cut off with a reason, and the daemon still exits cleanly (exit 0, not killed)."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import select
import signal
import socket
import time
from typing import Any

from tests.conftest import Daemon, console_link
from tests.tools.session_helpers import human_token, own_call

_CALL_ID = "call"


def _unix_call(d: Daemon, name: str, arguments: dict[str, Any]) -> socket.socket:
    """Log in as the human on a new unix connection and send one tools/call; the socket, with
    the login's reply read, so the next line on it is the call's reply."""
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(15)
    sock.connect(str(d.socket))
    login = {"jsonrpc": "2.0", "id": "login", "method": "agentcoord/login"}
    login["params"] = {"token": human_token(d)}  # type: ignore[assignment]
    call = {"jsonrpc": "2.0", "id": _CALL_ID, "method": "tools/call"}
    call["params"] = {"name": name, "arguments": arguments}  # type: ignore[assignment]
    sock.sendall(json.dumps(login).encode() + b"\n" + json.dumps(call).encode() + b"\n")
    first = _read_line(sock)
    assert first is not None
    assert json.loads(first)["id"] == "login", first
    return sock


_pending: dict[int, bytes] = {}  # what was read past a line, per socket


def _read_line(sock: socket.socket) -> bytes | None:
    """The next line on ``sock``; None when the daemon closed the connection first."""
    buf = _pending.pop(sock.fileno(), b"")
    while b"\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    line, rest = buf.split(b"\n", 1)
    _pending[sock.fileno()] = rest
    return line


def _reply(sock: socket.socket) -> dict[str, Any]:
    line = _read_line(sock)
    assert line is not None, "the daemon closed the connection without answering the call"
    reply: dict[str, Any] = json.loads(line)
    assert reply["id"] == _CALL_ID, reply
    return reply


def _no_reply_yet(sock: socket.socket) -> bool:
    """True when nothing has come back on ``sock`` yet: the call is still in flight."""
    readable, _, _ = select.select([sock], [], [], 0)
    return not readable and not _pending.get(sock.fileno())


def _http_call(d: Daemon, name: str, arguments: dict[str, Any]) -> tuple[int, bytes]:
    """One sessionless tools/call on ``/mcp`` as the human; the status and body."""
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=15)
    body = {"jsonrpc": "2.0", "id": _CALL_ID, "method": "tools/call"}
    body["params"] = {"name": name, "arguments": arguments}  # type: ignore[assignment]
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {human_token(d)}",
    }
    try:
        conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _until(what: str, check: Any, timeout: float = 60.0) -> None:
    """Wait for ``check()`` to hold, within ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not seen within {timeout}s: {what}"
        time.sleep(0.02)


def _prompts_open(d: Daemon, questions: set[str]) -> bool:
    """Each of ``questions`` is an open prompt: the escalate calls asking them are waiting."""
    prompts = own_call(d, "list_prompts", {})["structuredContent"]["prompts"]
    return questions <= {p["question"] for p in prompts}


def _sigterm(d: Daemon) -> None:
    assert d.proc is not None
    d.proc.send_signal(signal.SIGTERM)


def _exited(d: Daemon) -> int:
    """The daemon's exit code, once it exits (its own stop deadline ends it; a busy machine
    may take longer, so this waits long)."""
    assert d.proc is not None
    return d.proc.wait(60)


def _refuses_connections(d: Daemon, host: str, port: int) -> bool:
    """Neither the unix socket nor the HTTP port takes a new connection."""
    for family, addr in ((socket.AF_UNIX, str(d.socket)), (socket.AF_INET, (host, port))):
        with socket.socket(family) as probe:
            try:
                probe.connect(addr)
            except (ConnectionRefusedError, FileNotFoundError):
                continue
            return False
    return True


def test_sigterm_lets_calls_in_flight_finish(daemon: Daemon) -> None:
    """A SIGTERM while an escalate (timeout_secs 1.5) is waiting on the unix socket and another
    on HTTP /mcp: both callers get their tool result, and the daemon exits 0 without cutting
    anything off."""
    wait = {"timeout_secs": 1.5}
    unix = _unix_call(daemon, "escalate", {"question": "drain over unix?", **wait})
    with unix, concurrent.futures.ThreadPoolExecutor(1) as pool:
        over_http = pool.submit(
            _http_call, daemon, "escalate", {"question": "drain over http?", **wait}
        )
        _until(
            "both escalate calls waiting",
            lambda: _prompts_open(daemon, {"drain over unix?", "drain over http?"}),
        )
        assert _no_reply_yet(unix)  # both are in flight
        assert not over_http.done()
        _sigterm(daemon)
        result = _reply(unix)["result"]
        status, body = over_http.result(15)
    assert result["isError"] is False, result
    assert result["structuredContent"]["answered"] is False  # its own timeout ended it
    assert status == 200, body
    http_result = json.loads(body)["result"]
    assert http_result["isError"] is False, http_result
    assert http_result["structuredContent"]["answered"] is False
    assert _exited(daemon) == 0, daemon.log()
    assert "cutting them off" not in daemon.log()


def test_calls_longer_than_the_drain_are_cut_off_with_a_reason(daemon: Daemon) -> None:
    """Escalates waiting 60 s on both transports: at SIGTERM new connections are refused at
    once while they still run; after the drain each caller gets a "daemon is stopping" error
    (JSON-RPC -32002 on the socket, 503 on HTTP); the daemon exits 0."""
    host, port = daemon.http_addr.rsplit(":", 1)
    wait = {"timeout_secs": 60}
    unix = _unix_call(daemon, "escalate", {"question": "cut over unix?", **wait})
    with unix, concurrent.futures.ThreadPoolExecutor(1) as pool:
        over_http = pool.submit(
            _http_call, daemon, "escalate", {"question": "cut over http?", **wait}
        )
        _until(
            "both escalate calls waiting",
            lambda: _prompts_open(daemon, {"cut over unix?", "cut over http?"}),
        )
        _sigterm(daemon)
        _until(
            "both listeners refusing new connections",
            lambda: _refuses_connections(daemon, host, int(port)),
        )
        assert _no_reply_yet(unix)  # stopped accepting first, while the drain runs
        assert not over_http.done()
        reply = _reply(unix)
        status, body = over_http.result(15)
    assert reply["error"]["code"] == -32002, reply
    assert "daemon is stopping" in reply["error"]["message"]
    assert status == 503, body
    assert b"daemon is stopping" in body
    assert _exited(daemon) == 0, daemon.log()
    log = daemon.log()
    assert "cutting them off" in log


def _console_cookie(d: Daemon) -> str:
    """The console's login cookie, from the link ``agentcoord console`` prints."""
    link = console_link(d)
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", link.split(d.http_addr, 1)[1])
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 303
        return resp.getheader("set-cookie", "").split(";")[0]
    finally:
        conn.close()


def _read_to_eof(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_streams_and_idle_connections_do_not_hold_the_stop(daemon: Daemon) -> None:
    """An open SSE stream (the console's events) and an idle keep-alive connection are not
    requests in flight: SIGTERM ends both without a drain's cut-off, and the daemon exits 0."""
    cookie = _console_cookie(daemon)
    host, port = daemon.http_addr.rsplit(":", 1)
    stream = socket.create_connection((host, int(port)), timeout=10)
    idle = socket.create_connection((host, int(port)), timeout=10)
    with stream, idle:
        head = f"GET /console/api/events HTTP/1.1\r\nHost: {daemon.http_addr}\r\nCookie: {cookie}"
        stream.sendall(head.encode() + b"\r\n\r\n")
        seen = b""
        while b": connected" not in seen:
            chunk = stream.recv(4096)
            assert chunk, seen
            seen += chunk
        idle.sendall(f"GET /healthz HTTP/1.1\r\nHost: {daemon.http_addr}\r\n\r\n".encode())
        answered = b""
        while not answered.endswith(b"ok"):  # /healthz answers "ok" with a content-length
            chunk = idle.recv(4096)
            assert chunk, answered
            answered += chunk
        _sigterm(daemon)
        assert _read_to_eof(idle) == b""  # closed, with nothing more sent
        _read_to_eof(stream)  # the stream ends (the daemon closes it)
    assert _exited(daemon) == 0, daemon.log()
    assert "cutting them off" not in daemon.log()  # a stream is not waited on as a request
