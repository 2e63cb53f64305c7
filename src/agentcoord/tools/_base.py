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

__all__ = ["Tool", "ToolHandler", "model_schema", "obj_schema"]

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
        """The tool as ``tools/list`` shows it: the schema without its checker-only limits."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": model_schema(self.input_schema),
        }


# Limits the argument checker enforces (tools/_args.py) whose breach is an error naming the
# limit: the model reads them only when it hits one, not in every tools/list (DESIGN.md "The
# tool surface": the whole listing should cost few tokens).
_CHECK_ONLY = frozenset({"maxLength", "minimum", "maximum"})


def _published(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in _CHECK_ONLY}
    if isinstance(out.get("items"), dict):
        out["items"] = _published(out["items"])
    return out


def model_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as the model reads it: every argument with its type, enum and required-ness,
    no checker-only limits, and no empty ``properties`` (MCP requires only ``type``)."""
    out: dict[str, Any] = {"type": "object"}
    props = schema.get("properties") or {}
    if props:
        out["properties"] = {k: _published(v) for k, v in props.items()}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def obj_schema(required: tuple[str, ...] = (), **props: dict[str, Any]) -> dict[str, Any]:
    """A compact object schema; keeps the whole ``tools/list`` cheap in tokens."""
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return schema
