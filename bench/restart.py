"""A session across a daemon restart: how long a live session is without its tools when the
daemon restarts, against the daemon's own restart, both measured in this run.

    PYTHONPATH=src python bench/restart.py [--runs N]

One session (``agentcoord mcp`` under a stand-in ``claude``, driven over its stdio as Claude
Code drives it) calls ``whoami``; then the daemon gets SIGTERM and is started again on the same
state. "Ours" is the time from the SIGTERM to the session's next ``whoami`` answered through
the same shim (it reconnects, replays its handshake and relays the call: docs/claude-code.md
"When the daemon restarts"). The raw baseline is the time from the same SIGTERM to the first
``ping`` a fresh unix connection gets answered: the restart itself, with no session in it.
The ratio says what the shim's reconnection adds to a restart. Every run checks that the
session keeps its agent name.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_ms, table
from messaging import start_daemon

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "fakes" / "claude_standin.py"
_DEADLINE = 60.0  # seconds any one step may take before the bench fails


class Session:
    """``claude -- agentcoord mcp`` with newline-delimited JSON-RPC on its stdio."""

    def __init__(self, claude: Path, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [str(claude), "--", sys.executable, "-m", "agentcoord", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._ids = 0
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}
        self.request("initialize", init)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        self._send({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        while True:
            reply = json.loads(self._lines.get(timeout=_DEADLINE))
            if reply.get("id") == self._ids:
                return reply  # type: ignore[no-any-return]

    def whoami(self) -> dict[str, Any]:
        """The ``whoami`` result; None-free: an error reply raises with its text."""
        reply = self.request("tools/call", {"name": "whoami", "arguments": {}})
        result = reply.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            raise RuntimeError(f"whoami failed: {reply}")
        return result["structuredContent"]  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(_DEADLINE)


def run(runs: int) -> tuple[list[float], list[float]]:
    """(session outages, bare restarts) in seconds, one of each per run."""
    ours: list[float] = []
    raw: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        root = Path(tmp)
        claude = root / "bin" / "claude"
        claude.parent.mkdir()
        claude.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
        claude.chmod(0o755)
        proc, env = start_daemon(root / "d")
        env = {**env, "AGENTCOORD_NO_AUTOSTART": "1"}  # the bench restarts it, not the shim
        session = Session(claude, env, root)
        try:
            name = session.whoami()["agent"]
            for i in range(runs * 2):
                t0 = time.perf_counter()
                _stop(proc)
                proc, _ = start_daemon(root / "d")  # returns once a fresh connection's ping answers
                if i % 2:  # alternate: the session's call, then a fresh connection's
                    if session.whoami()["agent"] != name:
                        raise RuntimeError("the session came back under another name")
                    ours.append(time.perf_counter() - t0)
                else:
                    raw.append(time.perf_counter() - t0)
                    session.whoami()  # reconnected before the next run's stop
        finally:
            session.close()
            _stop(proc)
    return ours, raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    os.environ.pop("AGENTCOORD_RUNTIME_DIR", None)
    ours, raw = run(args.runs)
    print(
        table(
            [
                (
                    "SIGTERM -> the session's next whoami, same shim",
                    median_ms(ours),
                    "SIGTERM -> a fresh connection's ping",
                    median_ms(raw),
                    "<= 1.5x",
                )
            ]
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
