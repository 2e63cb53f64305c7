"""Tell the claim store when a holder's process exits (docs/claims.md "Rules": a claim is
released ``holder-exited``). Linux: a pidfd becomes readable when its process exits, so
exits arrive as events, not by polling; where ``os.pidfd_open`` is missing, a psutil poll
stands in (the platform seam).

A process is named by ``(pid, create_time)`` so a recycled pid is never mistaken for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentcoord.kernel.lazy import on_first_use
from agentcoord.kernel.tasks import TaskSet

if TYPE_CHECKING:
    import psutil
else:  # ~6 ms of imports that the daemon's start-up does not need (agentcoord.kernel.lazy)
    psutil = on_first_use("psutil")

__all__ = ["ProcKey", "ProcessWatch", "proc_key"]

log = logging.getLogger(__name__)

ProcKey = tuple[int, float]  # (pid, create_time)
_POLL_INTERVAL = 0.5


def proc_key(pid: int) -> ProcKey | None:
    """The key of the live process ``pid``, or None when it is gone."""
    try:
        return pid, psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


def _alive(key: ProcKey) -> bool:
    return proc_key(key[0]) == key


class ProcessWatch:
    """Async context manager; ``on_exit(key)`` is called once per watched process that exits."""

    def __init__(self, on_exit: Callable[[ProcKey], None]) -> None:
        self._on_exit = on_exit
        self._fds: dict[ProcKey, int] = {}
        self._polled: set[ProcKey] = set()
        self._tasks = TaskSet("process watch")  # the poller, where there is no pidfd
        self._poller: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> ProcessWatch:
        self._loop = asyncio.get_running_loop()
        await self._tasks.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._tasks.__aexit__(None, None, None)  # cancels the poller, waits for it
        finally:
            self._poller = None
            for key in list(self._fds):
                self._forget(key)

    def watching(self, key: ProcKey) -> bool:
        return key in self._fds or key in self._polled

    def watch(self, key: ProcKey) -> None:
        """Start watching ``key``; if it is already gone, ``on_exit`` is called at once."""
        if self.watching(key):
            return
        assert self._loop is not None, "use ProcessWatch as an async context manager"
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            self._polled.add(key)
            if self._poller is None:
                self._poller = self._tasks.spawn(self._poll(), name="claims-procpoll")
            return
        try:
            fd = pidfd_open(key[0])
        except OSError:
            self._loop.call_soon(self._on_exit, key)
            return
        # The pidfd pins the pid; only now is comparing the start time free of races.
        if not _alive(key):
            os.close(fd)
            self._loop.call_soon(self._on_exit, key)
            return
        self._fds[key] = fd
        self._loop.add_reader(fd, self._exited, key)

    def _forget(self, key: ProcKey) -> None:
        fd = self._fds.pop(key, None)
        if fd is not None and self._loop is not None:
            self._loop.remove_reader(fd)
            os.close(fd)

    def _exited(self, key: ProcKey) -> None:
        self._forget(key)
        log.info("holder process %d exited", key[0])
        self._on_exit(key)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(_POLL_INTERVAL)  # fallback only: no pidfd on this platform
            for key in [k for k in self._polled if not _alive(k)]:
                self._polled.discard(key)
                self._on_exit(key)
