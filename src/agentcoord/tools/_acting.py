"""Who a tool acts for: always the caller the transport identified (DESIGN.md "Identity and
trust"); an ``agent``/``from`` argument may only repeat that name."""

from __future__ import annotations

from typing import Any, TypeVar

from agentcoord.errors import IdentityMismatch, ToolError
from agentcoord.tools._base import ToolContext

__all__ = ["acting_agent", "running"]

T = TypeVar("T")


def acting_agent(ctx: ToolContext, args: dict[str, Any], key: str = "agent") -> str:
    """The caller's agent name; raises :class:`IdentityMismatch` if ``args[key]`` disagrees."""
    claimed = args.get(key)
    if claimed and claimed != ctx.caller.agent:
        raise IdentityMismatch(f"identity mismatch: you are {ctx.caller.agent}, not {claimed}")
    return ctx.caller.agent


def running(service: T | None, what: str) -> T:
    """``service``, or a clear tool error while the daemon runs without it."""
    if service is None:
        raise ToolError(f"{what} is not available in this daemon")
    return service
