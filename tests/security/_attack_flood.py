"""A local user's connection flood for the attack suite (docs/reliability.md "Attack suite"):
loopback TCP connections to the daemon's HTTP port, every other one dribbling a request head
one byte at a time (a slow client), the rest idle. The suite runs it as another uid where it
can.

    python _attack_flood.py HOST:PORT SECONDS

Each stdin line ``open N`` opens N more connections and answers ``open TOTAL`` (the suite opens
them in steps the daemon's accept queue can take). A thread dribbles on them until stdin closes
or SECONDS pass; then all are closed and it prints ``done N``, N being those the daemon had
closed.
"""

from __future__ import annotations

import select
import socket
import sys
import threading
import time

HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000


def _open(host: str, port: int, n: int) -> list[socket.socket]:
    """``n`` connections, each writable (connected) within 30 s, or left out."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.setblocking(False)
        s.connect_ex((host, port))
        socks.append(s)
    poll = select.poll()  # not select(): these descriptors go past 1,024
    by_fd = {s.fileno(): s for s in socks}
    for fd in by_fd:
        poll.register(fd, select.POLLOUT)
    ok: list[socket.socket] = []
    done: set[int] = set()
    deadline = time.monotonic() + 30
    while len(done) < len(by_fd) and time.monotonic() < deadline:
        for fd, event in poll.poll(1000):
            poll.unregister(fd)
            done.add(fd)
            if not event & (select.POLLERR | select.POLLHUP):
                ok.append(by_fd[fd])
    for fd, s in by_fd.items():
        if fd not in done or s not in ok:
            s.close()
    return ok


def main(addr: str, seconds: float) -> int:
    host, port = addr.rsplit(":", 1)
    assert host in ("127.0.0.1", "::1"), addr  # loopback only
    socks: list[socket.socket] = []
    lock = threading.Lock()
    stop = threading.Event()
    closed_by_daemon: set[int] = set()

    def dribble() -> None:
        offset = 0
        end = time.monotonic() + seconds
        while not stop.is_set() and time.monotonic() < end and offset < len(HEAD):
            with lock:
                for i, s in enumerate(socks):
                    if i % 2 == 0 and i not in closed_by_daemon:
                        try:
                            s.send(HEAD[offset : offset + 1])
                        except BlockingIOError:
                            pass
                        except OSError:
                            closed_by_daemon.add(i)
            offset += 1
            stop.wait(0.5)  # the dribble's pace: one byte per connection every half second

    thread = threading.Thread(target=dribble, daemon=True)
    thread.start()
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["open"]:
            new = _open(host, int(port), int(words[1]))
            with lock:
                socks.extend(new)
                total = len(socks)
            print(f"open {total}", flush=True)
    stop.set()
    thread.join(5)
    with lock:
        for i, s in enumerate(socks):
            try:
                if s.recv(1) == b"":
                    closed_by_daemon.add(i)
            except BlockingIOError:
                pass
            except OSError:
                closed_by_daemon.add(i)
            s.close()
    print(f"done {len(closed_by_daemon)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
