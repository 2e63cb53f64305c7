"""One daemon per state dir and runtime dir: an flock the kernel drops when we die.

A killed daemon leaves its lock file behind but not the lock, so a restart is never blocked;
the pid written inside only serves the error message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType

from agentcoord.errors import DaemonAlreadyRunning

__all__ = ["DirLock"]


class DirLock:
    """Context manager holding an exclusive flock on ``<dir>/daemon.lock``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "daemon.lock"
        self._fd: int | None = None

    def __enter__(self) -> DirLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise DaemonAlreadyRunning(
                f"another agentcoord daemon (pid {holder}) is already running on "
                f"{self.path.parent}; stop it first or use another state/runtime dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def renew(self) -> None:
        """Lock the file again when it was removed with its dir (docs/daemon.md "The runtime
        dir"): the old lock is on a file no one can open any more. Raises
        :class:`DaemonAlreadyRunning` when another daemon has taken the new one."""
        try:
            if self._fd is not None and os.fstat(self._fd).st_ino == self.path.stat().st_ino:
                return  # still the file's lock
        except FileNotFoundError:
            pass
        old, self._fd = self._fd, None
        self.__enter__()
        if old is not None:
            os.close(old)

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None
