"""Daemon side of the Claude Code hooks: one handler per event, given the resolved caller.

:class:`Hooks` is built with the services its handlers read (claims deny writes, messaging
injects inbox messages, the directory ends sessions); outputs follow Claude Code's hook JSON
(FACTS.md "Hooks").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcoord.kernel.caller import Caller

if TYPE_CHECKING:
    from agentcoord.kernel.directory import AgentDirectory
    from agentcoord.localagents.session_end import SessionWatch
    from agentcoord.messaging import Messaging
    from agentcoord.stores.kv import ClaimStore, FocusStore

__all__ = ["HookDeps", "HookHandlers", "Hooks", "additional_context", "deny_tool"]

log = logging.getLogger(__name__)

# event -> handlers; each returns a fragment (context text, or a decision) or None
HookFn = Callable[["HookDeps", Caller, dict[str, Any]], Awaitable[dict[str, Any] | None]]
HookHandlers = dict[str, list[HookFn]]


@dataclass(frozen=True)
class HookDeps:
    """What the hook handlers read."""

    claims: ClaimStore
    focus: FocusStore
    messaging: Messaging
    directory: AgentDirectory
    sessions: SessionWatch


_EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "pre-tool-use": "PreToolUse",
    "stop": "Stop",
    "session-end": "SessionEnd",
}

# SessionEnd reasons after which the same claude process goes on (a new conversation in it):
# the Agent follows the process, so these do not end it (code.claude.com/docs/en/hooks).
_PROCESS_GOES_ON = {"clear", "resume"}


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


async def _identify(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    text = (
        f"agentcoord: you are agent `{caller.agent}` on this machine's coordination daemon "
        "(MCP server agent-coord). Claim files before editing them; check your inbox."
    )
    return {"context": text}


def file_claim_keys(path: str, cwd: str | None) -> set[str]:
    """The claim keys that name ``path``: absolute or relative to the session's cwd, with or
    without the ``file:`` prefix (docs/claims.md "Claiming files")."""
    absolute = os.path.normpath(os.path.join(cwd or "/", path))
    keys = {absolute}
    if cwd:
        rel = os.path.relpath(absolute, cwd)
        if not rel.startswith(".."):
            keys.add(rel)
    return keys | {f"file:{k}" for k in keys}


async def _guard_writes(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """PreToolUse on Write/Edit/MultiEdit: deny when another agent holds a write claim."""
    claims = deps.claims
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    path = tool_input.get("file_path") or tool_input.get("path")
    if not isinstance(path, str) or not path:
        return None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else caller.cwd
    wanted = file_claim_keys(path, cwd)
    for key, holder in claims.check(""):
        if key in wanted and holder.mode == "write" and holder.agent != caller.agent:
            focus = deps.focus.get(holder.agent)
            intent = holder.purpose or (focus.intent if focus else "")
            why = f" ({intent})" if intent else ""
            return {
                "deny": f"{key} is claimed for writing by {holder.agent}{why}; ask them, "
                "or wait for the claim to be released (check_claims)."
            }
    return None


async def _inbox_context(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """UserPromptSubmit/PostToolUse: hand pending messages to the model as context."""
    messaging = deps.messaging
    if caller.kind == "human":
        return None
    from agentcoord import wire

    got = await messaging.bus.read(caller.agent, 20, 0.0)
    lines = []
    for r in got:
        view = wire.message_view(r.message, r.seq)
        if view.get("from") == caller.agent:
            continue
        where = f" in #{view['channel']}" if view.get("channel") else ""
        body = "a handoff offer (see the inbox tool)" if "handoff" in view else view.get("text", "")
        lines.append(f"- from {view.get('from')}{where}: {body}")
    if not lines:
        return None
    return {"context": "agentcoord messages for you:\n" + "\n".join(lines)}


async def _end_session(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """SessionEnd: the session's Agent ends at once (docs/localagents.md "Session lifetime")."""
    why = payload.get("reason")
    if caller.kind != "session" or why in _PROCESS_GOES_ON:
        return None
    reason = f"SessionEnd hook ({why})" if isinstance(why, str) and why else "SessionEnd hook"
    ended = await deps.directory.end_session(caller.agent, reason)
    if ended == "removed":
        # It never took part (docs/localagents.md): nothing of it is kept, queued mail neither.
        await deps.sessions.drop(caller.agent)
    return None


def default_handlers() -> HookHandlers:
    return {
        "session-end": [_end_session],
        "session-start": [_identify],
        "pre-tool-use": [_guard_writes],
        "user-prompt-submit": [_inbox_context],
        "post-tool-use": [_inbox_context],
    }


class Hooks:
    """The daemon's hook handlers over their services; :meth:`run` answers one event."""

    def __init__(self, deps: HookDeps, handlers: HookHandlers | None = None) -> None:
        self._deps = deps
        self._handlers = default_handlers() if handlers is None else handlers

    async def run(
        self, caller: Caller, event: str, payload: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Run every handler for ``event``; a deny wins, context texts are joined."""
        name = _EVENT_NAMES.get(event)
        if name is None:
            return None
        if caller.kind == "session" and name != "SessionEnd":
            # A session that runs hooks is a real one (a health check runs none): keep it at
            # its end.
            await self._deps.directory.mark_used(caller.agent)
        texts: list[str] = []
        for handler in self._handlers.get(event, []):
            try:
                fragment = await handler(self._deps, caller, payload)
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
