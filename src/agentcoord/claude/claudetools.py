"""Claude Code's tools as the PreToolUse guards read them (docs/claims.md "The guards in each
CLI"): the file-writing tools and the input field naming their file, and ``Bash``."""

from __future__ import annotations

from agentcoord.kernel.tooltables import Shell, ToolTable

__all__ = ["TOOLS"]

TOOLS = ToolTable(
    files={
        "Write": "file_path",
        "Edit": "file_path",
        "MultiEdit": "file_path",
        "NotebookEdit": "notebook_path",
    },
    shells={"Bash": Shell("command")},
)
