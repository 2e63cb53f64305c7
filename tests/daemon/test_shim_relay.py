"""The shim across a daemon restart, against a stand-in daemon that scripts the cut
(docs/claude-code.md "When the daemon restarts"): the client's stdio stays open, the session's
``initialize`` is replayed with its reply swallowed, a safe request in flight is sent again, a
tool call in flight gets a retryable error, and requests wait a bounded time for a daemon that
is away.

The stand-in is a unix socket served from a thread: it is the only way to close the connection
at an exact point of the exchange. The real daemon's restart is tested in
tests/daemon/test_restart_sessions.py and, with Claude Code, tests/claude/test_restarts.py.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.client.relay import READ_ONLY_META, RETRY_ERROR, UNREACHABLE_ERROR
from tests.conftest import make_env

DEADLINE = 30.0  # generous: a busy machine is slow, never wrong


class StandIn:
    """A listening unix socket; each accepted connection's lines arrive on a queue."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(4)
        self.conns: queue.Queue[Conn] = queue.Queue()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            self.conns.put(Conn(sock))

    def next_conn(self) -> Conn:
        return self.conns.get(timeout=DEADLINE)

    def close(self) -> None:
        self.server.close()
        self.path.unlink(missing_ok=True)


class Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")

    def read(self) -> dict[str, Any]:
        self.sock.settimeout(DEADLINE)
        line = self.file.readline()
        assert line, "the shim closed the connection"
        return json.loads(line)  # type: ignore[no-any-return]

    def reply(self, rid: Any, result: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())
        self.sock.sendall(b"\n")

    def cut(self) -> None:
        self.file.close()
        self.sock.close()


class Shim:
    """``agentcoord mcp`` as a subprocess, spoken to line by line."""

    def __init__(self, env: dict[str, str], *python_flags: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *python_flags, "-m", "agentcoord", "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.said: list[str] = []
        self.said_more = threading.Condition()
        self.err_reader = threading.Thread(target=self._read_err, daemon=True)
        self.err_reader.start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self.said_more:
                self.said.append(line.decode(errors="replace"))
                self.said_more.notify_all()

    def wait_said(self, text: str) -> None:
        """Wait until the shim's stderr has said ``text``."""
        with self.said_more:
            ok = self.said_more.wait_for(lambda: text in "".join(self.said), timeout=DEADLINE)
        assert ok, "".join(self.said)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=DEADLINE))  # type: ignore[no-any-return]
        except queue.Empty:
            raise AssertionError(f"no reply from the shim; its stderr:\n{self.stop()}") from None

    def stop(self, *conns: Conn) -> str:
        """Close stdin, then the stand-in's side (as the daemon does at the shim's EOF)."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            for conn in conns:
                conn.sock.settimeout(DEADLINE)
                if conn.file.readline() == b"":  # the shim's EOF came through
                    conn.cut()
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        assert self.proc.stderr is not None
        assert self.proc.stdout is not None
        self.reader.join(timeout=DEADLINE)
        self.err_reader.join(timeout=DEADLINE)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return "".join(self.said)


INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {"x": {}}, "clientInfo": {}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[StandIn, dict[str, str]]]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    stand_in = StandIn(runtime / "agentcoord.sock")
    env = make_env(tmp_path, AGENTCOORD_RECONNECT_WAIT="1")  # AGENTCOORD_NO_AUTOSTART=1
    yield stand_in, env
    stand_in.close()


def _handshake(shim: Shim, conn: Conn) -> None:
    shim.send(INIT)
    first = conn.read()
    assert first["method"] == "initialize"
    conn.reply(first["id"], {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert shim.read()["id"] == 0
    shim.send(INITIALIZED)
    assert conn.read()["method"] == "notifications/initialized"


def test_a_cut_connection_is_replayed_and_safe_requests_sent_again(
    setup: tuple[StandIn, dict[str, str]],
) -> None:
    """The daemon cuts the connection with a tools/list and a tools/call in flight: the
    tools/call gets a retryable error, the new connection starts with the session's own
    initialize (its reply not passed on) and initialized, then the tools/list again, whose
    answer reaches the client; the client's stdio never closed."""
    stand_in, env = setup
    shim = Shim(env)
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        _handshake(shim, conn)
        shim.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        shim.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "w"}})
        assert conn.read()["id"] == 1
        assert conn.read()["id"] == 2
        conn.cut()

        failed = shim.read()
        assert failed["id"] == 2
        assert failed["error"]["code"] == RETRY_ERROR
        assert failed["error"]["data"] == {"retryable": True}
        assert "may or may not have taken effect" in failed["error"]["message"]

        again = stand_in.next_conn()
        conns.append(again)
        replay = again.read()
        assert replay["method"] == "initialize"
        assert replay["id"] != 0  # the shim's own id: the client's 0 is answered already
        assert replay["params"] == INIT["params"]
        again.reply(replay["id"], {"protocolVersion": "2025-06-18", "capabilities": {}})
        assert again.read() == INITIALIZED
        resent = again.read()
        assert resent == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        again.reply(1, {"tools": []})
        assert shim.read() == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}

        shim.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert again.read()["id"] == 3
        again.reply(3, {})
        assert shim.read()["id"] == 3  # not the swallowed initialize reply
    finally:
        err = shim.stop(*conns)
    assert "the daemon closed the connection" in err
    assert "reconnected to the daemon" in err
    assert shim.proc.returncode == 0, err


def test_a_request_while_the_daemon_is_away_waits_then_gets_a_clear_error(
    setup: tuple[StandIn, dict[str, str]],
) -> None:
    """With the daemon gone and none coming back, a request waits its bound (1 s here) and is
    answered with an error saying the daemon is not reachable; the shim stays up, and a daemon
    that comes back later serves the next request."""
    stand_in, env = setup
    shim = Shim(env)
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        _handshake(shim, conn)
        stand_in.close()  # no daemon listens any more
        conn.cut()
        shim.wait_said("the daemon closed the connection")
        shim.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "w"}})
        answer = shim.read()
        assert answer["id"] == 7
        assert answer["error"]["code"] == UNREACHABLE_ERROR
        assert "not been reachable" in answer["error"]["message"]
        assert shim.proc.poll() is None

        back = StandIn(stand_in.path)
        try:
            shim.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
            again = back.next_conn()
            conns.append(again)
            replay = again.read()
            assert replay["method"] == "initialize"
            again.reply(replay["id"], {})
            assert again.read() == INITIALIZED
            assert again.read()["id"] == 8
            again.reply(8, {})
            assert shim.read() == {"jsonrpc": "2.0", "id": 8, "result": {}}
        finally:
            back.close()
    finally:
        err = shim.stop(*conns)
    assert shim.proc.returncode == 0, err


def test_read_only_tools_are_sent_again(setup: tuple[StandIn, dict[str, str]]) -> None:
    """A tools/call of a tool the daemon listed with readOnlyHint is sent again after a cut
    rather than failed (MCP spec, tool annotations)."""
    stand_in, env = setup
    shim = Shim(env)
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        _handshake(shim, conn)
        shim.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        conn.read()
        tools = [{"name": "look", "annotations": {"readOnlyHint": True}}, {"name": "act"}]
        conn.reply(1, {"tools": tools})
        shim.read()
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "look"}}
        shim.send(call)
        conn.read()
        conn.cut()
        again = stand_in.next_conn()
        conns.append(again)
        replay = again.read()
        again.reply(replay["id"], {})
        assert again.read() == INITIALIZED
        assert again.read() == call
    finally:
        shim.stop(*conns)


def test_read_only_tools_named_at_initialize_are_sent_again(
    setup: tuple[StandIn, dict[str, str]],
) -> None:
    """A tools/call of a tool the initialize result's _meta names read-only is sent again after
    a cut, with no tools/list before it, and one it does not name gets the retryable error."""
    stand_in, env = setup
    shim = Shim(env)
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        shim.send(INIT)
        conn.read()
        conn.reply(0, {"protocolVersion": "2025-06-18", "_meta": {READ_ONLY_META: ["look"]}})
        assert shim.read()["id"] == 0
        shim.send(INITIALIZED)
        conn.read()
        look = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "look"}}
        act = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "act"}}
        shim.send(look)
        shim.send(act)
        conn.read()
        conn.read()
        conn.cut()
        failed = shim.read()
        assert failed["id"] == 2
        assert failed["error"]["code"] == RETRY_ERROR
        again = stand_in.next_conn()
        conns.append(again)
        replay = again.read()
        again.reply(replay["id"], {})
        assert again.read() == INITIALIZED
        assert again.read() == look
    finally:
        shim.stop(*conns)


def test_restarts_in_a_row_add_no_pause(setup: tuple[StandIn, dict[str, str]]) -> None:
    """Five quick restarts in a row, each connection answering the session, are five restarts,
    not a daemon that drops us: a request after them is relayed at once (it would wait out the
    reconnect bound, 1 s here, and be failed if each restart made the shim pause longer)."""
    stand_in, env = setup
    shim = Shim(env)
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        _handshake(shim, conn)
        for rid in range(1, 6):
            shim.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
            assert conn.read()["id"] == rid
            conn.reply(rid, {})
            assert shim.read() == {"jsonrpc": "2.0", "id": rid, "result": {}}
            conn.cut()
            conn = stand_in.next_conn()
            conns[:] = [conn]  # the live one, which stop() closes
            replay = conn.read()
            conn.reply(replay["id"], {})
            assert conn.read() == INITIALIZED
        shim.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert conn.read()["id"] == 9
        conn.reply(9, {})
        assert shim.read() == {"jsonrpc": "2.0", "id": 9, "result": {}}
    finally:
        shim.stop(*conns)


def test_the_relay_imports_neither_asyncio_nor_the_daemon(
    setup: tuple[StandIn, dict[str, str]],
) -> None:
    """Through a handshake, a cut and a reconnect, the shim never imports asyncio or any
    daemon module (it starts with every session: ``python -X importtime`` lists them all)."""
    stand_in, env = setup
    shim = Shim(env, "-X", "importtime")
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        _handshake(shim, conn)
        conn.cut()
        again = stand_in.next_conn()
        conns.append(again)
        replay = again.read()
        again.reply(replay["id"], {})
        assert again.read() == INITIALIZED
    finally:
        err = shim.stop(*conns)
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in err.splitlines() if "import time:" in ln}
    assert "agentcoord.client.relay" in imported, err  # the list is real
    assert "asyncio" not in imported
    assert not [m for m in imported if m.startswith("agentcoord.daemon")], imported


def test_no_second_daemon_is_started_while_one_still_holds_the_dir(
    setup: tuple[StandIn, dict[str, str]],
) -> None:
    """With starts on demand allowed, a shim whose daemon went away while the runtime dir's
    lock still names a live process (a daemon draining its stop, or starting) waits for it
    and starts none; it reconnects when the socket is back."""
    from tests.daemon.test_on_demand import daemons_on, stop_daemons

    stand_in, env = setup
    env = {k: v for k, v in env.items() if k != "AGENTCOORD_NO_AUTOSTART"}
    (stand_in.path.parent / "daemon.lock").write_text(f"{os.getpid()}\n")  # alive: this test
    shim = Shim(env)
    conns: list[Conn] = []
    try:
        conn = stand_in.next_conn()
        _handshake(shim, conn)
        stand_in.close()
        conn.cut()
        shim.wait_said(f"the daemon (pid {os.getpid()}) is stopping or starting; waiting")
        assert daemons_on(Path(env["AGENTCOORD_STATE_DIR"])) == []
        back = StandIn(stand_in.path)
        try:
            shim.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
            again = back.next_conn()
            conns.append(again)
            replay = again.read()
            again.reply(replay["id"], {})
            assert again.read() == INITIALIZED
            assert again.read()["id"] == 4
        finally:
            back.close()
    finally:
        shim.stop(*conns)
        stop_daemons(Path(env["AGENTCOORD_STATE_DIR"]))  # one started by mistake
