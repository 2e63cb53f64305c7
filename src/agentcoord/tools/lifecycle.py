"""Lifecycle tools (docs/ask-and-operator.md "The operator"): spawn_subagent, cancel, checkpoint,
resume, merge. The daemon is the operator: these write objects, the controller
(:mod:`agentcoord.agentops.controller`) turns them into runner processes."""

from __future__ import annotations

from typing import Any

from agentcoord.agentops import AgentOps
from agentcoord.agentops import lifecycleops as lifecycle
from agentcoord.kernel.caller import Caller
from agentcoord.tools.base import obj_schema, tool

__all__ = ["LifecycleTools"]

_S: dict[str, Any] = {"type": "string"}
_NAME: dict[str, Any] = {"type": "string", "maxLength": 52}
_PATH: dict[str, Any] = {"type": "string", "maxLength": 4096}  # PATH_MAX; a task's name too
_PROMPT: dict[str, Any] = {"type": "string", "maxLength": 100_000}  # as run_agent's task


class LifecycleTools:
    """spawn_subagent, cancel, checkpoint, resume and merge over the daemon's agent operator."""

    def __init__(self, operator: AgentOps) -> None:
        self._operator = operator

    @tool(
        description="Start an agent; prompt: its task, repo: a worktree.",
        schema=obj_schema(("name",), name=_NAME, profile=_S, prompt=_PROMPT, repo=_PATH),
        render=lambda r: f"agent {r['name']} ({'spawned' if r['created'] else 'exists'})",
    )
    async def spawn_subagent(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.spawn(
            self._operator,
            caller,
            args["name"],
            args.get("profile", ""),
            args.get("prompt", ""),
            args.get("repo", ""),
        )

    @tool(
        description="Stop an agent or task and its runner.",
        schema=obj_schema(("name",), name=_S),
        render=lambda r: (
            f"cancelled {r['name']}" + (" (runner stopped)" if r.get("stopped") else "")
        ),
    )
    async def cancel(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.cancel(self._operator, caller, args["name"])

    @tool(
        description="Save an agent's (default your) work to its task.",
        schema=obj_schema(name=_S, task=_PATH, summary=_PROMPT),
        render=lambda r: f"checkpoint {r['ref']} on task {r['task']}",
    )
    async def checkpoint(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("name") or caller.agent
        return await lifecycle.checkpoint(
            self._operator, caller, name, args.get("task", ""), args.get("summary", "")
        )

    @tool(
        description="Start an agent from a task's last checkpoint.",
        schema=obj_schema(("task",), task=_PATH, name=_NAME),
        render=lambda r: f"agent {r['agent']} resumes from {r['resumed_from']}",
    )
    async def resume(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.resume(self._operator, caller, args["task"], args.get("name", ""))

    @tool(
        description="Record source merged into target.",
        schema=obj_schema(("target", "source"), target=_S, source=_S),
        render=lambda r: f"{r['target']} merged from {', '.join(r['mergedFrom'])}",
    )
    async def merge(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await lifecycle.merge(self._operator, caller, args["target"], args["source"])
