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

__all__ = ["UNLISTED", "Tool", "ToolHandler", "model_schema", "obj_schema", "unlisted"]

ToolHandler = Callable[[Caller, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    """One MCP tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    render: Callable[[dict[str, Any]], str] | None = field(default=None, compare=False)
    # False: callable by everyone, listed to the human alone. For a tool a program calls and
    # a model does not need in every request (docs/claude-code.md "Results for the model").
    listed: bool = True
    # True: the tool changes nothing, so a client may send it again after a lost connection
    # (MCP 2025-06-18 "Tool annotations", readOnlyHint: in the human's listing; every client's
    # initialize result names them too). The shim resends such calls across a daemon restart
    # (docs/claude-code.md "When the daemon restarts").
    read_only: bool = False

    def listing(self, *, full: bool = False) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it: the schema without its checker-only limits;
        ``full`` (the human's listing) keeps the unlisted properties."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": model_schema(self.input_schema, full=full),
        }
        if self.read_only and full:  # an agent learns them from initialize, at no token cost
            out["annotations"] = {"readOnlyHint": True}
        return out


# Limits the argument checker enforces (tools/arguments.py) whose breach is an error naming the
# limit: the model reads them only when it hits one, not in every tools/list
# (docs/tools.md "Conventions": the whole listing should cost few tokens).
_CHECK_ONLY = frozenset({"maxLength", "minimum", "maximum"})

# A property the checker accepts and the listing leaves out: an ``agent``/``from`` that can
# only name the caller itself (tools/_acting.py), on tools whose reference omits it, costs every
# request its bytes and tells the model nothing (docs/claude-code.md "Results for the model").
UNLISTED = "x-unlisted"


def unlisted(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` as an accepted, unlisted property."""
    return {**spec, UNLISTED: True}


def _published(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in _CHECK_ONLY and k != UNLISTED}
    if isinstance(out.get("items"), dict):
        out["items"] = _published(out["items"])
    return out


def model_schema(schema: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
    """``schema`` as the model reads it: every listed argument (all of them when ``full``)
    with its type, enum and required-ness, no checker-only limits, and no empty
    ``properties`` (MCP requires only ``type``)."""
    out: dict[str, Any] = {"type": "object"}
    props = schema.get("properties") or {}
    if props:
        listed = {k: _published(v) for k, v in props.items() if full or not v.get(UNLISTED)}
        if listed:
            out["properties"] = listed
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def obj_schema(required: tuple[str, ...] = (), **props: dict[str, Any]) -> dict[str, Any]:
    """A compact object schema; keeps the whole ``tools/list`` cheap in tokens."""
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return schema
