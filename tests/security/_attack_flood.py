"""A local user's connection flood for the attack suite (docs/reliability.md "Attack suite"):
``COUNT`` loopback TCP connections to the daemon's HTTP port, every other one dribbling a
request head one byte at a time (a slow client), the rest idle. The suite runs it as another
uid where it can.

    python _attack_flood.py HOST:PORT COUNT SECONDS

Prints ``ready N`` once N connections are open, dribbles until stdin closes or SECONDS pass,
then closes them all and prints ``done N`` with how many the daemon had closed.
"""

from __future__ import annotations

import errno
import select
import socket
import sys
import threading
import time

HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000


def main(addr: str, count: int, seconds: float) -> int:
    host, port = addr.rsplit(":", 1)
    assert host in ("127.0.0.1", "::1"), addr  # loopback only
    socks: list[socket.socket] = []
    deadline = time.monotonic() + 30
    for _ in range(count):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.setblocking(False)
        err = s.connect_ex((host, int(port)))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            continue
        socks.append(s)
        if time.monotonic() > deadline:
            break
    # Wait (bounded) for the connects to complete.
    pending = list(socks)
    while pending and time.monotonic() < deadline:
        _, done, _ = select.select([], pending[:1000], [], 1.0)
        pending = [s for s in pending if s not in done]
    open_ = [s for s in socks if s not in pending]
    print(f"ready {len(open_)}", flush=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    closed_by_daemon: set[int] = set()
    offset = 0
    end = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < end and offset < len(HEAD):
        for i, s in enumerate(open_):
            if i % 2 or i in closed_by_daemon:
                continue
            try:
                s.send(HEAD[offset : offset + 1])
            except OSError:
                closed_by_daemon.add(i)
        offset += 1
        stop.wait(0.5)  # the dribble's pace: one byte per connection every half second
    for i, s in enumerate(open_):
        try:
            if s.recv(1) == b"":
                closed_by_daemon.add(i)
        except BlockingIOError:
            pass
        except OSError:
            closed_by_daemon.add(i)
        s.close()
    for s in pending:
        s.close()
    print(f"done {len(closed_by_daemon)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
