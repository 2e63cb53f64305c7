"""Daemon side of the Claude Code hooks: one handler per event, given the resolved caller.

Tool families contribute handlers (claims deny writes, messaging injects inbox messages) by
adding to :class:`HookHandlers`; outputs follow Claude Code's hook JSON (FACTS.md "Hooks").
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentcoord.daemon.caller import Caller

if TYPE_CHECKING:
    from agentcoord.daemon.app import App

__all__ = ["HookHandlers", "additional_context", "deny_tool", "run_hook_event"]

log = logging.getLogger(__name__)

# event -> handlers; each returns a fragment (context text, or a decision) or None
HookFn = Callable[["App", Caller, dict[str, Any]], Awaitable[dict[str, Any] | None]]
HookHandlers = dict[str, list[HookFn]]

_EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "pre-tool-use": "PreToolUse",
    "stop": "Stop",
}


def additional_context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def deny_tool(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


async def _identify(app: App, caller: Caller, payload: dict[str, Any]) -> dict[str, Any] | None:
    text = (
        f"agentcoord: you are agent `{caller.agent}` on this machine's coordination daemon "
        "(MCP server agent-coord). Claim files before editing them; check your inbox."
    )
    return {"context": text}


def default_handlers() -> HookHandlers:
    return {"session-start": [_identify]}


async def run_hook_event(
    app: App, handlers: HookHandlers, caller: Caller, event: str, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """Run every handler for ``event``; a deny wins, context texts are joined."""
    name = _EVENT_NAMES.get(event)
    if name is None:
        return None
    texts: list[str] = []
    for handler in handlers.get(event, []):
        try:
            fragment = await handler(app, caller, payload)
        except Exception:  # a broken hook must never block the user's session
            log.exception("hook %s handler failed", event)
            continue
        if not fragment:
            continue
        if "deny" in fragment:
            return deny_tool(str(fragment["deny"]))
        if fragment.get("context"):
            texts.append(str(fragment["context"]))
    if texts and name != "PreToolUse" and name != "Stop":
        return additional_context(name, "\n\n".join(texts))
    return None
