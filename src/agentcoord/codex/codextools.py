"""Codex's tools as the PreToolUse guards read them (docs/codex.md "Setup and hooks"): its
``apply_patch`` carries a patch that may touch several files (``codex/applypatch.py``), and its
shell tool reaches the hook as ``Bash`` with the command line in ``tool_input.command`` and the
command's directory (the model's ``workdir``) already in the payload's ``cwd``."""

from __future__ import annotations

from agentcoord.kernel.tooltables import Shell, ToolTable

__all__ = ["TOOLS"]

TOOLS = ToolTable(patches={"apply_patch": "command"}, shells={"Bash": Shell("command")})
