"""Shared checks for tools that act as the caller (docs/tools.md "Conventions")."""

from __future__ import annotations

from typing import Any

from agentcoord.errors import IdentityMismatch
from agentcoord.kernel.caller import Caller

__all__ = ["acting_agent"]


def acting_agent(caller: Caller, args: dict[str, Any], *keys: str) -> str:
    """The caller's id; an ``agent``/``from`` argument that names someone else is an error."""
    me = caller.agent
    for key in keys or ("agent", "from"):
        claimed = args.get(key)
        if claimed and claimed != me:
            raise IdentityMismatch(me, str(claimed))
    return me
