"""The name rule most kinds share: a session reads as the basename of the directory it works in
(``/home/me/app`` reads as ``app``, so its agent is ``app-1``)."""

from __future__ import annotations

import os

__all__ = ["basename_of"]


def basename_of(cwd: str | None) -> str | None:
    """The last component of ``cwd``, or None for no directory or ``/``."""
    return os.path.basename((cwd or "").rstrip("/")) or None
