"""The tool registry of one daemon: each tool module gets the services its tools use, and
nothing else (docs/architecture.md "Tools")."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

from agentcoord.tools import a2a, agents, claims, discovery, handoff, humans, identity, lifecycle
from agentcoord.tools import messaging as messaging_tools
from agentcoord.tools._base import Tool, ToolContext
from agentcoord.tools.registry import ToolRegistry

__all__ = ["build_registry"]


def _legacy(module: ModuleType, app: Any) -> list[Tool]:
    """Transitional: a module still exporting ``TOOLS`` with handlers of (ctx, args)."""
    out = []
    for tool in module.TOOLS:
        old = tool.handler

        async def handler(caller: Any, args: dict[str, Any], _old: Any = old) -> dict[str, Any]:
            result: dict[str, Any] = await _old(ToolContext(caller, app), args)
            return result

        out.append(dataclasses.replace(tool, handler=handler))
    return out


def build_registry(app: Any) -> ToolRegistry:
    """Every tool family the daemon ships, in ``tools/list`` order."""
    families: list[Tool] = [*identity.tools()]
    for module in (discovery, claims, agents, messaging_tools, handoff, humans, a2a, lifecycle):
        families += _legacy(module, app)
    return ToolRegistry(families, human_only=humans.HUMAN_ONLY)
