"""The daemon starts, answers /healthz and MCP over HTTP and the unix socket."""

from __future__ import annotations

import json
import socket

from tests.conftest import Daemon


def _unix_call(d: Daemon, payload: bytes) -> dict:
    """One request as the human: an ``agentcoord/login`` with the human token first."""
    token = (d.state_dir / "human.token").read_text().strip()
    login = {"jsonrpc": "2.0", "id": 0, "method": "agentcoord/login", "params": {"token": token}}
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(d.socket))
        s.sendall(json.dumps(login).encode() + b"\n" + payload + b"\n")
        buf = b""
        while buf.count(b"\n") < 2:
            buf += s.recv(65536)
    return json.loads(buf.splitlines()[1])  # type: ignore[no-any-return]


def test_healthz_ok(daemon: Daemon) -> None:
    """/healthz answers ok once the daemon says it is ready."""
    assert daemon.healthz() == (200, "ok")


def test_unix_tools_list(daemon: Daemon) -> None:
    """tools/list over the unix socket lists whoami with a description."""
    reply = _unix_call(daemon, b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
    assert reply["id"] == 7
    names = {t["name"]: t for t in reply["result"]["tools"]}
    assert names["whoami"]["description"]
