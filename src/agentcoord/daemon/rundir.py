"""Keeping the runtime dir: a removed dir or socket is made again while the daemon runs.

``systemd-tmpfiles`` ages files under /tmp, a user cleans ``/tmp`` or removes
``$XDG_RUNTIME_DIR/agentcoord`` by hand: without this every client would find no daemon until
a restart (docs/daemon.md "The runtime dir"). A check every :data:`CHECK_S` seconds (a removed
dir leaves no watch to fire, so this is a timer, not a wait for state) makes the dir again
``0700``, takes its lock again, binds the socket again (``0600``) and writes ``http.addr``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentcoord.errors import AgentCoordError
from agentcoord.kernel.files import write_private

if TYPE_CHECKING:
    from agentcoord.daemon.locks import DirLock
    from agentcoord.kernel.config import Config
    from agentcoord.mcp.unix import UnixListener

__all__ = ["CHECK_S", "keep_runtime_dir", "socket_identity"]

log = logging.getLogger(__name__)

CHECK_S = 2.0


def socket_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the socket file, None when it is gone."""
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


async def keep_runtime_dir(cfg: Config, unix: UnixListener, lock: DirLock, http_addr: str) -> None:
    """Run until cancelled: put the runtime dir, its lock, socket and ``http.addr`` back
    whenever the socket file is gone or is no longer ours."""
    ours = socket_identity(cfg.socket_path)
    if ours is None:
        return  # systemd's socket, or none of ours to keep
    while True:
        await asyncio.sleep(CHECK_S)  # a timer (see the module)
        if socket_identity(cfg.socket_path) == ours:
            continue
        try:
            await _restore(cfg, unix, lock, http_addr)
        except (OSError, AgentCoordError) as exc:  # tried again at the next check
            log.error("cannot make the runtime dir %s again: %s", cfg.runtime_dir, exc)
            continue
        ours = socket_identity(cfg.socket_path)
        if ours is None:
            return  # systemd's socket: not ours to bind


async def _restore(cfg: Config, unix: UnixListener, lock: DirLock, http_addr: str) -> None:
    cfg.runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(cfg.runtime_dir, 0o700)
    lock.renew()
    if await unix.relisten():
        write_private(cfg.http_addr_file, http_addr + "\n", durable=False)
        log.warning(
            "the runtime dir %s or its socket was removed: made again, socket bound again",
            cfg.runtime_dir,
        )
