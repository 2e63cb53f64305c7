"""The human's HTTP request while a crowd of tokenless loopback connections each wait to be
identified, against the same request on an idle daemon (the raw baseline, this run).

    python bench/crowd.py [--crowd N] [--runs N]

Each tokenless request makes the daemon find its peer's process (docs/security.md "Limits"):
the ratio says how much a crowd of them delays a request that presents the human token.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _daemon import running_daemon

_PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def _request(token: str | None) -> bytes:
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(_PING)}\r\n"
    )
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    return head.encode() + b"\r\n" + _PING


def _human(port: int, token: str) -> float:
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(_request(token))
        answer = s.recv(65536)
        if not answer.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"the human's request was answered {answer[:200]!r}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--crowd", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_daemon(Path(tmp) / "d") as d:
        port = int((d.root / "run" / "http.addr").read_text().strip().rsplit(":", 1)[1])
        idle = sorted(_human(port, d.token) for _ in range(args.runs))[args.runs // 2]
        crowded = []
        for _ in range(args.runs):
            crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.crowd)]
            for s in crowd:
                s.sendall(_request(None))
            crowded.append(_human(port, d.token))
            for s in crowd:
                s.close()
            # The next round starts on a daemon with the crowd gone: each closed connection
            # still takes its turn to be identified before it ends.
            while int(d.status()["connections"]["http"]) > 0:  # type: ignore[index]
                time.sleep(0.05)
        mid = sorted(crowded)[args.runs // 2]
    print(f"human request, idle daemon:             {idle * 1000:8.1f} ms")
    print(
        f"human request, {args.crowd} tokenless waiting: {mid * 1000:8.1f} ms ({mid / idle:.1f}x)"
    )


if __name__ == "__main__":
    main()
