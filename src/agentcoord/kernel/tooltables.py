"""What one agent CLI's tools are to the daemon's PreToolUse guards: a :class:`ToolTable` each
CLI adapter package declares (``claude/claudetools.py``, ``codex/codextools.py``, ...), read by
the generic hook (``claude/hooks.py``) and by each CLI's setup for its hook matcher
(docs/claims.md "The guards in each CLI").

A value, no behaviour beyond reading a tool call's input: the write guard takes the files, the
working-tree guard the shell command and the directory it runs in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Shell", "ShellCall", "ToolTable", "merged"]


class Shell(NamedTuple):
    """A shell tool's input fields: the command line, and the directory it runs in when the
    tool takes one (relative to the session's cwd)."""

    command: str
    workdir: str | None = None


class ShellCall(NamedTuple):
    """One shell call as the working-tree guard reads it."""

    command: str
    cwd: str


@dataclass(frozen=True)
class ToolTable:
    """One CLI's tools, by the name its hook payload gives (``tool_name``)."""

    files: Mapping[str, str] = field(default_factory=dict)  # tool -> field naming its file
    patches: Mapping[str, str] = field(default_factory=dict)  # tool -> field holding a patch
    shells: Mapping[str, Shell] = field(default_factory=dict)  # tool -> its fields

    def names(self) -> list[str]:
        """Every tool the guards read, in declaration order (a hook matcher's alternatives)."""
        return [*self.files, *self.patches, *self.shells]

    def matcher(self) -> str:
        """The tools as one hook matcher (``Write|Edit|Bash``: Claude Code's, Codex's and
        Gemini CLI's matchers are regular expressions over the tool name)."""
        return "|".join(self.names())

    def file_of(self, tool: str, tool_input: Any) -> str | None:
        """The file a write tool's call names; None for any other tool or a bad input."""
        name = self.files.get(tool)
        path = tool_input.get(name) if name is not None and isinstance(tool_input, dict) else None
        return path if isinstance(path, str) and path else None

    def patch_of(self, tool: str, tool_input: Any) -> str | None:
        """The patch text a patch tool's call carries (the input itself when it is a string)."""
        name = self.patches.get(tool)
        if name is None:
            return None
        text = tool_input.get(name) if isinstance(tool_input, dict) else tool_input
        return text if isinstance(text, str) else None

    def shell_of(self, tool: str, tool_input: Any, cwd: str) -> ShellCall | None:
        """A shell tool's command and the directory it runs in (its own ``workdir`` field,
        resolved against ``cwd``, else ``cwd``); None for any other tool or a bad input."""
        shell = self.shells.get(tool)
        if shell is None or not isinstance(tool_input, dict):
            return None
        command = tool_input.get(shell.command)
        if not isinstance(command, str):
            return None
        workdir = tool_input.get(shell.workdir) if shell.workdir is not None else None
        if isinstance(workdir, str) and workdir:
            cwd = os.path.normpath(os.path.join(cwd, workdir))
        return ShellCall(command, cwd)


def merged(tables: Mapping[str, ToolTable]) -> ToolTable:
    """Every table's tools in one (for a caller whose CLI is not known). A tool name two
    tables share must mean the same in both (tests/claude/test_tooltables.py checks it)."""
    files: dict[str, str] = {}
    patches: dict[str, str] = {}
    shells: dict[str, Shell] = {}
    for table in tables.values():
        files.update(table.files)
        patches.update(table.patches)
        shells.update(table.shells)
    return ToolTable(files, patches, shells)
