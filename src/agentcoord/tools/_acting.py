"""A daemon part a tool needs, or a clear tool error while the daemon runs without it (who
a tool acts for is tools/_caller.py, DESIGN.md "Identity and trust")."""

from __future__ import annotations

from typing import TypeVar

from agentcoord.errors import ToolError

__all__ = ["running"]

T = TypeVar("T")


def running(service: T | None, what: str) -> T:
    """``service``, or a clear tool error while the daemon runs without it."""
    if service is None:
        raise ToolError(f"{what} is not available in this daemon")
    return service
