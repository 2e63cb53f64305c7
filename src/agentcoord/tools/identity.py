"""``whoami``: what the daemon resolved about the caller, from the transport alone."""

from __future__ import annotations

from typing import Any

from agentcoord.kernel.caller import Caller
from agentcoord.tools._shape import compact, for_model
from agentcoord.tools.base import obj_schema, tool

__all__ = ["IdentityTools"]


def _render(result: dict[str, Any]) -> str:
    kind = result["kind"]
    if result.get("session_kind"):
        kind = f"{result['session_kind']} {kind}"  # "codex session"
    parts = [f"you are {result['agent']} ({kind}, via {result['via']})"]
    if result.get("session"):
        parts.append(f"session {result['session']}")
    if result.get("cwd"):
        parts.append(f"cwd {result['cwd']}")
    return "; ".join(parts)


class IdentityTools:
    """``whoami`` needs no service: only the caller, resolved by the transport."""

    @tool(
        description="Your identity (agent, session, cwd).",
        schema=obj_schema(),
        render=_render,
        read_only=True,
    )
    async def whoami(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        """Who the caller is; a model is not shown the pids (only the human's tools use them)."""
        if for_model(caller):
            return compact(
                {
                    "agent": caller.agent,
                    "kind": caller.kind,
                    "session_kind": caller.session_kind,  # which CLI: claude, codex, ...
                    "session": caller.session_id,
                    "cwd": caller.cwd,
                    "via": caller.via,
                    "depth": caller.depth or None,  # 0, a person's turn, goes without saying
                },
                keep=("agent", "kind", "via"),
            )
        return {
            "agent": caller.agent,
            "kind": caller.kind,
            "session_kind": caller.session_kind,
            "session": caller.session_id,
            "cwd": caller.cwd,
            "pid": caller.pid,
            "session_pid": caller.session_pid,
            "via": caller.via,
            "depth": caller.depth,
        }
