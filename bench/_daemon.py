"""A daemon for bench/run: started on temp dirs, the human's token and its NATS login, and
resident memory."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
from _common import human_token
from messaging import nats_user, start_daemon

from agentcoord.client.rpc import call_unix

__all__ = ["RunningDaemon", "rss_mb", "running_daemon"]


def rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / (1 << 20)


@dataclass
class RunningDaemon:
    proc: subprocess.Popen[bytes]
    root: Path
    token: str  # the human's (bench/_common.py login): every bench connection presents it
    nats_url: str
    user: str
    password: str

    @property
    def sock(self) -> Path:
        return self.root / "run" / "agentcoord.sock"

    def status(self) -> dict[str, object]:
        status = call_unix(self.sock, "agentcoord/status", {}, token=self.token)
        return status  # type: ignore[no-any-return]

    def rss(self) -> tuple[float, float]:
        """(daemon, nats-server) resident set sizes in MiB."""
        nats_pid = int(str(self.status()["nats_pid"]))
        return rss_mb(self.proc.pid), rss_mb(nats_pid)


@contextlib.contextmanager
def running_daemon(root: Path, **extra: str) -> Iterator[RunningDaemon]:
    root.mkdir(parents=True, exist_ok=True)
    proc, _env = start_daemon(root, extra)
    try:
        token = human_token(root / "state")
        sock = root / "run" / "agentcoord.sock"
        url = call_unix(sock, "agentcoord/status", {}, token=token)["nats_url"]
        user, pw = nats_user(root / "state")
        yield RunningDaemon(proc, root, token, url, user, pw)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
