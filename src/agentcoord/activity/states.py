"""What a session is doing now, from its hooks and its registry entry (pure; docs/activity.md
"States").

Five states: ``working`` (a turn runs), ``waiting-permission`` (a permission dialog is open:
which tool, with what input), ``waiting-input`` (the turn ended and Claude Code says it waits
for the user), ``idle`` (no turn runs) and ``ended``. Claude Code tells them in three ways
(code.claude.com/docs/en/hooks): its hooks (UserPromptSubmit, PreToolUse and PostToolUse mean
a turn runs; PermissionRequest that nobody answered means a dialog is open; Notification's
``permission_prompt`` and ``idle_prompt`` say it waits; Stop ends the turn; SessionEnd ends
it), and its session
registry entry (``~/.claude/sessions/<pid>.json``), whose ``status`` (``idle`` or ``busy``)
it rewrites, with ``updatedAt``, as each turn starts and ends. The newest word wins: a
registry change after the last hook overrides what the hook said, except that an open dialog
stays open while the registry says ``busy`` (a dialog is part of a turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "ENDED",
    "IDLE",
    "WAITING_INPUT",
    "WAITING_PERMISSION",
    "WORKING",
    "SessionState",
    "after_hook",
    "describe",
    "with_registry",
]

State = Literal["working", "waiting-permission", "waiting-input", "idle", "ended"]
WORKING: State = "working"
WAITING_PERMISSION: State = "waiting-permission"
WAITING_INPUT: State = "waiting-input"
IDLE: State = "idle"
ENDED: State = "ended"

_WORKING_EVENTS = frozenset({"UserPromptSubmit", "PreToolUse", "PostToolUse"})
_INPUT_SHOWN = 120  # characters of a waiting call's input in a state's one line


@dataclass(frozen=True)
class SessionState:
    """One session's state since ``since`` (epoch seconds); ``tool`` and ``input`` name the
    call a permission dialog is open for."""

    state: State
    since: float
    tool: str | None = None
    input: str | None = None

    @property
    def waiting(self) -> bool:
        return self.state in (WAITING_PERMISSION, WAITING_INPUT)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "since": self.since}
        if self.tool is not None:
            out["tool"] = self.tool
        if self.input is not None:
            out["input"] = self.input
        return out


def after_hook(
    prev: SessionState | None,
    event: str,
    payload: Mapping[str, Any],
    now: float,
    *,
    allowed: bool = False,
    summary: str | None = None,
) -> SessionState | None:
    """The state after hook ``event`` (Claude Code's event name); None: the hook says nothing
    about it. ``allowed``: the daemon answered a PermissionRequest "allow" (no dialog);
    ``summary``: the call's input as people read it."""
    if event in _WORKING_EVENTS:
        return _moved(prev, WORKING, now)
    if event == "PermissionRequest":
        if allowed:
            return _moved(prev, WORKING, now)
        tool = payload.get("tool_name")
        return SessionState(
            WAITING_PERMISSION, now, tool if isinstance(tool, str) else None, summary
        )
    if event == "Notification":
        kind = payload.get("notification_type")
        tool = payload.get("tool_name")
        if kind == "permission_prompt":
            if isinstance(tool, str) and tool:
                # The other CLIs' hooks name the call their dialog asks about (docs/activity.md
                # "Other CLIs"): the wait is for that call.
                return SessionState(WAITING_PERMISSION, now, tool, summary)
            if prev is not None and prev.state == WAITING_PERMISSION:
                return prev  # the dialog the PermissionRequest hook saw, still open
            return SessionState(WAITING_PERMISSION, now)
        if kind == "idle_prompt":
            return _moved(prev, WAITING_INPUT, now)
        return None
    if event == "Stop":
        return _moved(prev, IDLE, now)  # the turn ended; nothing runs until the next prompt
    if event == "SessionEnd":
        return SessionState(ENDED, now)
    return None


def _moved(prev: SessionState | None, state: State, now: float) -> SessionState:
    """``state`` since now, or since it began when it is the state already."""
    if prev is not None and prev.state == state and state != WAITING_PERMISSION:
        return prev
    return SessionState(state, now)


def with_registry(
    state: SessionState | None, status: str | None, updated: float | None
) -> SessionState | None:
    """``state`` corrected by the registry's ``status`` written at ``updated`` (seconds)."""
    if status not in ("idle", "busy") or updated is None:
        return state
    if state is not None and (state.state == ENDED or updated <= state.since):
        return state
    if status == "busy":
        if state is not None and state.state in (WORKING, WAITING_PERMISSION):
            return state
        return SessionState(WORKING, updated)
    if state is not None and state.state in (IDLE, WAITING_INPUT):
        return state
    return SessionState(IDLE, updated)


def describe(state: SessionState) -> str:
    """The state in words, one line: ``waiting for permission: Bash npm test``."""
    if state.state == WAITING_PERMISSION:
        call = " ".join(p for p in (state.tool, _short(state.input)) if p)
        return f"waiting for permission: {call}" if call else "waiting for permission"
    if state.state == WAITING_INPUT:
        return "waiting for input"
    return state.state


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= _INPUT_SHOWN:
        return text
    return text[: _INPUT_SHOWN - 1] + "…"


def same_wait(a: SessionState | None, b: SessionState) -> bool:
    """Whether ``b`` is the same wait as ``a`` (a notice said once is not said again)."""
    return a is not None and a.state == b.state and (a.tool, a.input) == (b.tool, b.input)


def changed(a: SessionState | None, b: SessionState) -> bool:
    return a is None or replace(a, since=b.since) != b
