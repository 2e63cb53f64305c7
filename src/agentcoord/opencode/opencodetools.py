"""OpenCode's tools as its plugin's ``tool.execute.before`` hands them to the PreToolUse guards
(docs/opencode.md "Setup and hooks"): ``write`` and ``edit`` name their file in
``args.filePath``, ``patch`` carries a patch in ``args.patchText``, ``bash`` runs
``args.command`` in ``args.workdir`` (relative to the session's directory) when given. Setup
writes the fields into the plugin (:func:`plugin_fields`), which sends only those."""

from __future__ import annotations

from agentcoord.kernel.tooltables import Shell, ToolTable

__all__ = ["TOOLS", "plugin_fields"]

TOOLS = ToolTable(
    files={"write": "filePath", "edit": "filePath"},
    patches={"patch": "patchText"},
    shells={"bash": Shell("command", "workdir")},
)


def plugin_fields() -> dict[str, list[str]]:
    """Each tool of :data:`TOOLS` and the fields of its ``args`` the plugin sends."""
    out: dict[str, list[str]] = {}
    for tool, name in [*TOOLS.files.items(), *TOOLS.patches.items()]:
        out[tool] = [name]
    for tool, shell in TOOLS.shells.items():
        out[tool] = [shell.command] + ([shell.workdir] if shell.workdir else [])
    return out
