"""The MCP tool surface, one module per tool family (docs/architecture.md "Tools").

Each family is a class built with the services its tools use, whose tools are methods declared
with :func:`~agentcoord.tools.base.tool`; the daemon's composition root
(:mod:`agentcoord.daemon.toolset`) builds the registry from them with
:func:`~agentcoord.tools.base.tools_of`."""

from __future__ import annotations

from agentcoord.tools.base import Tool, ToolHandler, obj_schema, tool, tools_of
from agentcoord.tools.registry import ToolRegistry

__all__ = ["Tool", "ToolHandler", "ToolRegistry", "obj_schema", "tool", "tools_of"]
