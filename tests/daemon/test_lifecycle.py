"""Lifecycle: locks, stale sockets, signals, sd_notify, supervision of nats-server, crashes."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import Daemon, cli_json


def _status(d: Daemon) -> dict[str, Any]:
    return cli_json(d, "status")  # type: ignore[no-any-return]


def test_socket_and_dirs_are_private(daemon: Daemon) -> None:
    """The socket is 0600 and the runtime and state dirs are 0700."""
    assert stat.S_IMODE(daemon.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon.runtime_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(daemon.state_dir.stat().st_mode) == 0o700
    conf = daemon.state_dir / "nats" / "nats.conf"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600


def test_second_daemon_on_same_dirs_exits_clearly(daemon: Daemon) -> None:
    """A second daemon on the same state dir exits non-zero naming the running one."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "serve"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1
    assert "already running" in out.stderr
    assert str(daemon.proc.pid if daemon.proc else "") in out.stderr
    assert daemon.healthz() == (200, "ok")


def test_status_reports_pid_nats_and_store(daemon: Daemon) -> None:
    """`agentcoord status` shows the daemon pid, the NATS URL and the store path."""
    st = _status(daemon)
    assert daemon.proc is not None
    assert st["pid"] == daemon.proc.pid
    assert st["nats_url"].startswith("nats://127.0.0.1:")
    assert st["store_path"].startswith(str(daemon.state_dir))
    assert st["healthy"] is True
    assert st["connections"]["unix"] >= 1  # the status call itself


def test_sigterm_stops_gracefully(daemon: Daemon) -> None:
    """SIGTERM: graceful stop, exit 0 (not killed), socket removed, nats-server gone."""
    nats_pid = _status(daemon)["nats_pid"]
    code = daemon.stop(signal.SIGTERM, timeout=60)
    assert code == 0, daemon.log()[-4000:]
    assert not daemon.socket.exists()
    assert not psutil.pid_exists(nats_pid) or psutil.Process(nats_pid).status() == "zombie"


def test_kill_nats_server_restarts_it(daemon: Daemon) -> None:
    """kill -9 of nats-server: the supervisor restarts it on the same port and /healthz is ok
    again."""
    before = _status(daemon)
    os.kill(before["nats_pid"], signal.SIGKILL)
    deadline = time.monotonic() + 60
    after = before
    while time.monotonic() < deadline:
        after = _status(daemon)
        if after["nats_restarts"] > before["nats_restarts"] and daemon.healthz() == (200, "ok"):
            break
        time.sleep(0.05)
    assert daemon.healthz() == (200, "ok"), daemon.log()[-4000:]
    after = _status(daemon)
    assert after["nats_pid"] != before["nats_pid"]
    assert after["nats_restarts"] == before["nats_restarts"] + 1
    assert after["nats_url"] == before["nats_url"]  # same port, clients reconnect


def test_kill_daemon_then_restart_on_same_dirs(daemon: Daemon) -> None:
    """kill -9 of the daemon: its nats-server dies with it and a new daemon starts on the dirs."""
    nats_pid = _status(daemon)["nats_pid"]
    assert daemon.proc is not None
    daemon.proc.kill()
    daemon.proc.wait()
    assert daemon.socket.exists()  # the stale socket is left behind ...
    deadline = time.monotonic() + 60
    while psutil.pid_exists(nats_pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(nats_pid).status() == "zombie":
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    assert not psutil.pid_exists(nats_pid) or psutil.Process(nats_pid).status() == "zombie"
    daemon.start()  # ... and does not block the restart
    assert daemon.healthz() == (200, "ok")
    assert _status(daemon)["healthy"] is True


def test_sd_notify_ready(daemon_factory: Any, tmp_path: Path) -> None:
    """With NOTIFY_SOCKET set, the daemon sends READY=1 once it serves."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(15)
    try:
        d = daemon_factory("notified", NOTIFY_SOCKET=str(path)).start()
        assert sock.recv(4096) == b"READY=1"
        assert d.healthz() == (200, "ok")
    finally:
        sock.close()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to drop to another uid")
def test_other_uid_is_refused(daemon_factory: Any) -> None:
    """A peer with another uid (dir/socket opened up on purpose) is refused by SO_PEERCRED."""
    import tempfile

    # The runtime dir must be reachable by the other uid (pytest's tmp dirs are 0700).
    runtime = Path(tempfile.mkdtemp(prefix="agentcoord-uid-", dir="/tmp"))
    daemon = daemon_factory("uid", AGENTCOORD_RUNTIME_DIR=str(runtime)).start()
    os.chmod(daemon.runtime_dir, 0o711)
    os.chmod(daemon.socket, 0o666)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become nobody, then connect (SO_PEERCRED is taken at connect)
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            s.connect(str(daemon.socket))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            os.write(write_fd, s.recv(4096))
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 4096):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    reply = json.loads(data)
    assert reply["id"] == 1
    assert reply["error"]["code"] == -32001
    assert "uid 65534" in reply["error"]["message"]


def test_shim_without_daemon_says_so(tmp_path: Path) -> None:
    """`agentcoord mcp` with no daemon and autostart off says why on stderr, and still answers
    the client over MCP (an invalid request gets a JSON-RPC error, never silence)."""
    env = dict(os.environ, AGENTCOORD_RUNTIME_DIR=str(tmp_path / "nowhere"))
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "mcp"],
        env=env,
        input=b"{}\n",
        capture_output=True,
        timeout=20,
    )
    assert out.returncode == 0
    reply = json.loads(out.stdout)
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600
    assert b"no daemon is listening" in out.stderr
    assert b"AGENTCOORD_NO_AUTOSTART=1" in out.stderr
