"""A local user, of the daemon's uid or another, cannot cut off the socket or starve the human:
connections are bounded per uid, slow requests are timed out, descriptors above 1024 work, a
burst of connects is queued, and a loopback peer is found with an exact lookup
(docs/security.md "Limits")."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.client.rpc import call_unix
from tests.conftest import Daemon

NOBODY = 65534
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def _human_status(d: Daemon) -> Any:
    token = (d.state_dir / "human.token").read_text().strip()
    return call_unix(d.socket, "agentcoord/status", {}, token=token, timeout=60)


def _fds(d: Daemon) -> int:
    assert d.proc is not None
    return len(os.listdir(f"/proc/{d.proc.pid}/fd"))


def _http_port(d: Daemon) -> int:
    return int(d.http_addr.rsplit(":", 1)[1])


@contextlib.contextmanager
def _as_nobody_holding(port: int, count: int) -> Iterator[tuple[int, int]]:
    """A forked child that drops to uid 65534 and opens ``count`` loopback connections to
    ``port``, each sending the first byte of a request head; yields (connected, closed by the
    daemon) as the child saw them, and holds the connections until the block ends."""
    report_r, report_w = os.pipe()
    release_r, release_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            held: list[socket.socket] = []
            for _ in range(count):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(b"G")  # a byte of a head that never ends
                held.append(s)
            # What the daemon did with each: a closed or answered connection is readable;
            # counted until none more turns readable for 2 s.
            poller = select.poll()
            for s in held:
                poller.register(s, select.POLLIN)
            closed = 0
            while events := poller.poll(2000):
                for fd, _ in events:
                    poller.unregister(fd)
                    closed += 1
            os.write(report_w, json.dumps([len(held), closed]).encode())
            os.read(release_r, 1)
        finally:
            os._exit(0)
    os.close(report_w)
    os.close(release_r)
    try:
        data = b""
        while chunk := os.read(report_r, 4096):
            data += chunk
            if data.endswith(b"]"):
                break
        connected, closed = json.loads(data)
        yield connected, closed
    finally:
        os.write(release_w, b"x")
        os.close(release_w)
        os.close(report_r)
        os.waitpid(pid, 0)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to drop to another uid")
def test_another_uid_cannot_cut_off_the_socket(daemon: Daemon) -> None:
    """1,100 loopback connections from uid 65534 are bounded to its budget (the rest answered
    503 and closed), the daemon stays under 1,024 descriptors, and the human's next unix
    request and the hooks' port are answered."""
    with _as_nobody_holding(_http_port(daemon), 1100) as (connected, closed):
        assert connected == 1100
        assert closed >= 1100 - 16, f"{closed} of 1100 closed\n{daemon.log()}"
        assert _fds(daemon) < 1024, daemon.log()
        assert _human_status(daemon)["pid"] == daemon.proc.pid  # type: ignore[union-attr]
        assert daemon.healthz() == (200, "ok")
    assert "too many connections from uid 65534" in daemon.log()


def test_descriptors_above_1024_work(daemon: Daemon) -> None:
    """With 1,100 unix connections open, the daemon's descriptors go past 1,024 and a new unix
    connection is still identified and answered (pidfds are polled, never select()ed)."""
    held: list[socket.socket] = []
    try:
        for _ in range(1100):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(60)
            s.connect(str(daemon.socket))
            s.sendall(PING)
            held.append(s)
        for s in held:  # each answered: accepted and identified
            assert s.recv(65536).endswith(b"\n"), daemon.log()
        assert _fds(daemon) > 1024
        assert _human_status(daemon)["connections"]["unix"] >= 1100, daemon.log()
    finally:
        for s in held:
            s.close()


def test_a_slow_head_is_cut_off(daemon_factory: Any) -> None:
    """A peer that sends a request head one byte at a time, each well within the idle timeout,
    is closed once the head's own deadline passes, not held forever."""
    d = daemon_factory(AGENTCOORD_HTTP_HEADER_TIMEOUT="2", AGENTCOORD_HTTP_IDLE_TIMEOUT="3").start()
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 10_000
    closed = False
    with socket.create_connection(("127.0.0.1", _http_port(d)), timeout=60) as s:
        # One byte a second (the attack's own pace): never idle for 3 s, never a whole head;
        # after 120 bytes the head's 2 s deadline is long past.
        for byte in head[:120]:
            try:
                s.sendall(bytes([byte]))
                ready, _, _ = select.select([s], [], [], 1.0)
                if ready and s.recv(65536) == b"":
                    closed = True
            except OSError:
                closed = True
            if closed:
                break
    assert closed, f"a 120-byte drip was never cut off\n{d.log()}"


def test_a_burst_of_connects_is_queued_not_refused(daemon: Daemon) -> None:
    """500 connects at once while the daemon cannot accept (stopped) all enter the listen
    queue, and each is answered once it runs again."""
    assert daemon.proc is not None
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    if somaxconn < 500:
        pytest.skip(f"net.core.somaxconn is {somaxconn}: the kernel caps any backlog there")
    held: list[socket.socket] = []
    refused = 0
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        for _ in range(500):
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(str(daemon.socket))
            except BlockingIOError:  # the listen queue is full: a refused connect
                refused += 1
                s.close()
                continue
            held.append(s)
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    try:
        assert refused == 0, f"{refused} of 500 connects refused"
        for s in held:
            s.setblocking(True)
            s.settimeout(60)
            s.sendall(PING)
        for s in held:
            assert s.recv(65536).endswith(b"\n"), daemon.log()
    finally:
        for s in held:
            s.close()


def test_the_peer_lookup_reads_no_socket_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback peer's process and uid are found by an exact lookup of its socket: with
    the every-socket listing (psutil.net_connections) and /proc/net/tcp made to fail, the
    caller is still found, and a closed connection is no one."""
    import psutil

    from agentcoord.identity import procprobe

    def no_scan(*_: Any, **__: Any) -> Any:
        raise AssertionError("listed every socket")

    monkeypatch.setattr(psutil, "net_connections", no_scan)
    real_open = open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith("/proc/net/tcp") or "/net/tcp" in str(file):
            raise AssertionError("read the socket table")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded_open)
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        client = socket.create_connection(srv.getsockname())
        accepted, _ = srv.accept()
        with accepted:
            peer, local = client.getsockname(), srv.getsockname()
            assert procprobe.tcp_peer_pid(peer, local) == (os.getpid(), os.geteuid())
            client.close()
            assert procprobe.tcp_peer_pid(peer, local) is None


def _quietly_ended(d: Daemon) -> None:
    """Wait until the daemon's own count of unix connections falls back to the one asking,
    then check the log has no error for the connection that ended."""
    for _ in range(600):
        if _human_status(d)["connections"]["unix"] <= 1:
            break
    else:
        pytest.fail(f"the reset connection never ended\n{d.log()}")
    log = d.log()
    assert "unix connection failed" not in log, log
    assert "ValueError" not in log, log


def test_a_reset_after_a_reply_is_no_error(daemon: Daemon) -> None:
    """A client that closes its unix connection with a reply unread (the daemon reads a
    reset, and its transport closes the socket) ends it quietly: the hang-up watch finds the
    socket already closed, instead of failing on descriptor -1."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(str(daemon.socket))
    s.sendall(PING)
    assert s.recv(65536).endswith(b"\n")  # identified and serving
    s.sendall(PING)
    ready, _, _ = select.select([s], [], [], 30)  # its reply arrived, and stays unread
    assert ready, daemon.log()
    s.close()  # unread data in the receive queue: the daemon's read sees a reset
    _quietly_ended(daemon)


def test_a_reset_under_unread_replies_is_no_error(daemon: Daemon) -> None:
    """A client that resets its connection while 2,000 replies are being written ends it
    quietly: replies for a peer that is gone are dropped, not an error for the connection."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(str(daemon.socket))
    s.sendall(PING)
    assert s.recv(65536).endswith(b"\n")
    s.sendall(PING * 2000)  # replies the client will never read
    s.close()
    _quietly_ended(daemon)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_the_table_fallback_finds_the_same_socket(host: str) -> None:
    """Where sock_diag is missing, /proc/net/tcp{,6} gives the same (inode, uid) for the
    peer's socket as the exact lookup."""
    from agentcoord.identity import procprobe

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as srv:
        srv.bind((host, 0))
        srv.listen()
        with socket.create_connection(srv.getsockname()[:2]) as client:
            accepted, _ = srv.accept()
            with accepted:
                peer, local = client.getsockname()[:2], srv.getsockname()[:2]
                exact = procprobe.tcp_socket(peer, local)
                assert exact == (os.fstat(client.fileno()).st_ino, os.geteuid())
                src = socket.inet_pton(family, peer[0]).ljust(16, b"\0")
                dst = socket.inet_pton(family, local[0]).ljust(16, b"\0")
                table = procprobe._from_proc_net(family, src, dst, peer[1], local[1])
                assert table == exact


def test_the_budget_keeps_room_for_the_owner() -> None:
    """Other uids fill their own budgets and the shared one, never the owner's; a closed
    connection gives its place back; an unreadable uid counts as another uid."""
    from agentcoord.kernel.connlimits import ConnBudget, ConnLimits

    budget = ConnBudget(ConnLimits(owner_uid=1000, owner=3, per_uid=2, other_uids=3))
    assert [budget.admit(NOBODY) for _ in range(2)] == [None, None]
    assert "from uid 65534 (limit 2)" in (budget.admit(NOBODY) or "")
    assert budget.admit(None) is None
    assert "other uids (limit 3)" in (budget.admit(33) or "")
    assert [budget.admit(1000) for _ in range(3)] == [None, None, None]
    assert "from uid 1000 (limit 3)" in (budget.admit(1000) or "")
    budget.release(NOBODY)
    assert budget.admit(33) is None
    assert budget.open(NOBODY) == 1


def test_caller_slots_queue_one_caller_behind_itself() -> None:
    """A caller at its limit waits for one of its own requests to end, while another caller
    goes straight through; an idle caller keeps no state."""
    import asyncio

    from agentcoord.mcp.core import CallerSlots

    async def run() -> None:
        slots = CallerSlots(2)
        await slots.acquire("a")
        await slots.acquire("a")
        third = asyncio.create_task(slots.acquire("a"))
        await slots.acquire("b")  # not queued behind "a"
        await asyncio.sleep(0)
        assert not third.done()
        slots.release("a")
        await asyncio.wait_for(third, 10)
        for caller in ("a", "a", "b"):
            slots.release(caller)
        assert slots._slots == {}

    asyncio.run(run())


def _as_nobody(work: Any) -> Any:
    """``work()`` run in a forked child as uid 65534; its JSON-able result."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write_fd, json.dumps(work()).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to drop to another uid")
def test_another_uid_is_refused_without_a_search_and_a_small_body(daemon: Daemon) -> None:
    """Over HTTP, uid 65534 is refused by its uid, the human's token included, and a 1 MiB
    body from it is answered 413 at 64 KiB instead of being read."""
    port = _http_port(daemon)
    token = (daemon.state_dir / "human.token").read_text().strip()

    def post(body: bytes, auth: str | None) -> str:
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
        )
        if auth:
            head += f"Authorization: Bearer {auth}\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(head.encode() + b"\r\n")
            with contextlib.suppress(OSError):
                s.sendall(body)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and data.rstrip().endswith(b"}"):
                    break
            return data.decode(errors="replace")

    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    answers = _as_nobody(lambda: [post(ping, token), post(b" " * (1 << 20), None)])
    assert answers[0].startswith("HTTP/1.1 403"), answers[0]
    assert "uid 65534 may not use this daemon" in answers[0]
    assert answers[1].startswith("HTTP/1.1 413"), answers[1][:300]
    assert "limit 65536 bytes" in answers[1]
