"""Daemon side of the Claude Code hooks: one handler per event, given the resolved caller.

:class:`Hooks` is built with the services its handlers read (claims deny writes, messaging
injects inbox messages, the directory ends sessions); outputs follow Claude Code's hook JSON
(docs/claude-code.md "Hooks").
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord.activity.states import WAITING_PERMISSION
from agentcoord.claude import claudetools as claude_tools
from agentcoord.codex import codextools as codex_tools
from agentcoord.gemini import geminitools as gemini_tools
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.tooltables import ToolTable, merged
from agentcoord.opencode import opencodetools as opencode_tools

if TYPE_CHECKING:
    from agentcoord.activity import SessionActivity
    from agentcoord.approvals import Approvals
    from agentcoord.budgets import Budgets
    from agentcoord.claude.push import ChannelPush
    from agentcoord.kernel.directory import AgentDirectory
    from agentcoord.leases.leasing import Leases
    from agentcoord.localagents.session_end import SessionWatch
    from agentcoord.messaging import Messaging
    from agentcoord.stores.kv import Holder

__all__ = [
    "TOOL_TABLES",
    "HookDeps",
    "HookHandlers",
    "Hooks",
    "additional_context",
    "allow_permission",
    "deny_tool",
    "tools_of",
]

log = logging.getLogger(__name__)

# event -> handlers; each returns a fragment (context text, or a decision) or None
HookFn = Callable[["HookDeps", Caller, dict[str, Any]], Awaitable[dict[str, Any] | None]]
HookHandlers = dict[str, list[HookFn]]


@dataclass(eq=False)
class InboxWait:
    """One inbox-wait in progress: ``woke`` is set by a message for it or by its cancel,
    which also sets ``ended``."""

    woke: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False


@dataclass(frozen=True)
class HookDeps:
    """What the hook handlers read."""

    leases: Leases  # claims, the write guard and edit leases (docs/claims.md)
    messaging: Messaging
    directory: AgentDirectory
    sessions: SessionWatch
    push: ChannelPush | None = None  # channel sessions (docs/claude-code.md "Channels")
    approvals: Approvals | None = None  # standing approvals (docs/approvals.md)
    activity: SessionActivity | None = None  # every session's state (docs/activity.md)
    budgets: Budgets | None = None  # a session past max_sessions is told (docs/budgets.md)
    # Each agent's inbox-waits in progress, for InboxWaitCancel to end before they take
    # anything (docs/opencode.md "Wake-ups").
    inbox_waits: dict[str, set[InboxWait]] = field(default_factory=dict)


_EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "pre-tool-use": "PreToolUse",
    "stop": "Stop",
    "session-end": "SessionEnd",
    "permission-request": "PermissionRequest",
    "notification": "Notification",
    # OpenCode's plugin waits with it while its session is idle (docs/opencode.md "Wake-ups");
    # answered as PostToolUse is (no activity update).
    "inbox-wait": "InboxWait",
    # Its session turned busy: end its waits before they take anything, so its messages go
    # the turn's way (the hooks) and none is taken by a wait nobody reads.
    "inbox-wait-cancel": "InboxWaitCancel",
}

# How long one inbox-wait holds its caller's connection (docs/opencode.md "Wake-ups").
INBOX_WAIT_S = 600.0

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


def deny_permission(message: str) -> dict[str, Any]:
    """A PermissionRequest hook's answer that refuses the call and closes its dialog (Claude
    Code's hooks reference, "PermissionRequest decision control")."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": message},
        }
    }


# A held dialog's handler set the session's state itself: no output, no state update.
_SETTLED: dict[str, Any] = {}


def allow_permission() -> dict[str, Any]:
    """A PermissionRequest hook's answer that runs the tool with no dialog (Claude Code's
    hooks reference, "PermissionRequest decision control")."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }


async def _identify(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """SessionStart: who the session is; after a compaction or /clear also what it holds,
    what it is on and what waits for it (docs/claude-code.md "After compaction or /clear")."""
    source = payload.get("source")
    if source in _RECAP_SOURCES and caller.kind != "human":
        return {"context": await _recap(deps, caller, str(source))}
    text = (
        f"agentcoord: you are agent `{caller.agent}` on this machine's coordination daemon "
        "(MCP server agent-coord). Claim files before editing them; check your inbox."
    )
    if deps.budgets is not None and caller.kind == "session":
        over = deps.budgets.session_started(caller.agent)
        if over is not None:
            text += f"\nagentcoord: {over}."
    return {"context": text}


# SessionStart sources after which the model has lost what it knew of this session: Claude
# Code compacted the conversation, or the user ran /clear (code.claude.com/docs/en/hooks,
# "SessionStart").
_RECAP_SOURCES = {"compact": "compacted", "clear": "cleared"}
_RECAP_CLAIMS = 10  # listed one per line; the rest are counted (check_claims lists them all)
_RECAP_INBOX_S = 2.0  # the inbox count is a server round trip: never hold the session start


def _claim_line(key: str, holder: Holder, now: float) -> str:
    """One held claim as the model reads it: mode, the key as people read it (a file's
    repository and path; its own worktree and branch go without saying), and when it
    expires."""
    from agentcoord.kernel.timetext import human_time
    from agentcoord.leases import AUTO_LEASE_PURPOSE
    from agentcoord.leases.filekeys import split_file_key
    from agentcoord.leases.rows import shown_key
    from agentcoord.stores.kv import format_duration

    row: dict[str, Any] = {"resource_key": key}
    repo, path = split_file_key(key)
    if path != key:
        row["path"] = path
        if repo is not None:
            row["repository"] = repo
    left = format_duration(max(0.0, round(holder.expires - now)))
    lease = ", an automatic edit lease" if holder.purpose == AUTO_LEASE_PURPOSE else ""
    return (
        f"  - {holder.mode} {shown_key(row)}: expires {human_time(holder.expires)} "
        f"(in {left}{lease}; token {holder.token})"
    )


async def _recap(deps: HookDeps, caller: Caller, source: str) -> str:
    """A few lines: the agent's name, its claims with their expiry, its focus and how many
    messages wait, so a compacted or cleared conversation goes on where it was."""
    now = time.time()
    held = sorted(deps.leases.held_by(caller.agent), key=lambda kh: kh[1].expires)
    lines = [
        f"agentcoord: this conversation was {_RECAP_SOURCES[source]}; you are still agent "
        f"`{caller.agent}` on this machine's coordination daemon (MCP server agent-coord)."
    ]
    if held:
        lines.append(f"- claims you hold ({len(held)}; renew before they expire):")
        lines += [_claim_line(key, h, now) for key, h in held[:_RECAP_CLAIMS]]
        if len(held) > _RECAP_CLAIMS:
            lines.append(f"  - and {len(held) - _RECAP_CLAIMS} more (check_claims lists them)")
    else:
        lines.append("- claims you hold: none")
    focus = deps.leases.focus_of(caller.agent)
    if focus is not None and (focus.intent or focus.files):
        said = focus.intent or "(no intent)"
        files = f" (files: {', '.join(focus.files)})" if focus.files else ""
        lines.append(f"- your focus: {said}{files}")
    else:
        lines.append("- your focus: none set (annotate says what you are working on)")
    try:
        async with asyncio.timeout(_RECAP_INBOX_S):
            waiting = await deps.messaging.waiting(caller.agent)
        lines.append(
            f"- messages waiting in your inbox: {waiting}"
            + (" (read them with inbox)" if waiting else "")
        )
    except TimeoutError:
        lines.append("- messages waiting in your inbox: unknown just now (check inbox)")
    lines.append("Claim files before editing them; check your inbox.")
    return "\n".join(lines)


# Each CLI's tools the PreToolUse guards read, by the caller's session kind (Caller.
# session_kind): each adapter package declares its own table (docs/claims.md "The guards in
# each CLI"). A caller of no known kind (a runner) is checked against every kind's tools.
TOOL_TABLES: dict[str, ToolTable] = {
    "claude": claude_tools.TOOLS,
    "codex": codex_tools.TOOLS,
    "gemini": gemini_tools.TOOLS,
    "opencode": opencode_tools.TOOLS,
}
_ANY_KIND = merged(TOOL_TABLES)


def tools_of(caller: Caller) -> ToolTable:
    """The tool table of the caller's CLI (every kind's tools when it has none)."""
    return TOOL_TABLES.get(caller.session_kind or "", _ANY_KIND)


def _written_paths(table: ToolTable, payload: dict[str, Any]) -> list[str]:
    """The files a write tool call is about to change; none for any other tool."""
    tool_input = payload.get("tool_input")
    tool = str(payload.get("tool_name") or "")
    patch = table.patch_of(tool, tool_input)
    if patch is not None:
        from agentcoord.codex.applypatch import patch_paths

        return patch_paths(patch)
    path = table.file_of(tool, tool_input)
    return [] if path is None else [path]


def _writer_cwd(caller: Caller, payload: dict[str, Any]) -> str | None:
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else caller.cwd


async def _guard_writes(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """PreToolUse on a write tool of the caller's CLI (each file of a patch): deny when another
    agent holds a write claim on the file's canonical key (resolved against the writer's cwd),
    else take or renew the writer's automatic edit lease (docs/claims.md "Claiming files")."""
    for path in _written_paths(tools_of(caller), payload):
        denied = await deps.leases.guard_write(caller, path, _writer_cwd(caller, payload))
        if denied is not None:
            return {"deny": denied}
    return None


async def _guard_git(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """PreToolUse on a shell tool of the caller's CLI: refuse a git command that would move or
    rewrite a worktree another live session works in, or stage its files (docs/claims.md
    "Working-tree guard")."""
    cwd = _writer_cwd(caller, payload)
    if cwd is None:
        return None
    tool = str(payload.get("tool_name") or "")
    call = tools_of(caller).shell_of(tool, payload.get("tool_input"), cwd)
    if call is None or "git" not in call.command:
        return None
    cwds = deps.sessions.live_cwds()
    refused = await deps.leases.guard_git(caller, call.command, call.cwd, cwds)
    return None if refused is None else {"deny": refused}


async def _inbox_context(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """UserPromptSubmit/PostToolUse: hand pending messages to the model as context.

    A session with a native inbox (claude/inbox) or a channel (claude/push.py) reads the same
    consumer: each message reaches the model once, through whichever read takes it first; what
    this read takes is acknowledged here. The hook also tells the channel the session went past
    its permission dialogs."""
    messaging = deps.messaging
    if caller.kind == "human":
        return None
    push = deps.push
    if push is not None and caller.kind == "session":
        guess = "PostToolUse" if "tool_name" in payload else "UserPromptSubmit"
        push.moved_on(caller.agent, str(payload.get("hook_event_name") or guess), payload)
    return await _take_inbox(messaging, caller)


async def _take_inbox(messaging: Messaging, caller: Caller) -> dict[str, Any] | None:
    """The caller's pending messages (up to 20) as one context text, acknowledged now."""
    from agentcoord.claude.push import context_line
    from agentcoord.kernel import wire

    got = await messaging.read_inbox(caller.agent, 20, 0.0)
    lines = []
    for r in got:
        view = wire.message_view(r.message, r.seq)
        if view.get("from") == caller.agent:
            continue
        lines.append(f"- {context_line(view)}")
    if not lines:
        return None
    return {"context": "agentcoord messages for you:\n" + "\n".join(lines)}


async def _wait_inbox(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """InboxWait: wait up to INBOX_WAIT_S (less when the payload's ``wait`` says) for the
    caller's inbox to have messages; take them as PostToolUse does (docs/opencode.md
    "Wake-ups"). The inbox's read lock is held only for each read, so the session's own hooks
    and its inbox tool are never held behind the wait; a client that hangs up cancels it before
    anything is taken."""
    from agentcoord.stores.messagebus import inbox_subject

    if caller.kind == "human":
        return None
    bound = INBOX_WAIT_S
    asked = payload.get("wait")
    if isinstance(asked, (int, float)) and not isinstance(asked, bool) and asked >= 0:
        bound = min(bound, float(asked))
    wait = InboxWait()
    woke = wait.woke
    mine = inbox_subject(caller.agent)

    async def published(msg: Any) -> None:
        # Another agent's inbox is not the caller's; a broadcast or a channel post may be:
        # the read below tells.
        subject = str(getattr(msg, "subject", ""))
        if subject == mine or not subject.startswith("agents."):
            woke.set()

    waits = deps.inbox_waits.setdefault(caller.agent, set())
    waits.add(wait)
    watches = await deps.messaging.watch(published)
    try:
        async with asyncio.timeout(bound):
            # No await between the check of ``ended`` and the take: a cancel that came first
            # always wins, and a take once begun is answered (the client reads it).
            while _session_lives(caller) and not wait.ended:
                woke.clear()
                got = await _take_inbox(deps.messaging, caller)
                if got is not None:
                    return got
                await woke.wait()
    except TimeoutError:
        pass
    finally:
        waits.discard(wait)
        if not waits:
            deps.inbox_waits.pop(caller.agent, None)
        for watch in watches:
            await watch.unsubscribe()
    return None


async def _cancel_inbox_waits(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """InboxWaitCancel: end the caller's inbox-waits; one that has not taken anything returns
    empty, one already answering keeps its answer (docs/opencode.md "Wake-ups")."""
    for wait in deps.inbox_waits.get(caller.agent, ()):
        wait.ended = True
        wait.woke.set()
    return None


def _session_lives(caller: Caller) -> bool:
    """False once the caller's session process has exited: a wait it left behind takes
    nothing, so nothing is taken for nobody."""
    pid = caller.session_pid
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, someone else's (EPERM)
    return True


async def _end_session(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """SessionEnd: the session's Agent ends at once (docs/localagents.md "Session lifetime")."""
    why = payload.get("reason")
    if caller.kind != "session":
        return None
    # The conversation's edit leases go with it (a process that exits would release them
    # anyway; after /clear the process goes on).
    await deps.leases.release_edit_leases(caller.agent)
    if why in _PROCESS_GOES_ON:
        return None
    reason = f"SessionEnd hook ({why})" if isinstance(why, str) and why else "SessionEnd hook"
    ended = await deps.directory.end_session(caller.agent, reason)
    if ended == "removed":
        # It never took part (docs/localagents.md): nothing of it is kept, queued mail neither.
        await deps.sessions.drop(caller.agent)
    return None


async def _standing_approval(
    deps: HookDeps, caller: Caller, payload: dict[str, Any]
) -> dict[str, Any] | None:
    """PermissionRequest: allow the call when a standing approval of the human's covers it
    and the session's own deny and ask rules do not (docs/approvals.md); else no decision,
    and Claude Code asks as it would have."""
    if deps.approvals is None or caller.kind == "human":
        return None
    decided = await deps.approvals.decide(caller, payload)
    if decided is not None:
        return {"allow": decided.approval.get("id")}
    activity = deps.activity
    if deps.approvals.held.hold_s <= 0 or activity is None:
        return None
    # permission_hold (docs/approvals.md "Answering an open dialog"): Claude Code draws the
    # dialog and takes the terminal's keys while this hook runs, so the daemon may hold its
    # answer for the human. The session shows waiting now, not when the hook returns; a
    # headless `claude -p` (never "waiting") draws no dialog and is not held.
    await activity.hook(caller, "PermissionRequest", payload)

    def still_open() -> bool:
        state = activity.state_of(caller.agent)
        return state is not None and state.state == WAITING_PERMISSION

    if not still_open():
        return {"settled": True}
    verdict = await deps.approvals.hold(caller, payload, still_open)
    if verdict == "allow":
        return {"allow": "held"}
    if verdict == "deny":
        return {"deny": "The user denied this call (from agentcoord: the console or top)."}
    # The time ran out (the dialog stays for the terminal) or the dialog was answered there:
    # the session's state is already right either way.
    return {"settled": True}


def default_handlers() -> HookHandlers:
    return {
        "permission-request": [_standing_approval],
        "session-end": [_end_session],
        "session-start": [_identify],
        "pre-tool-use": [_guard_writes, _guard_git],
        "user-prompt-submit": [_inbox_context],
        "post-tool-use": [_inbox_context],
        "inbox-wait": [_wait_inbox],
        "inbox-wait-cancel": [_cancel_inbox_waits],
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
        if caller.kind == "session" and name not in ("SessionEnd", "InboxWait", "InboxWaitCancel"):
            # A session that runs hooks is a real one (a health check runs none): keep it at
            # its end.
            await self._deps.directory.mark_used(caller.agent)
        output = await self._answer(caller, event, name, payload)
        if output is _SETTLED:
            return None
        activity = self._deps.activity
        if activity is not None and name not in ("InboxWait", "InboxWaitCancel"):
            allowed = output is not None and name == "PermissionRequest"
            try:
                await activity.hook(caller, name, payload, allowed=allowed)
            except Exception:  # the session's state is for people; never block the session
                log.exception("hook %s: session state not updated", event)
        return output

    async def _answer(
        self, caller: Caller, event: str, name: str, payload: dict[str, Any]
    ) -> dict[str, Any] | None:
        texts: list[str] = []
        for handler in self._handlers.get(event, []):
            try:
                fragment = await handler(self._deps, caller, payload)
            except Exception:  # a broken hook must never block the user's session
                log.exception("hook %s handler failed", event)
                continue
            if not fragment:
                continue
            if name == "PermissionRequest" and fragment.get("settled"):
                return _SETTLED
            if "deny" in fragment:
                reason = str(fragment["deny"])
                return deny_permission(reason) if name == "PermissionRequest" else deny_tool(reason)
            if "allow" in fragment and name == "PermissionRequest":
                return allow_permission()
            if fragment.get("context"):
                texts.append(str(fragment["context"]))
        if texts and name not in ("PreToolUse", "Stop", "PermissionRequest", "Notification"):
            # An inbox-wait's messages are a PostToolUse's (docs/opencode.md "Wake-ups").
            shown = "PostToolUse" if name == "InboxWait" else name
            return additional_context(shown, "\n\n".join(texts))
        return None
