"""What a tool is: a name, a tight description, an input schema and an async handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord.daemon.caller import Caller

if TYPE_CHECKING:
    from agentcoord.daemon.app import App

__all__ = ["Tool", "ToolContext", "ToolHandler", "obj_schema"]


@dataclass(frozen=True)
class ToolContext:
    """Per-call context: who calls (from the transport) and the daemon's services."""

    caller: Caller
    app: App


ToolHandler = Callable[[ToolContext, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    """One MCP tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    render: Callable[[dict[str, Any]], str] | None = field(default=None, compare=False)

    def listing(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }


def obj_schema(required: tuple[str, ...] = (), **props: dict[str, Any]) -> dict[str, Any]:
    """A compact object schema; keeps the whole ``tools/list`` cheap in tokens."""
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return schema
