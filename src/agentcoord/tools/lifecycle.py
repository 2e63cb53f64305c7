"""Lifecycle tools (docs/ask-and-operator.md "The operator"): spawn_subagent, cancel, checkpoint,
resume, merge. The daemon is the operator: these write objects, the controller
(:mod:`agentcoord.agentops.controller`) turns them into runner processes."""

from __future__ import annotations

from typing import Any

from agentcoord.agentops import AgentOps
from agentcoord.agentops import lifecycleops as lifecycle
from agentcoord.kernel.caller import Caller
from agentcoord.tools.base import Tool, obj_schema

__all__ = ["tools"]

_S: dict[str, Any] = {"type": "string"}
_NAME: dict[str, Any] = {"type": "string", "maxLength": 52}
_PATH: dict[str, Any] = {"type": "string", "maxLength": 4096}  # PATH_MAX; a task's name too
_PROMPT: dict[str, Any] = {"type": "string", "maxLength": 100_000}  # as run_agent's task


def tools(operator: AgentOps) -> list[Tool]:
    """spawn_subagent, cancel, checkpoint, resume and merge over the daemon's agent operator."""

    async def spawn(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.spawn(
            operator,
            caller,
            args["name"],
            args.get("profile", ""),
            args.get("prompt", ""),
            args.get("repo", ""),
        )

    async def cancel(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.cancel(operator, caller, args["name"])

    async def checkpoint(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("name") or caller.agent
        return await lifecycle.checkpoint(
            operator, caller, name, args.get("task", ""), args.get("summary", "")
        )

    async def resume(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.resume(operator, caller, args["task"], args.get("name", ""))

    async def merge(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.merge(operator, caller, args["target"], args["source"])

    return [
        Tool(
            "spawn_subagent",
            "Start an agent; prompt is its task, repo gives a worktree.",
            obj_schema(("name",), name=_NAME, profile=_S, prompt=_PROMPT, repo=_PATH),
            spawn,
            lambda r: f"agent {r['name']} ({'spawned' if r['created'] else 'exists'})",
        ),
        Tool(
            "cancel",
            "Stop an agent or task, and its runner.",
            obj_schema(("name",), name=_S),
            cancel,
            lambda r: f"cancelled {r['name']}" + (" (runner stopped)" if r.get("stopped") else ""),
        ),
        Tool(
            "checkpoint",
            "Save an agent's (default your) work to its task.",
            obj_schema(name=_S, task=_PATH, summary=_PROMPT),
            checkpoint,
            lambda r: f"checkpoint {r['ref']} on task {r['task']}",
        ),
        Tool(
            "resume",
            "Start an agent from a task's last checkpoint.",
            obj_schema(("task",), task=_PATH, name=_NAME),
            resume,
            lambda r: f"agent {r['agent']} resumes from {r['resumed_from']}",
        ),
        Tool(
            "merge",
            "Record source merged into target.",
            obj_schema(("target", "source"), target=_S, source=_S),
            merge,
            lambda r: f"{r['target']} merged from {', '.join(r['mergedFrom'])}",
        ),
    ]
