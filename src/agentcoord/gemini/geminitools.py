"""Gemini CLI's tools as the BeforeTool guards read them (docs/gemini.md "Setup and hooks"):
``write_file`` and ``replace`` name their file in ``file_path``; ``run_shell_command`` gives
the command in ``command`` and, optionally, the directory it runs in as ``dir_path`` (relative
to the project root, which is the payload's ``cwd``)."""

from __future__ import annotations

from agentcoord.kernel.tooltables import Shell, ToolTable

__all__ = ["TOOLS"]

TOOLS = ToolTable(
    files={"write_file": "file_path", "replace": "file_path"},
    shells={"run_shell_command": Shell("command", "dir_path")},
)
