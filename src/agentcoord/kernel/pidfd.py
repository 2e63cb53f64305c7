"""Waiting for a process to exit on its pidfd: an event on the loop, not a poll.

Shared by the operator (any process, :mod:`agentcoord.agentops`) and the runner (its own
children, :mod:`agentcoord.localagents.runner`).
"""

from __future__ import annotations

import asyncio
import os

__all__ = ["wait_pid"]


async def wait_pid(pid: int, timeout: float | None) -> bool:
    """Wait for any process (not only a child) to exit, on its pidfd; False on timeout."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    loop.add_reader(fd, exited.set)
    try:
        async with asyncio.timeout(timeout):
            await exited.wait()
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)
