"""What one client sends cannot grow the daemon without bound: pipelined requests never read,
a giant batch, an oversize reply, parallel kube lists of large objects all leave the daemon's
peak resident memory (VmHWM) under 500 MiB (docs/security.md "Limits")."""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import json
import os
import socket
import ssl
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon

BOUND_KIB = 500 * 1024  # the daemon's peak RSS the tests allow


def _status_kib(d: Daemon, field: str) -> int:
    assert d.proc is not None
    for line in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field}")


def _hwm_kib(d: Daemon) -> int:
    """The daemon's peak resident memory so far."""
    return _status_kib(d, "VmHWM")


def _rss_kib(d: Daemon) -> int:
    return _status_kib(d, "VmRSS")


def _human_socket(d: Daemon) -> socket.socket:
    """A unix connection logged in as the human (the CLI's ``agentcoord/login``)."""
    token = (d.state_dir / "human.token").read_text().strip()
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(120)
    s.connect(str(d.socket))
    login = {"jsonrpc": "2.0", "id": "login", "method": "agentcoord/login"}
    s.sendall(json.dumps({**login, "params": {"token": token}}).encode() + b"\n")
    assert b'"result"' in _read_lines(s, 1, d)[0], d.log()
    return s


def _read_lines(s: socket.socket, count: int, d: Daemon) -> list[bytes]:
    buf = b""
    lines: list[bytes] = []
    while len(lines) < count:
        chunk = s.recv(1 << 20)
        assert chunk, f"the daemon closed the connection\n{d.log()[-4000:]}"
        buf += chunk
        *done, buf = buf.split(b"\n")
        lines.extend(done)
    assert not buf
    return lines


def test_pipelined_pings_never_read_stay_bounded(daemon: Daemon) -> None:
    """200,000 pings sent without reading a reply: the daemon stops reading the connection
    once its replies are not drained, so its peak memory stays under the bound; every ping is
    answered once the client reads."""
    count = 200_000
    s = _human_socket(daemon)
    pings = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(count))
    sent = threading.Event()

    def send() -> None:
        s.sendall(pings)
        sent.set()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    # Nothing is read for 15 s: unbounded, the daemon's memory climbs past the bound (and the
    # wait ends there); bounded, it stops reading and the sender blocks on its full socket.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _rss_kib(daemon) < BOUND_KIB:
        sent.wait(0.2)
    assert _hwm_kib(daemon) < BOUND_KIB, f"peak RSS {_hwm_kib(daemon)} KiB unread"
    replies = _read_lines(s, count, daemon)
    sender.join(timeout=120)
    assert len(replies) == count
    assert all(b'"result":{}' in r for r in replies[:10]), replies[:10]
    s.close()
    assert _hwm_kib(daemon) < BOUND_KIB, f"peak RSS {_hwm_kib(daemon)} KiB"


def test_one_callers_flood_leaves_the_others_answered(daemon: Daemon) -> None:
    """20,000 pipelined ``tools/list`` from one caller that never reads: the daemon holds at
    most its in-flight bound of them, another connection's ping is answered meanwhile, and the
    daemon's peak memory stays under the bound."""
    flood = _human_socket(daemon)
    lists = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % i for i in range(20_000)
    )
    sender = threading.Thread(target=lambda: _send_quietly(flood, lists), daemon=True)
    sender.start()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _rss_kib(daemon) < BOUND_KIB:
        sender.join(0.2)
    with socket.socket(socket.AF_UNIX) as other:
        other.settimeout(60)
        other.connect(str(daemon.socket))
        other.sendall(b'{"jsonrpc":"2.0","id":"other","method":"ping"}\n')
        assert b'"id":"other"' in _read_lines(other, 1, daemon)[0]
    assert _hwm_kib(daemon) < BOUND_KIB, f"peak RSS {_hwm_kib(daemon)} KiB"
    flood.shutdown(socket.SHUT_RDWR)  # hung up on (and the blocked sender woken): the rest
    sender.join(60)  # of what it had in flight is cancelled
    flood.close()


def test_a_flood_never_read_holds_back_only_its_own_connection(daemon: Daemon) -> None:
    """A caller that pipelines 200,000 pings on one unix connection and never reads a reply
    holds back only that connection: its other connection is answered throughout, also once
    the daemon has stopped reading the flood (its replies do not hold the caller's slots)."""
    flood = _human_socket(daemon)
    pings = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(200_000))
    sent = [0]

    def send() -> None:
        with contextlib.suppress(OSError):  # shut down by the test at the end
            while sent[0] < len(pings):
                sent[0] += flood.send(pings[sent[0] : sent[0] + 65536])

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        other = _human_socket(daemon)  # the same caller as the flood: the human
        other.settimeout(60)
        # Each round trip on ``other`` gives the daemon's loop a turn, in which the flood's reader
        # starts at most its in-flight bound of requests: after a few hundred turns with nothing
        # more read from the flood nor written to it, the daemon has stopped reading it for good.
        still, n = 0, 0
        while still < 300:
            before = (sent[0], _unread(flood))
            other.sendall(b'{"jsonrpc":"2.0","id":"probe-%d","method":"ping"}\n' % n)
            try:
                (line,) = _read_lines(other, 1, daemon)
            except TimeoutError:
                pytest.fail(
                    f"the caller's other connection got no answer to ping {n} while its flood was "
                    f"held back ({before[0]} bytes sent)\n{daemon.log()[-4000:]}"
                )
            assert b'"id":"probe-%d"' % n in line, line
            held = before[1] > 0 and (sent[0], _unread(flood)) == before
            still = still + 1 if held else 0
            n += 1
            assert sent[0] < len(pings), "the daemon read the whole flood with its replies unread"
        assert _hwm_kib(daemon) < BOUND_KIB, f"peak RSS {_hwm_kib(daemon)} KiB"
        other.close()
    finally:
        flood.shutdown(socket.SHUT_RDWR)  # hung up on: what it had in flight is cancelled
        sender.join(60)
        flood.close()


def _unread(s: socket.socket) -> int:
    """Bytes of replies waiting to be read on ``s`` (unix(7) SIOCINQ)."""
    buf = bytearray(4)
    fcntl.ioctl(s.fileno(), termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder)


def _send_quietly(s: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # closed by the test once it has seen enough
        s.sendall(data)


def test_a_giant_batch_is_refused_in_one_line(daemon: Daemon) -> None:
    """A batch of 5,000 ``tools/list`` (the human's full listing each) is refused whole with
    one error naming the batch limit, and the daemon's peak memory stays under the bound."""
    s = _human_socket(daemon)
    batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(5000)]
    s.sendall(json.dumps(batch).encode() + b"\n")
    (line,) = _read_lines(s, 1, daemon)
    reply = json.loads(line)
    assert isinstance(reply, dict), f"{len(line)} bytes of replies"
    assert reply["error"]["code"] == -32600
    assert "batch of 5000 messages (limit 64)" in reply["error"]["message"]
    s.close()
    assert _hwm_kib(daemon) < BOUND_KIB, f"peak RSS {_hwm_kib(daemon)} KiB"


def test_a_reply_over_the_limit_is_a_clear_error(daemon_factory: Any) -> None:
    """With a 4 KiB reply limit, the human's ``tools/list`` (larger) is answered with an error
    saying how large it was and the limit; a batch stops running once its replies pass it."""
    d = daemon_factory(AGENTCOORD_MCP_MAX_REPLY_BYTES="4096").start()
    s = _human_socket(d)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    reply = json.loads(_read_lines(s, 1, d)[0])
    assert reply["id"] == 1
    assert reply["error"]["code"] == -32003
    assert "Reply too large" in reply["error"]["message"]
    assert "limit 4096" in reply["error"]["message"]
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(3)]
    batch.insert(1, {"jsonrpc": "2.0", "id": "big", "method": "tools/list"})
    s.sendall(json.dumps(batch).encode() + b"\n")
    replies = {r["id"]: r for r in json.loads(_read_lines(s, 1, d)[0])}
    assert replies[0]["result"] == {}
    assert replies["big"]["error"]["code"] == -32003
    assert replies[1]["error"]["code"] == -32003  # not run: the batch was over already
    s.close()


def _kube(d: Daemon) -> tuple[str, int, ssl.SSLContext]:
    kube = d.state_dir / "kube"
    ctx = ssl.create_default_context(cafile=str(kube / "ca.crt"))
    ctx.load_cert_chain(str(kube / "client.crt"), str(kube / "client.key"))
    host, port = (d.runtime_dir / "kube.addr").read_text().strip().rsplit(":", 1)
    return host, int(port), ctx


def _kube_request(
    d: Daemon,
    method: str,
    path: str,
    body: bytes = b"",
    ctype: str = "application/json",
) -> tuple[int, bytes]:
    import http.client

    host, port, ctx = _kube(d)
    conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=120)
    try:
        headers = {"content-type": ctype} if body else {}
        conn.request(method, path, body=body or None, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


_TASKS = "/apis/fastverk.savvifi.com/v1/namespaces/default/agenttasks"


def _task(name: str, size: int) -> bytes:
    return json.dumps(
        {
            "apiVersion": "fastverk.savvifi.com/v1",
            "kind": "AgentTask",
            "metadata": {"name": name, "annotations": {"filler": "x" * size}},
            "spec": {"objective": "hold bytes"},
        }
    ).encode()


def test_an_object_over_the_size_limit_is_refused(daemon: Daemon) -> None:
    """A 2 MiB object is refused with 413 RequestEntityTooLarge naming the limit, as
    kube-apiserver refuses an oversize body; a 1 MiB one is stored."""
    status, body = _kube_request(daemon, "POST", _TASKS, _task("big", 2 << 20))
    assert status == 413, body[:300]
    doc = json.loads(body)
    assert doc["reason"] == "RequestEntityTooLarge"
    assert f"limit is {1536 << 10} bytes" in doc["message"]
    status, body = _kube_request(daemon, "POST", _TASKS, _task("fits", 1 << 20))
    assert status == 201, body[:300]


def test_small_patches_cannot_grow_an_object_past_the_limit(daemon: Daemon) -> None:
    """Merge patches that each fit the limit are refused with 413 once the object they make
    would pass it, and the stored object stays as it was."""
    status, body = _kube_request(daemon, "POST", _TASKS, _task("grows", 1 << 20))
    assert status == 201, body[:300]
    merge = "application/merge-patch+json"
    small = json.dumps({"metadata": {"annotations": {"a": "y" * (300 << 10)}}}).encode()
    status, body = _kube_request(daemon, "PATCH", f"{_TASKS}/grows", small, merge)
    assert status == 200, body[:300]
    more = json.dumps({"metadata": {"annotations": {"b": "z" * (300 << 10)}}}).encode()
    status, body = _kube_request(daemon, "PATCH", f"{_TASKS}/grows", more, merge)
    assert status == 413, body[:300]
    doc = json.loads(body)
    assert doc["reason"] == "RequestEntityTooLarge"
    assert "the patched object has" in doc["message"]
    status, body = _kube_request(daemon, "GET", f"{_TASKS}/grows")
    assert status == 200, body[:300]
    assert set(json.loads(body)["metadata"]["annotations"]) == {"filler", "a"}


def test_parallel_kube_lists_of_large_objects_stay_bounded(daemon: Daemon) -> None:
    """Eight clients list 40 objects of 1.4 MiB each at once, reading slowly: each list is
    streamed from the stored bytes, so the daemon's peak memory stays under the bound, and
    every list is whole."""
    for i in range(40):
        status, body = _kube_request(daemon, "POST", _TASKS, _task(f"t{i}", 1400 << 10))
        assert status == 201, body[:300]
    host, port, ctx = _kube(daemon)
    request = (
        f"GET {_TASKS} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n"
        "Connection: close\r\n\r\n"
    ).encode()

    def slow_list(client: int) -> int:
        raw = socket.create_connection((host, port), timeout=120)
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(request)
            data = bytearray()
            while chunk := s.recv(16 << 10):  # small reads: the daemon must wait on us
                data += chunk
        head, _, body = bytes(data).partition(b"\r\n\r\n")
        assert b" 200 " in head.split(b"\r\n")[0], head[:200]
        if b"chunked" in head.lower():
            body = _unchunk(body)
        return len(json.loads(body)["items"])

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        counts = list(pool.map(slow_list, range(8)))
    assert counts == [40] * 8
    assert _hwm_kib(daemon) < BOUND_KIB, f"peak RSS {_hwm_kib(daemon)} KiB"


def _unchunk(body: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += rest[:size]
        body = rest[size + 2 :]


@pytest.fixture(autouse=True)
def _room_for_the_load() -> None:
    """These tests hold several hundred MiB in the client: skip on a machine without it."""
    avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if avail < 2 << 30:
        pytest.skip(f"only {avail >> 20} MiB free: the load itself would not fit")
