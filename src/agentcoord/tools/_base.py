"""What a tool is: a name, a tight description, an input schema and an async handler.

A tool module exposes ``tools(<the services it uses>) -> list[Tool]``: its handlers close over
exactly those services and take only who calls (from the transport) and the checked
arguments. The composition root (:mod:`agentcoord.daemon.toolset`) hands each module its
services; no tool sees the rest of the daemon (docs/architecture.md "Tools").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentcoord.kernel.caller import Caller

__all__ = ["Tool", "ToolHandler", "obj_schema"]

ToolHandler = Callable[[Caller, dict[str, Any]], Awaitable[dict[str, Any]]]


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

