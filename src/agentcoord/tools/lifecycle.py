"""Lifecycle tools (seed 000): spawn_subagent, cancel, checkpoint, resume, merge. The daemon is
the operator: these write objects, the controller (:mod:`agentcoord.agentops.controller`)
turns them into runner processes."""

from __future__ import annotations

from typing import Any

from agentcoord.agentops import lifecycle
from agentcoord.tools._base import Tool, ToolContext, obj_schema
from agentcoord.tools.a2a import ops

__all__ = ["TOOLS"]

_S: dict[str, Any] = {"type": "string"}
_NAME: dict[str, Any] = {"type": "string", "maxLength": 52}


async def _spawn(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await lifecycle.spawn(
        ops(ctx),
        ctx.caller,
        args["name"],
        args.get("profile", ""),
        args.get("prompt", ""),
        args.get("repo", ""),
    )


async def _cancel(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await lifecycle.cancel(ops(ctx), ctx.caller, args["name"])


async def _checkpoint(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    name = args.get("name") or ctx.caller.agent
    return await lifecycle.checkpoint(
        ops(ctx), ctx.caller, name, args.get("task", ""), args.get("summary", "")
    )


async def _resume(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await lifecycle.resume(ops(ctx), ctx.caller, args["task"], args.get("name", ""))


async def _merge(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await lifecycle.merge(ops(ctx), ctx.caller, args["target"], args["source"])


TOOLS = [
    Tool(
        "spawn_subagent",
        "Start a new agent: prompt becomes its task (<name>-task); repo gives it a git "
        "worktree. An existing name is returned as is; another profile is an error.",
        obj_schema(("name",), name=_NAME, profile=_S, prompt=_S, repo=_S),
        _spawn,
        lambda r: f"agent {r['name']} ({'spawned' if r['created'] else 'exists'})",
    ),
    Tool(
        "cancel",
        "Stop an agent: its Agent (else its AgentTask) is deleted and its runner stopped.",
        obj_schema(("name",), name=_S),
        _cancel,
        lambda r: f"cancelled {r['name']}" + (" (runner stopped)" if r.get("stopped") else ""),
    ),
    Tool(
        "checkpoint",
        "Save an agent's work in progress and session (default: yours) to its task's checkpoints.",
        obj_schema(name=_S, task=_S, summary=_S),
        _checkpoint,
        lambda r: f"checkpoint {r['ref']} on task {r['task']}",
    ),
    Tool(
        "resume",
        "Start a fresh agent from a task's last checkpoint (work and session restored).",
        obj_schema(("task",), task=_S, name=_NAME),
        _resume,
        lambda r: f"agent {r['agent']} resumes from {r['resumed_from']}",
    ),
    Tool(
        "merge",
        "Record that source's work was merged into target (appends to lineage.mergedFrom).",
        obj_schema(("target", "source"), target=_S, source=_S),
        _merge,
        lambda r: f"{r['target']} merged from {', '.join(r['mergedFrom'])}",
    ),
]
