"""What a tool is: a name, a tight description, an input schema and an async handler.

A tool family is a class built with exactly the services its tools use; each tool is a method
``async def name(self, caller, args) -> dict`` marked with :func:`tool`, which declares its
description, schema, rendering and flags. The method's name is the tool's name, so a reader
(or a static tool) goes from a ``tools/call`` to its code by name. :func:`tools_of` lists an
instance's tools in the order the class declares them; the composition root
(:mod:`agentcoord.daemon.toolset`) builds each family with its services, and no tool sees the
rest of the daemon (docs/architecture.md "Tools").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from agentcoord.kernel.caller import Caller

__all__ = [
    "UNLISTED",
    "Render",
    "Tool",
    "ToolHandler",
    "ToolSpec",
    "model_schema",
    "obj_schema",
    "tool",
    "tools_of",
    "unlisted",
]

ToolHandler = Callable[[Caller, dict[str, Any]], Awaitable[dict[str, Any]]]
Render = Callable[[dict[str, Any]], str]

# What :func:`tool` marks: a method taking (self, caller, args) and giving the result. The
# bound is what makes mypy check every handler's signature where it is declared.
_Method = TypeVar(
    "_Method", bound=Callable[[Any, Caller, dict[str, Any]], Awaitable[dict[str, Any]]]
)


@dataclass(frozen=True)
class Tool:
    """One MCP tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    render: Render | None = field(default=None, compare=False)
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
# limit: the model reads them only when it hits one, not in every tools/list (DESIGN.md "The
# tool surface": the whole listing should cost few tokens).
_CHECK_ONLY = frozenset({"maxLength", "minimum", "maximum"})

# A property the checker accepts and the listing leaves out: an ``agent``/``from`` that can
# only name the caller itself (tools/_acting.py), on tools whose seed does not list it, costs
# every request its bytes and tells the model nothing (docs/claude-code.md "Results for the
# model").
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


@dataclass(frozen=True)
class ToolSpec:
    """What :func:`tool` declares about one method: all of a :class:`Tool` but its name (the
    method's) and its handler (the method, bound to the family's instance)."""

    description: str
    input_schema: dict[str, Any]
    render: Render | None = None
    listed: bool = True
    read_only: bool = False


# The attribute :func:`tool` sets on a method, where :func:`tools_of` finds its spec.
_SPEC_ATTR = "__agentcoord_tool__"


def tool(
    *,
    description: str,
    schema: dict[str, Any],
    render: Render | None = None,
    listed: bool = True,
    read_only: bool = False,
) -> Callable[[_Method], _Method]:
    """Declare the method it decorates as a tool of its family, named after the method.

    ``render`` writes the result's text half (JSON when None); ``listed=False`` leaves it out
    of an agent's ``tools/list``; ``read_only`` marks a tool that changes nothing (see
    :class:`Tool`). The method itself is returned unchanged: a test calls it directly."""
    spec = ToolSpec(description, schema, render, listed, read_only)

    def declare(method: _Method) -> _Method:
        setattr(method, _SPEC_ATTR, spec)
        return method

    return declare


def tools_of(family: object) -> list[Tool]:
    """The tools ``family`` declares with :func:`tool`, in the order its class (bases first)
    defines them, each handled by the method bound to ``family``."""
    found: dict[str, ToolSpec] = {}
    for klass in reversed(type(family).__mro__):
        for name, member in vars(klass).items():
            spec = getattr(member, _SPEC_ATTR, None)
            if isinstance(spec, ToolSpec):
                found[name] = spec
    return [
        Tool(
            name,
            spec.description,
            spec.input_schema,
            cast(ToolHandler, getattr(family, name)),
            spec.render,
            listed=spec.listed,
            read_only=spec.read_only,
        )
        for name, spec in found.items()
    ]
