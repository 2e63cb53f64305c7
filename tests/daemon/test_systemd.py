"""systemd integration: socket activation (LISTEN_FDS), sd_notify WATCHDOG, the unit files."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentcoord.cli.systemd_units import SERVICE_UNIT, SOCKET_UNIT
from agentcoord.kernel.activation import listen_fds, watchdog_interval
from tests.conftest import Daemon
from tests.tools.session_helpers import unix_request

ROOT = Path(__file__).resolve().parents[2]


def test_listen_fds_parsing() -> None:
    """LISTEN_FDS counts only when LISTEN_PID is ours; names come from LISTEN_FDNAMES."""
    env = {"LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "agentcoord.sock:http"}
    assert listen_fds(env, 42) == ((3, "agentcoord.sock"), (4, "http"))
    assert listen_fds(env, 43) == ()
    assert listen_fds({"LISTEN_PID": "1", "LISTEN_FDS": "x"}, 1) == ()


def test_watchdog_interval_parsing() -> None:
    """The ping interval is half of WATCHDOG_USEC, and off for another WATCHDOG_PID."""
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}, 5) == 15.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "6"}, 5) is None
    assert watchdog_interval({}, 5) is None


def test_unit_files_match_embedded_copies() -> None:
    """systemd/*.service|socket are the same texts `agentcoord install` writes."""
    assert (ROOT / "systemd" / "agentcoord.service").read_text() == SERVICE_UNIT
    assert (ROOT / "systemd" / "agentcoord.socket").read_text() == SOCKET_UNIT


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze absent")
def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """The unit files (ExecStart filled in) pass `systemd-analyze verify`."""
    exe = shutil.which("agentcoord") or sys.executable
    (tmp_path / "agentcoord.service").write_text(SERVICE_UNIT.replace("@AGENTCOORD@", exe))
    (tmp_path / "agentcoord.socket").write_text(SOCKET_UNIT)
    out = subprocess.run(
        ["systemd-analyze", "verify", "agentcoord.socket", "agentcoord.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def test_socket_activation_serves_inherited_socket(daemon_factory: Any) -> None:
    """Given a listening socket as fd 3 with LISTEN_PID/LISTEN_FDS, the daemon serves on it."""
    d: Daemon = daemon_factory("activated")
    d.runtime_dir.mkdir(parents=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(d.socket))
    listener.listen()
    fd = listener.fileno()
    env = dict(d.env, LISTEN_FDS="1", LISTEN_FDNAMES="agentcoord.sock")
    script = f'exec 3<&{fd}; LISTEN_PID=$$ exec "$0" -m agentcoord serve'
    proc = subprocess.Popen(
        ["bash", "-c", script, sys.executable], env=env, pass_fds=(fd,), stderr=subprocess.PIPE
    )
    d.proc = proc
    listener.close()
    try:
        deadline = time.monotonic() + 60
        while not (d.runtime_dir / "http.addr").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        # The human asks (login with the human token first, as the CLI does).
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert unix_request(d, ping) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    finally:
        d.stop()
    assert proc.stderr is not None
    with proc.stderr:
        assert b"using the socket passed by systemd" in proc.stderr.read()
    assert d.socket.exists()  # systemd owns the socket file: the daemon leaves it


def test_watchdog_pings(daemon_factory: Any, tmp_path: Path) -> None:
    """With WATCHDOG_USEC set, the daemon sends READY=1 then repeated WATCHDOG=1."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(15)
    try:
        daemon_factory("wd", NOTIFY_SOCKET=str(path), WATCHDOG_USEC="100000").start()
        seen = [sock.recv(64) for _ in range(5)]
    finally:
        sock.close()
    assert b"READY=1" in seen
    assert seen.count(b"WATCHDOG=1") >= 3


def test_install_user_writes_and_removes_units(tmp_path: Path) -> None:
    """`agentcoord install --user --no-enable` writes both units; `--remove` deletes them."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    run = [sys.executable, "-m", "agentcoord", "install", "--user"]
    out = subprocess.run([*run, "--no-enable"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    unit_dir = tmp_path / "cfg" / "systemd" / "user"
    service = (unit_dir / "agentcoord.service").read_text()
    assert "ExecStart=" in service
    assert "@AGENTCOORD@" not in service
    assert (unit_dir / "agentcoord.socket").exists()
    out = subprocess.run([*run, "--remove"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert not (unit_dir / "agentcoord.service").exists()
    assert not (unit_dir / "agentcoord.socket").exists()
