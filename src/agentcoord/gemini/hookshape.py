"""Gemini CLI's hook answers: ``agentcoord hook gemini:EVENT`` runs the same hook client as
Claude Code and Codex, and this turns the daemon's answer (Claude Code's shape) into Gemini's
(docs/gemini.md): a deny is ``{"decision": "deny", "reason": ...}``, context
is ``hookSpecificOutput.additionalContext`` under Gemini's event name. Imported by the hook
client, so it imports nothing of the daemon's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GEMINI_EVENTS", "gemini_output"]

# Our event name -> Gemini's (its hooks reference: BeforeTool, AfterTool, BeforeAgent, ...).
GEMINI_EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "BeforeAgent",
    "post-tool-use": "AfterTool",
    "pre-tool-use": "BeforeTool",
    "session-end": "SessionEnd",
}


def gemini_output(event: str, output: dict[str, Any]) -> dict[str, Any]:
    """The daemon's answer to ``event`` as Gemini CLI reads a hook's output."""
    specific = output.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return output
    if specific.get("permissionDecision") == "deny":
        return {"decision": "deny", "reason": str(specific.get("permissionDecisionReason", ""))}
    context = specific.get("additionalContext")
    if context:
        name = GEMINI_EVENTS.get(event, str(specific.get("hookEventName", "")))
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}
    return output
