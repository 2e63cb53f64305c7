"""Fuzzing the JSON-RPC surface (hypothesis): the daemon never dies, every request gets a
JSON-RPC error, and the next good request on the same connection succeeds."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Daemon, make_env
from tests.tools.session_helpers import human_token

PING = b'{"jsonrpc":"2.0","id":"ok","method":"ping"}'
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def fuzz_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("fuzz")
    d = Daemon(root, make_env(root)).start()
    yield d
    d.stop()


class Line:
    """A unix-socket connection that reads newline-framed replies, logged in as the human with
    the human token first (as the CLI does; docs/security.md "Who a caller is"), so what the
    daemon judges is the frame, not the caller."""

    def __init__(self, d: Daemon) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        self.sock.connect(str(d.socket))
        self.buf = b""
        login = {"jsonrpc": "2.0", "id": "login", "method": "agentcoord/login"}
        self.send(json.dumps({**login, "params": {"token": human_token(d)}}).encode())
        reply = self.recv()
        assert "result" in reply, reply

    def send(self, data: bytes) -> None:
        self.sock.sendall(data + b"\n")

    def recv(self) -> Any:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            assert chunk, "daemon closed the connection"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self.sock.close()


def _assert_alive(conn: Line) -> None:
    conn.send(PING)
    assert conn.recv() == {"jsonrpc": "2.0", "id": "ok", "result": {}}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ
@given(garbage=st.binary(min_size=1, max_size=2000).filter(lambda b: b.strip(b" \t\r\n\x0b\x0c")))
def test_unix_garbage_bytes_get_parse_errors(fuzz_daemon: Daemon, garbage: bytes) -> None:
    """A line of random bytes gets one JSON-RPC error (unless a notification); the link lives."""
    line = garbage.replace(b"\n", b" ")
    conn = Line(fuzz_daemon)
    try:
        conn.send(line)
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        is_silent = (
            isinstance(value, dict) and "id" not in value and isinstance(value.get("method"), str)
        )
        if not is_silent and line.strip():
            reply = conn.recv()
            assert "error" in reply, reply
        _assert_alive(conn)
    finally:
        conn.close()


@FUZZ
@given(method=json_values, msg_id=json_values, params=json_values)
def test_unix_wrong_types_get_errors(
    fuzz_daemon: Daemon, method: Any, msg_id: Any, params: Any
) -> None:
    """Requests with wrongly typed method/id/params are answered with an error, never a crash."""
    conn = Line(fuzz_daemon)
    try:
        conn.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            ).encode()
        )
        reply = conn.recv()
        assert "error" in reply or "result" in reply
        if not isinstance(method, str) or not isinstance(params, dict | type(None)):
            assert "error" in reply
        _assert_alive(conn)
    finally:
        conn.close()


@FUZZ
@given(args=json_values, name=st.sampled_from(["whoami", "nope", ""]))
def test_tool_call_with_random_arguments(fuzz_daemon: Daemon, args: Any, name: str) -> None:
    """tools/call with random arguments: an isError result or a -32602 error, never a crash."""
    conn = Line(fuzz_daemon)
    try:
        req = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": args},
        }
        conn.send(json.dumps(req).encode())
        reply = conn.recv()
        if name != "whoami":
            assert reply["error"]["code"] == -32602
        elif args not in (None, {}):
            assert reply["result"]["isError"] is True
        _assert_alive(conn)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"[" * 200_000, -32700),  # deep nesting
        (b'{"jsonrpc":"2.0","id":' + b"9" * 6000 + b',"method":"ping"}', -32700),  # huge int id
        (b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', -32600),  # inf id
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
        (b"[]", -32600),
        (b'"just a string"', -32600),
        (b"\xff\xfe\x00garbage", -32700),
    ],
)
def test_unix_hostile_frames(fuzz_daemon: Daemon, payload: bytes, code: int) -> None:
    """Deep nesting, huge ids, bad ids and bad encodings get the right JSON-RPC error code."""
    conn = Line(fuzz_daemon)
    try:
        conn.send(payload)
        assert conn.recv()["error"]["code"] == code
        _assert_alive(conn)
    finally:
        conn.close()


def test_unix_oversize_frame_then_good_request(fuzz_daemon: Daemon) -> None:
    """A frame over the size limit is refused with an error; the connection stays usable."""
    conn = Line(fuzz_daemon)
    try:
        conn.send(
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 << 20) + b'"}}'
        )
        reply = conn.recv()
        assert reply["error"]["code"] == -32600
        assert "too large" in reply["error"]["message"]
        _assert_alive(conn)
    finally:
        conn.close()


def _http_post(d: Daemon, body: bytes) -> tuple[int, Any]:
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"content-type": "application/json", "authorization": f"Bearer {human_token(d)}"}
    conn.request("POST", "/mcp", body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else None


@FUZZ
@given(body=st.binary(max_size=3000))
def test_http_garbage_bodies(fuzz_daemon: Daemon, body: bytes) -> None:
    """Random POST bodies get a JSON-RPC error body (or 202 for a notification); then ping works."""
    status, reply = _http_post(fuzz_daemon, body)
    if status != 202:
        assert reply is not None
        replies = reply if isinstance(reply, list) else [reply]
        assert all("error" in r or "result" in r for r in replies)
    assert _http_post(fuzz_daemon, PING) == (200, {"jsonrpc": "2.0", "id": "ok", "result": {}})
