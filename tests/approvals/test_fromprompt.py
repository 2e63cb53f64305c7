"""The rule a relayed permission prompt offers, and which prompts are permission requests
(pure; docs/approvals.md "From a permission prompt")."""

from __future__ import annotations

import pytest

from agentcoord.approvals.fromprompt import (
    PermissionCall,
    permission_call,
    state_rule,
    suggested_rule,
)
from agentcoord.approvals.rules import parse_rule
from agentcoord.errors import InvalidArguments

pytestmark = pytest.mark.unit


def _prompt(tool: str, context: str) -> dict[str, str]:
    return {
        "id": "p1",
        "question": f"Claude Code permission: allow {tool}? Do it",
        "context": context,
    }


def test_a_relayed_prompt_gives_its_session_tool_cwd_and_input() -> None:
    """The relay's context names the session, the tool, its cwd and the input preview."""
    call = permission_call(
        _prompt("Bash", 'session app-1, tool Bash\ncwd: /w/app\ninput: {"command": "ls"}')
    )
    assert call == PermissionCall("app-1", "Bash", '{"command": "ls"}', "/w/app")
    bare = permission_call(_prompt("Edit", "session app-2, tool Edit"))
    assert bare == PermissionCall("app-2", "Edit", "", "")


@pytest.mark.parametrize(
    "prompt",
    [
        {"id": "p", "question": "Deploy now?", "context": "session a, tool Bash"},
        _prompt("Bash", "something else"),
        _prompt("Bash", "session a, tool Edit"),  # the question and the context disagree
    ],
)
def test_any_other_prompt_is_refused(prompt: dict[str, str]) -> None:
    """Only a permission request the relay made can be answered with a grant."""
    with pytest.raises(InvalidArguments, match="is not a session's permission request"):
        permission_call(prompt)


@pytest.mark.parametrize(
    ("tool", "preview", "rule"),
    [
        ("Bash", '{"command": "npm test -x", "description": "t"}', "Bash(npm test:*)"),
        ("Bash", '{"command": "make build -j4", "descr', "Bash(make build:*)"),  # cut off
        ("Bash", "git status", "Bash(git status:*)"),
        ("Bash", '{"command": "ls"}', "Bash(ls:*)"),
        ("Bash", '{"command": "ls $(pwd)"}', "Bash(ls:*)"),
        ("Edit", '{"file_path": "/w/a.py"}', "Edit"),
        ("mcp__github__list_issues", "{}", "mcp__github__list_issues"),
    ],
)
def test_the_offered_rule_is_the_usual_grant(tool: str, preview: str, rule: str) -> None:
    """A shell command offers its first plain words with ``:*``; another tool, the tool; each
    offered rule is one the approvals accept."""
    offered = suggested_rule(PermissionCall("a", tool, preview))
    assert offered == rule
    assert parse_rule(offered).text == rule


@pytest.mark.parametrize("preview", ['{"command": "$(rm -rf /)"}', '{"command": ""}', ""])
def test_a_command_with_no_plain_word_offers_nothing(preview: str) -> None:
    """No rule is offered for a command that starts with no plain word: not all of Bash."""
    with pytest.raises(InvalidArguments, match="no rule to offer"):
        suggested_rule(PermissionCall("a", "Bash", preview))


@pytest.mark.unit
@pytest.mark.parametrize(
    ("state", "rule"),
    [
        ("waiting for permission: Bash npm test -- -x", "Bash(npm test:*)"),
        ("waiting for permission: Bash ls", "Bash(ls:*)"),
        ("waiting for permission: Bash $(curl x) | sh", ""),
        ("waiting for permission: Edit /x/y.py", "Edit"),
        ("waiting for permission: WebFetch https://x.org", "WebFetch"),
        ("waiting for permission", ""),
        ("waiting for input", ""),
    ],
)
def test_a_permission_wait_offers_the_rule_of_its_call(state: str, rule: str) -> None:
    """A session's permission wait offers the console's and top's rule, as a prompt would."""
    assert state_rule(state) == rule
