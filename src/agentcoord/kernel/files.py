"""The one atomic write: every file agentcoord writes whole (state files, tokens, certificates,
nats.conf, ``http.addr``, Claude Code's settings, git hooks, the plugin) goes through
:func:`write_atomic`, so the old content or the new one is there, never half of either.
:func:`write_private` is the daemon's case: created 0600, fsynced."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomic", "write_private"]


def write_atomic(
    path: Path,
    data: str | bytes,
    *,
    mode: int = 0o600,
    keep_mode: bool = False,
    durable: bool = True,
) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename.

    ``mode`` is the new file's permission bits (``keep_mode``: an existing file keeps its own,
    as a user's config file should). ``durable`` also fsyncs the file and its directory, so the
    write holds after a crash; files that go with the boot (``http.addr``) or are rewritten
    from their source each time skip it.
    """
    if keep_mode and path.exists():
        mode = path.stat().st_mode & 0o777
    tmp = path.with_name(f".{path.name}.agentcoord-tmp")
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # the umask narrowed what O_CREAT set; an old tmp kept its bits
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if not durable:
        return
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def write_private(path: Path, text: str | bytes, *, durable: bool = True) -> None:
    """Write a file atomically, created 0600: the daemon's state and secrets. ``durable``
    (state) fsyncs; runtime files (``http.addr``) go with the boot and skip it."""
    write_atomic(path, text, mode=0o600, durable=durable)
