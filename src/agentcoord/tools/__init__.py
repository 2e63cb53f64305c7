"""The MCP tool surface, one module per tool family (docs/tools.md).

Each module's ``tools(...)`` takes the services its tools use; the daemon's composition root
(:mod:`agentcoord.daemon.toolset`) builds the registry from them."""

from __future__ import annotations

from agentcoord.tools.base import Tool, ToolHandler, obj_schema
from agentcoord.tools.registry import ToolRegistry

__all__ = ["Tool", "ToolHandler", "ToolRegistry", "obj_schema"]
