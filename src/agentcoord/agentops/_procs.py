"""Process helpers of the controller: identity by (pid, start time), waiting on pidfds for
processes that are not our children, and stopping a runner's process group."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from agentcoord.kernel.pidfd import wait_pid
from agentcoord.localagents.proctree import stop_tree

__all__ = [
    "create_time_of",
    "descendants",
    "kill_pgroup",
    "read_text",
    "wait_gone",
    "wait_pid",
]


def create_time_of(pid: int) -> float | None:
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None  # dead, waiting for a parent that is gone (a kill -9 of the daemon)
        return float(proc.create_time())
    except (psutil.Error, OSError):
        return None


def descendants(pids: list[int]) -> list[Any]:
    """Every process below the given runners (psutil handles), looked up before a stop."""
    import psutil

    out: list[Any] = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            out.extend(psutil.Process(pid).children(recursive=True))
    return out


def wait_gone(procs: list[Any], timeout: float) -> None:
    """Wait on pidfds until ``procs`` have exited (a zombie whose parent is gone counts as
    exited); SIGKILL whatever is left after ``timeout``. Runs in a worker thread."""
    import psutil

    left = _wait_pidfds(procs, timeout)
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.kill()  # psutil checks it is still the same process
    _wait_pidfds(left, timeout)


def _wait_pidfds(procs: list[Any], timeout: float) -> list[Any]:
    import select

    fds: dict[int, Any] = {}
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            fds[os.pidfd_open(proc.pid)] = proc
    deadline = time.monotonic() + timeout
    # poll, not select: select() cannot take a descriptor above FD_SETSIZE (1024).
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        while fds and (remaining := deadline - time.monotonic()) > 0:
            for fd, _ in poller.poll(remaining * 1000):
                poller.unregister(fd)
                os.close(fd)
                fds.pop(fd)
        return list(fds.values())
    finally:
        for fd in fds:
            os.close(fd)


def read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


async def kill_pgroup(pid: int) -> None:
    """Stop an adopted runner with everything it started, its sandbox included: SIGTERM, then
    SIGKILL after a grace period (docs/localagents.md "Stopping a runner")."""
    await stop_tree(pid)
