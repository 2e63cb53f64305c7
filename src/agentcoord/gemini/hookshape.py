"""Gemini CLI's hook answers: ``agentcoord hook gemini:EVENT`` runs the same hook client as
Claude Code and Codex, and this turns the daemon's answer (Claude Code's shape) into Gemini's
(docs/gemini.md): a deny is ``{"decision": "deny", "reason": ...}``, context
is ``hookSpecificOutput.additionalContext`` under Gemini's event name. Imported by the hook
client, so it imports nothing of the daemon's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GEMINI_EVENTS", "gemini_input", "gemini_output"]

# Our event name -> Gemini's (its hooks reference: BeforeTool, AfterTool, BeforeAgent, ...).
GEMINI_EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "BeforeAgent",
    "post-tool-use": "AfterTool",
    "pre-tool-use": "BeforeTool",
    "session-end": "SessionEnd",
    "stop": "AfterAgent",
    "notification": "Notification",
}

# A ToolPermission notification's ``details`` (its confirmation's type, Gemini CLI's hooks
# reference, "Notification") -> the tool it asks about and the detail that says the call.
_ASKED = {
    "exec": ("run_shell_command", "command", "command"),
    "edit": ("edit", "filePath", "file_path"),  # write_file and replace alike
    "info": ("web_fetch", "prompt", "prompt"),
}


def gemini_input(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Gemini's hook ``payload`` for ``event`` as the daemon reads Claude Code's: its
    ToolPermission notification is ``permission_prompt`` naming the tool and its input."""
    if event != "notification" or payload.get("notification_type") != "ToolPermission":
        return payload
    details = payload.get("details")
    details = details if isinstance(details, dict) else {}
    kind = details.get("type")
    tool: object
    if kind == "mcp":
        tool, tool_input = details.get("toolName"), {}
    elif isinstance(kind, str) and kind in _ASKED:
        tool, field, ours = _ASKED[kind]
        value = details.get(field)
        tool_input = {ours: value} if isinstance(value, str) else {}
    else:
        tool, tool_input = details.get("title"), {}
    out = {**payload, "notification_type": "permission_prompt", "tool_input": tool_input}
    if isinstance(tool, str) and tool:
        out["tool_name"] = tool
    return out


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
