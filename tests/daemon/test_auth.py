"""HTTP bearer tokens and the embedded NATS server's generated credentials."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.daemon.test_http_transport import post

WHOAMI = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}


def test_human_token_file_is_private_and_identifies_human(daemon: Daemon) -> None:
    """The human token file is 0600 and a request bearing it is the human, via http-token."""
    token_file = daemon.state_dir / "human.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    status, _, body = post(daemon, WHOAMI, {"authorization": f"Bearer {token}"})
    assert status == 200
    who = json.loads(body)["result"]["structuredContent"]
    assert who["agent"].startswith("human:")
    assert who["via"] == "http-token"
    assert token not in (daemon.state_dir / "tokens.json").read_text()  # only digests stored


def test_token_survives_restart(daemon: Daemon) -> None:
    """The human token stays valid across a daemon restart."""
    token = (daemon.state_dir / "human.token").read_text().strip()
    daemon.stop()
    daemon.start()
    assert post(daemon, WHOAMI, {"authorization": f"Bearer {token}"})[0] == 200


def test_unknown_token_is_401(daemon: Daemon) -> None:
    """A bearer token the daemon never minted is refused with 401."""
    status, _, body = post(daemon, WHOAMI, {"authorization": "Bearer forged-token"})
    assert status == 401
    assert "unknown bearer token" in json.loads(body)["error"]["message"]


def _nats_handshake(url: str, connect: dict[str, Any]) -> bytes:
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        info = sock.recv(4096)
        assert info.startswith(b"INFO ")
        sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        return reply


def test_nats_refuses_connections_without_credentials(daemon: Daemon) -> None:
    """The embedded nats-server admits only the generated credentials, and logs no secret."""
    url = json.loads(
        subprocess.run(
            [sys.executable, "-m", "agentcoord", "status", "--json"],
            env=daemon.env,
            capture_output=True,
            check=True,
            timeout=20,
        ).stdout
    )["nats_url"]
    base = {"verbose": False, "pedantic": False}
    assert b"Authorization Violation" in _nats_handshake(url, base)
    wrong = dict(base, user="agentcoord", **{"pass": "guess"})
    assert b"Authorization Violation" in _nats_handshake(url, wrong)
    conf = (daemon.state_dir / "nats" / "nats.conf").read_text()
    password = conf.split("password: ")[1].split('"')[1]
    right = dict(base, user="agentcoord", **{"pass": password})
    assert _nats_handshake(url, right).startswith(b"PONG")
    assert password not in daemon.log()  # no secrets in logs


def test_nats_start_failure_is_clear(daemon_factory: Any, tmp_path: Path) -> None:
    """A nats-server that cannot start makes the daemon exit with its last output lines."""
    fake = tmp_path / "nats-server"
    fake.write_text("#!/bin/sh\necho 'fake: cannot open store' >&2\nexit 3\n")
    fake.chmod(0o755)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'nats_server_bin = "{fake}"\n')
    d = daemon_factory("badnats", AGENTCOORD_CONFIG=str(cfg))
    with pytest.raises(RuntimeError) as info:
        d.start()
    message = str(info.value)
    assert "nats-server exited with code 3" in message
    assert "fake: cannot open store" in message
