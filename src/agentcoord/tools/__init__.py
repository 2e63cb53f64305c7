"""The MCP tool surface, one module per tool family (DESIGN.md "The tool surface")."""

from __future__ import annotations

from agentcoord.tools._base import Tool, ToolContext, ToolHandler, obj_schema
from agentcoord.tools.registry import ToolRegistry, default_registry

__all__ = ["Tool", "ToolContext", "ToolHandler", "ToolRegistry", "default_registry", "obj_schema"]
