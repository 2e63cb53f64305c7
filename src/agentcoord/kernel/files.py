"""The one private atomic write: every state file the daemon keeps (tokens, format.json,
records, ``http.addr``) goes through it, so each is 0600 and never half-written."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, text: str, *, durable: bool = True) -> None:
    """Write a file atomically, created 0600: the old content or the new one is there, never
    half of either. ``durable`` (state) also fsyncs the file and its directory, so that holds
    after a crash too; runtime files (``http.addr``) go with the boot and skip it."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    if not durable:
        return
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
