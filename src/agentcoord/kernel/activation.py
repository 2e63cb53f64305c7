"""systemd socket activation (sd_listen_fds(3)) and watchdog settings, as pure functions.

The environment is read once in :func:`agentcoord.kernel.config.load_config`; this module only
interprets the values, so it is unit-tested without systemd.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["SD_LISTEN_FDS_START", "listen_fds", "watchdog_interval"]

SD_LISTEN_FDS_START = 3


def listen_fds(env: Mapping[str, str], pid: int) -> tuple[tuple[int, str], ...]:
    """The inherited sockets as ``(fd, name)``; empty unless ``LISTEN_PID`` is this process."""
    if env.get("LISTEN_PID", "").strip() != str(pid):
        return ()
    try:
        count = int(env.get("LISTEN_FDS", "0"))
    except ValueError:
        return ()
    names = env.get("LISTEN_FDNAMES", "").split(":") if env.get("LISTEN_FDNAMES") else []
    out = []
    for i in range(max(0, count)):
        name = names[i] if i < len(names) and names[i] else "unknown"
        out.append((SD_LISTEN_FDS_START + i, name))
    return tuple(out)


def watchdog_interval(env: Mapping[str, str], pid: int) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``WATCHDOG_USEC``), or None when off."""
    owner = env.get("WATCHDOG_PID")
    if owner is not None and owner.strip() != str(pid):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
    except ValueError:
        return None
    return usec / 2_000_000 if usec > 0 else None
