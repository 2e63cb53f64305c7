"""Each CLI's tool table, as the PreToolUse guards and the setups' hook matchers read it
(docs/claims.md "The guards in each CLI"): which tool names a write, a patch or a shell
command, from which input field, and the directory a shell command runs in."""

from __future__ import annotations

import pytest

from agentcoord.claude.configure import HOOKS as CLAUDE_HOOKS
from agentcoord.claude.hooks import TOOL_TABLES, tools_of
from agentcoord.codex.codexsetup import HOOKS as CODEX_HOOKS
from agentcoord.gemini.geminisetup import HOOKS as GEMINI_HOOKS
from agentcoord.identity.kinds import KINDS
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.tooltables import Shell, ShellCall, ToolTable, merged

pytestmark = pytest.mark.unit


def _session(kind: str | None) -> Caller:
    return Caller("session" if kind else "runner", "a-1", "unix", session_kind=kind)


def test_every_session_kind_has_a_table() -> None:
    """The tables are keyed by exactly the session kinds' names (a new CLI needs its own)."""
    assert set(TOOL_TABLES) == {kind.name for kind in KINDS}


@pytest.mark.parametrize(
    ("kind", "tool", "tool_input", "command", "cwd"),
    [
        ("claude", "Bash", {"command": "git switch x"}, "git switch x", "/r"),
        ("codex", "Bash", {"command": "git switch x"}, "git switch x", "/r"),
        ("gemini", "run_shell_command", {"command": "git switch x"}, "git switch x", "/r"),
        (
            "gemini",
            "run_shell_command",
            {"command": "git st", "dir_path": "sub"},
            "git st",
            "/r/sub",
        ),
        ("opencode", "bash", {"command": "git st", "workdir": "../o"}, "git st", "/o"),
        (
            "opencode",
            "bash",
            {"command": "git st", "workdir": "/elsewhere"},
            "git st",
            "/elsewhere",
        ),
    ],
)
def test_each_clis_shell_tool_gives_its_command_and_directory(
    kind: str, tool: str, tool_input: dict[str, str], command: str, cwd: str
) -> None:
    """A shell call of each CLI reads its command field, and its directory field (relative to
    the session's cwd, or absolute) when it has one."""
    assert tools_of(_session(kind)).shell_of(tool, tool_input, "/r") == ShellCall(command, cwd)


def test_a_tool_is_read_only_in_its_own_clis_table() -> None:
    """Gemini's shell tool is no shell for Claude Code's table and Claude Code's Bash none for
    Gemini's; a write tool is no shell; a bad input reads as nothing."""
    gemini, claude = tools_of(_session("gemini")), tools_of(_session("claude"))
    assert claude.shell_of("run_shell_command", {"command": "git reset"}, "/r") is None
    assert gemini.shell_of("Bash", {"command": "git reset"}, "/r") is None
    assert gemini.shell_of("write_file", {"file_path": "a"}, "/r") is None
    assert claude.shell_of("Bash", {"command": 3}, "/r") is None
    assert claude.shell_of("Bash", "git reset", "/r") is None


@pytest.mark.parametrize(
    ("kind", "tool", "tool_input", "path"),
    [
        ("claude", "Write", {"file_path": "/r/a.py"}, "/r/a.py"),
        ("claude", "NotebookEdit", {"notebook_path": "/r/n.ipynb"}, "/r/n.ipynb"),
        ("gemini", "replace", {"file_path": "a.py"}, "a.py"),
        ("opencode", "edit", {"filePath": "/r/a.py"}, "/r/a.py"),
        ("opencode", "Write", {"file_path": "/r/a.py"}, None),
        ("codex", "Write", {"file_path": "/r/a.py"}, None),
    ],
)
def test_each_clis_write_tool_names_its_file(
    kind: str, tool: str, tool_input: dict[str, str], path: str | None
) -> None:
    """A write tool's file comes from its own CLI's field; another CLI's tool name is none."""
    assert tools_of(_session(kind)).file_of(tool, tool_input) == path


def test_patch_tools_give_their_patch_text() -> None:
    """Codex's apply_patch (its input's command, or the input itself) and OpenCode's patch
    (patchText) carry a patch; Claude Code has none."""
    codex, opencode = tools_of(_session("codex")), tools_of(_session("opencode"))
    assert codex.patch_of("apply_patch", {"command": "*** Begin Patch"}) == "*** Begin Patch"
    assert codex.patch_of("apply_patch", "*** Begin Patch") == "*** Begin Patch"
    assert opencode.patch_of("patch", {"patchText": "P"}) == "P"
    assert tools_of(_session("claude")).patch_of("apply_patch", {"command": "P"}) is None


def test_a_caller_of_no_known_kind_is_read_with_every_table() -> None:
    """A runner (no session kind) gets every CLI's tools; a tool name two tables share means
    the same in both, so merging them loses nothing."""
    anyone = tools_of(_session(None))
    for table in TOOL_TABLES.values():
        for tool, name in table.files.items():
            assert anyone.files[tool] == name
        for tool, name in table.patches.items():
            assert anyone.patches[tool] == name
        for tool, shell in table.shells.items():
            assert anyone.shells[tool] == shell
    assert anyone.shell_of("run_shell_command", {"command": "git reset"}, "/r") is not None


def test_merged_keeps_each_kind_of_tool_apart() -> None:
    """merged() of two tables holds both's files, patches and shells, each in its own map."""
    one = ToolTable(files={"W": "f"}, shells={"S": Shell("c")})
    two = ToolTable(patches={"P": "p"}, shells={"T": Shell("c", "d")})
    both = merged({"one": one, "two": two})
    assert (dict(both.files), dict(both.patches)) == ({"W": "f"}, {"P": "p"})
    assert both.names() == ["W", "P", "S", "T"]


def test_each_setups_pre_tool_matcher_is_its_table() -> None:
    """Claude Code's, Codex's and Gemini CLI's PreToolUse/BeforeTool matchers list exactly the
    tools of their CLI's table, the shell tool included."""
    assert CLAUDE_HOOKS["PreToolUse"][0] == "Write|Edit|MultiEdit|NotebookEdit|Bash"
    assert CODEX_HOOKS["PreToolUse"][0] == "apply_patch|Bash"
    assert GEMINI_HOOKS["BeforeTool"][0] == "write_file|replace|run_shell_command"
