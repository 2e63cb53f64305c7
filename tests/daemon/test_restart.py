"""Start-up on state a daemon wrote and left to age: it never hangs, and a failure is one line.

Each test runs the real daemon (``python -m agentcoord serve``) with the real nats-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.daemon.statefmt import FORMAT, FORMAT_FILE
from tests.agentops.conftest import wait_for
from tests.conftest import Daemon, cli_json, make_env
from tests.tools.session_helpers import session_call


def _nats_login(d: Daemon) -> tuple[str, str, str]:
    """The running daemon's NATS URL (``agentcoord status``), user and password (from its own
    0600 config)."""
    conf = (d.state_dir / "nats" / "nats.conf").read_text()
    found = re.search(r'user: ("[^"]*"), password: ("[^"]*")', conf)
    assert found, conf
    return cli_json(d, "status")["nats_url"], json.loads(found[1]), json.loads(found[2])


def _claims_stream(d: Daemon) -> tuple[int, int, int]:
    """(messages, first sequence, last sequence) of the claims bucket's stream."""
    import nats

    async def read() -> tuple[int, int, int]:
        url, user, password = _nats_login(d)
        nc = await nats.connect(url, user=user, password=password, max_reconnect_attempts=0)
        try:
            info = await nc.jetstream().stream_info("KV_agent-claims")
            return info.state.messages, info.state.first_seq, info.state.last_seq
        finally:
            await nc.close()

    return asyncio.run(read())


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return result["structuredContent"]  # type: ignore[no-any-return]


def test_restart_after_released_claims_aged_out(daemon: Daemon, claude_bin: Path) -> None:
    """Claims released until their markers aged out leave the bucket empty at a sequence above
    0; the next start is ready at once and serves claims (it used to wait 10 s and fail)."""
    got = session_call(
        daemon,
        claude_bin,
        [
            ("claim", {"resource_key": "aged/a", "ttl": "60s"}),
            ("claim", {"resource_key": "aged/b", "ttl": "60s"}),
            ("release", {"resource_key": "aged/a"}),
        ],
    )
    assert _ok(got[0])["acquired"]
    assert _ok(got[1])["acquired"]
    # aged/b goes with its holder's process; then every marker ages out (limit_marker_ttl).
    wait_for(lambda: _claims_stream(daemon)[0] == 0, timeout=60, what="claims markers aged out")
    messages, first, last = _claims_stream(daemon)
    assert messages == 0
    assert first > last > 0
    assert daemon.stop() == 0
    daemon.start()  # the wedged start waited for the bucket, gave up and exited
    again = session_call(daemon, claude_bin, [("claim", {"resource_key": "aged/a"})])
    assert _ok(again[0])["acquired"]


class _SilentServer:
    """A TCP server that accepts and never says a word: a NATS server that does not answer."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            self.accepted.set()

    def close(self) -> None:
        # Wake the accept loop (a shutdown does; a close from another thread may not) and wait
        # for it, then close every connection it took: none is left behind for the garbage
        # collector to warn about during a later test.
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(30)
        self.sock.close()
        for conn in self._conns:
            conn.close()


@pytest.fixture
def silent_nats() -> Iterator[_SilentServer]:
    server = _SilentServer()
    yield server
    server.close()


def _serve(root: Path, **extra: str) -> subprocess.Popen[str]:
    root.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "agentcoord", "serve"],
        env=make_env(root, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )


def _failed_start_with_status(
    tmp_path: Path, **extra: str
) -> tuple[subprocess.Popen[str], str, str]:
    """Run a start expected to fail, with systemd's notify socket: (process, stderr, the
    datagram it sent)."""
    notify = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(notify))
    sock.settimeout(30)
    try:
        proc = _serve(tmp_path / "d", NOTIFY_SOCKET=str(notify), **extra)
        _out, err = proc.communicate(timeout=30)
        return proc, err, sock.recv(4096).decode()
    finally:
        sock.close()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_unanswered_part_fails_start_in_one_line_with_systemd_status(
    tmp_path: Path, silent_nats: _SilentServer
) -> None:
    """A NATS server that never answers ends the start in one line naming the part and the
    fix, exit 1, the reason in systemd's STATUS= and the traceback kept in the state dir."""
    proc, err, status = _failed_start_with_status(
        tmp_path,
        AGENTCOORD_NATS_URL=f"nats://127.0.0.1:{silent_nats.port}",
        AGENTCOORD_LOG_LEVEL="ERROR",
    )
    assert proc.returncode == 1
    lines = _lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("agentcoord: start-up: the NATS client did not answer within")
    assert f"127.0.0.1:{silent_nats.port}" in lines[0]
    assert "Traceback" not in err
    assert status.startswith("STATUS=start-up failed: start-up: the NATS client")
    log = tmp_path / "d" / "state" / "startup-error.log"
    assert str(log) in lines[0]
    assert "Traceback" in log.read_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_during_start_up_is_honoured(
    tmp_path: Path, silent_nats: _SilentServer, sig: signal.Signals
) -> None:
    """SIGTERM or SIGINT while start-up waits on a part that does not answer ends the daemon
    cleanly, naming the part (it used to be ignored until the start gave up and failed)."""
    proc = _serve(tmp_path / "d", AGENTCOORD_NATS_URL=f"nats://127.0.0.1:{silent_nats.port}")
    try:
        assert silent_nats.accepted.wait(60), "the daemon never reached its NATS client"
        assert proc.poll() is None
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        _out, err = proc.communicate(timeout=10)
    # Exit 0 and this line, not the failed start's exit 1 and "did not answer within".
    assert proc.returncode == 0, err
    assert "stop requested during start-up (the NATS client)" in err
    assert "Traceback" not in err


def test_default_http_port_taken_gives_way_to_a_free_one(daemon_factory: Any) -> None:
    """A second daemon (own dirs) while 127.0.0.1:7420 is taken serves on another port, says
    so, and writes it to http.addr, where every client looks."""
    squatter = socket.socket()
    try:
        try:
            squatter.bind(("127.0.0.1", 7420))
            squatter.listen(1)
        except OSError:
            pass  # something already holds it: the premise holds all the same
        d = daemon_factory("second")
        del d.env["AGENTCOORD_HTTP_ADDR"]  # the default address
        d.start()
        host, port = d.http_addr.rsplit(":", 1)
        assert host == "127.0.0.1"
        assert int(port) != 7420
        assert d.healthz() == (200, "ok")
        assert "127.0.0.1:7420 is in use" in d.log()
    finally:
        squatter.close()


def test_chosen_http_port_taken_is_one_clear_line(tmp_path: Path) -> None:
    """An address the user chose and another program holds stops the start with one line
    naming the address and the flag, never a traceback."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    addr = f"127.0.0.1:{squatter.getsockname()[1]}"
    try:
        proc = _serve(tmp_path / "d", AGENTCOORD_HTTP_ADDR=addr, AGENTCOORD_LOG_LEVEL="ERROR")
        _out, err = proc.communicate(timeout=30)
    finally:
        squatter.close()
    assert proc.returncode == 1
    lines = _lines(err)
    assert len(lines) == 1, err
    assert addr in lines[0]
    assert "--http-addr" in lines[0]


def test_state_dir_records_its_format(daemon: Daemon) -> None:
    """A fresh state dir is stamped with the format and the version that wrote it."""
    from agentcoord import __version__

    record = json.loads((daemon.state_dir / FORMAT_FILE).read_text())
    assert record == {"format": FORMAT, "written_by": __version__}


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (json.dumps({"format": FORMAT + 1, "written_by": "9.9.9"}), "holds state format"),
        ("not json", "is not a state format record"),
        (json.dumps({"format": "one"}), "is not a state format record"),
    ],
)
def test_unknown_state_format_is_refused_not_misread(
    tmp_path: Path, content: str, says: str
) -> None:
    """A state dir of a newer format (or a broken record) is refused in one line, untouched."""
    state = tmp_path / "d" / "state"
    state.mkdir(parents=True, mode=0o700)
    (state / FORMAT_FILE).write_text(content)
    proc = _serve(tmp_path / "d", AGENTCOORD_LOG_LEVEL="ERROR")
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    lines = _lines(err)
    assert len(lines) == 1, err
    assert says in lines[0], err
    assert (state / FORMAT_FILE).read_text() == content
    assert not (state / "objects.db").exists()


def test_nats_server_failure_is_one_line_its_output_in_the_log_file(tmp_path: Path) -> None:
    """A nats-server that dies at start with many lines of output ends the start in one line
    (and a one-line STATUS=); its output is kept in startup-error.log."""
    fake = tmp_path / "nats-server"
    fake.write_text(
        '#!/bin/sh\nfor i in 1 2 3 4 5; do echo "[FTL] line $i of a bad start" >&2; done\nexit 1\n'
    )
    fake.chmod(0o755)
    conf = tmp_path / "config.toml"
    conf.write_text(f'nats_server_bin = "{fake}"\n')
    proc, err, status = _failed_start_with_status(
        tmp_path, AGENTCOORD_CONFIG=str(conf), AGENTCOORD_LOG_LEVEL="CRITICAL"
    )
    assert proc.returncode == 1
    lines = _lines(err)
    assert len(lines) == 1, err
    assert "nats-server" in lines[0]
    assert "\n" not in status
    assert status.startswith("STATUS=start-up failed:")
    log = (tmp_path / "d" / "state" / "startup-error.log").read_text()
    assert "line 5 of a bad start" in log
