"""Trust boundaries (the security pass): another uid on the unix socket and on HTTP, NATS
logins with wrong or another agent's credentials, and HTTP with a foreign Origin or Host on
every endpoint. All refused, and counted."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, console_link
from tests.daemon.test_auth import _nats_handshake
from tests.security.conftest import Tally
from tests.tools.conftest import AgentProc
from tests.tools.test_nats_access import Login, publish, subscribe

FOREIGN = [
    {"origin": "http://evil.example"},
    {"origin": "null"},
    {"origin": "http://127.0.0.1.evil.example"},
    {"origin": "file://"},
    {"host": "evil.example"},
    {"host": "127.0.0.1.nip.io:7420"},
]


def _as_nobody(fn: Callable[[], bytes]) -> bytes:
    """Run ``fn`` in a forked child with uid/gid 65534; its bytes come back through a pipe."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_fd, fn())
        except BaseException as exc:  # report, never run the parent's code in the child
            os.write(write_fd, f"child failed: {exc!r}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    return data


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to drop to another uid")
def test_another_uid_is_refused_on_socket_and_http(daemon_factory: Any, tally: Tally) -> None:
    """uid 65534 is refused on an opened-up socket (SO_PEERCRED) and on HTTP (peer uid)."""
    runtime = Path(tempfile.mkdtemp(prefix="agentcoord-uid-", dir="/tmp"))
    d = daemon_factory("uid", AGENTCOORD_RUNTIME_DIR=str(runtime)).start()
    os.chmod(d.runtime_dir, 0o711)
    os.chmod(d.socket, 0o666)
    host, port = d.http_addr.rsplit(":", 1)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "claim", "arguments": {"resource_key": "uid/steal"}},
        },
    ]

    def over_socket() -> bytes:
        out = []
        for req in requests:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(str(d.socket))
                s.sendall(json.dumps(req).encode() + b"\n")
                out.append(s.makefile("rb").readline().decode())
        return json.dumps(out).encode()

    def over_http() -> bytes:
        out = []
        for req in requests:
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            conn.request("POST", "/mcp", json.dumps(req), {"content-type": "application/json"})
            resp = conn.getresponse()
            out.append([resp.status, resp.read().decode()])
            conn.close()
        return json.dumps(out).encode()

    for raw in json.loads(_as_nobody(over_socket)):
        reply = json.loads(raw)
        ok = reply.get("error", {}).get("code") == -32001 and "uid 65534" in raw
        assert tally("other uid (unix socket)", ok), raw
    for status, body in json.loads(_as_nobody(over_http)):
        assert tally("other uid (http, no token)", status == 403 and "uid 65534" in body), body
    from tests.reliability._rig import call

    assert call(d, "check_claims", {"prefix": "uid"})["claims"] == []


async def test_nats_refuses_wrong_and_foreign_credentials(
    daemon: Daemon, claude_bin: Path, tmp_path: Path, tally: Tally
) -> None:
    """Wrong or foreign NATS credentials cannot log in; an agent's own stays in its subjects."""
    a = await asyncio.to_thread(AgentProc, daemon, claude_bin, tmp_path / "w" / "alice")
    b = await asyncio.to_thread(AgentProc, daemon, claude_bin, tmp_path / "w" / "bob")
    try:
        ca = await asyncio.to_thread(a.call, "nats_credentials")
        cb = await asyncio.to_thread(b.call, "nats_credentials")
        url = ca["url"]
        daemon_user = "agentcoord"  # the daemon's own NATS user (natsd.NatsSupervisor.user)
        wrong = [
            {},
            {"user": ca["user"], "password": "guess"},
            {"user": ca["user"], "password": cb["password"]},  # B's password, A's name
            {"user": daemon_user, "password": ca["password"]},  # the daemon's own user
            {"user": "", "password": ""},
        ]
        for creds in wrong:
            # A raw CONNECT (as tests/daemon/test_auth.py does): nats-py leaks its socket on a
            # refused login, which filterwarnings=error would report somewhere else.
            reply = await asyncio.to_thread(
                _nats_handshake, url, {"verbose": False, "pedantic": False, **_wire(creds)}
            )
            refused = b"Authorization Violation" in reply and b"PONG" not in reply
            assert tally("NATS login with wrong credentials", refused), (creds, reply)
        right = await asyncio.to_thread(
            _nats_handshake, url, _wire({"user": cb["user"], "password": cb["password"]})
        )
        assert b"PONG" in right  # the handshake itself works: the refusals above are real
        login = await Login().connect(cb)
        try:
            for subject in (f"agents.{a.name}.inbox", "agents.*.inbox", "$JS.API.>", ">"):
                denied = await login.denied(subscribe(login, subject), subject)
                assert tally("NATS subscribe outside own subjects", denied), subject
            for subject in (f"agents.{a.name}.inbox", "agents.broadcast", "$JS.API.STREAM.LIST"):
                denied = await login.denied(publish(login, subject, b"x"), subject)
                assert tally("NATS publish with an agent login", denied), subject
        finally:
            await login.nc.close()
    finally:
        await asyncio.to_thread(a.close)
        await asyncio.to_thread(b.close)


def _wire(creds: dict[str, str]) -> dict[str, str]:
    """CONNECT fields: the protocol calls the password ``pass``."""
    return {("pass" if k == "password" else k): v for k, v in creds.items()}


def _http(
    d: Daemon, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> int:
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest(method, path, skip_host="host" in headers)
    for k, v in headers.items():
        conn.putheader(k, v)
    if body is not None:
        conn.putheader("content-length", str(len(body)))
    conn.endheaders(body)
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.parametrize("bad", FOREIGN, ids=lambda h: f"{next(iter(h))}={next(iter(h.values()))}")
def test_foreign_origin_or_host_is_refused_everywhere(
    daemon: Daemon, tally: Tally, bad: dict[str, str]
) -> None:
    """A foreign Origin or Host is 403 on /mcp and the console, even with a valid token."""
    token = (daemon.state_dir / "human.token").read_text().strip()
    auth = {"authorization": f"Bearer {token}", "x-agentcoord": "1"}
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    mcp_headers = {"content-type": "application/json", "accept": "application/json", **auth}
    cases = [
        ("POST", "/mcp", {**mcp_headers, **bad}, ping),
        ("GET", "/console/api/state", {**auth, **bad}, None),
        ("GET", console_link(daemon).split(daemon.http_addr, 1)[1], dict(bad), None),
        ("POST", "/console/api/login-code", {**auth, **bad}, None),
        ("POST", "/console/api/prompts/p-1/answer", {**auth, **bad}, b'{"answer":"yes"}'),
    ]
    for method, path, headers, body in cases:
        status = _http(daemon, method, path, headers, body)
        assert tally("foreign Origin/Host (http)", status == 403), (method, path, bad, status)
    # the same requests from loopback pages are served
    assert _http(daemon, "POST", "/mcp", mcp_headers, ping) == 200
    assert _http(daemon, "GET", "/console/api/state", auth) == 200
