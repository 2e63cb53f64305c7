"""What ``agentcoord top`` shows and how its keys read input (pure)."""

from __future__ import annotations

import pytest

from agentcoord.cli.top import _grant_params
from agentcoord.cli.topview import Snapshot, claim_rows, conflict_rows, waiting_rows


def test_prompts_wait_first_then_sessions_longest_first() -> None:
    """Open prompts (oldest first) come before waiting sessions (longest wait first); working
    sessions and answered prompts are not waiting."""
    snap = Snapshot(
        agents=[
            {"name": "a-1", "state": "waiting for input", "state_since": 30.0},
            {"name": "b-1", "state": "waiting for permission: Bash ls", "state_since": 10.0},
            {"name": "c-1", "state": "working", "state_since": 5.0},
        ],
        prompts=[
            {"id": "p2", "agent": "a-1", "question": "B?", "created_at": 20.0, "phase": "Open"},
            {
                "id": "p1",
                "agent": "c-1",
                "question": "A?",
                "created_at": 10.0,
                "choices": ["x", "y"],
            },
            {"id": "p0", "agent": "c-1", "question": "old", "created_at": 1.0, "phase": "Answered"},
        ],
    )
    rows = waiting_rows(snap)
    assert [(r.kind, r.key) for r in rows] == [
        ("prompt", "p1"),
        ("prompt", "p2"),
        ("session", "b-1"),
        ("session", "a-1"),
    ]
    assert rows[0].what == "A? [x | y]"
    assert rows[2].cells(70.0) == ("session", "b-1", "waiting for permission: Bash ls", "1m")


def test_a_write_claim_another_agent_focuses_on_shows_that_focus() -> None:
    """A write claim whose file another agent's focus names shows that agent ("focus on
    it", not a conflict: those are the tracked ones); a read claim or the holder's own focus
    does not."""
    snap = Snapshot(
        agents=[
            {"name": "a-1", "focus": {"files": ["src/app.py"]}},
            {"name": "b-1", "focus": {"files": ["/w/app/src/app.py", "README.md"]}},
        ],
        claims=[
            {
                "resource_key": "file:/w/app/.git//src/app.py",
                "path": "src/app.py",
                "agent": "a-1",
                "mode": "write",
                "expires_at": 160.0,
            },
            {
                "resource_key": "file:/w/app/.git//README.md",
                "path": "README.md",
                "agent": "a-1",
                "mode": "read",
                "expires_at": 160.0,
            },
        ],
    )
    rows = claim_rows(snap, 100.0)
    assert rows[0] == ("app:src/app.py", "a-1", "write", "1m", "focus on it: b-1")
    assert rows[1][-1] == "-"


def test_grant_input_keeps_spaces_in_the_rule() -> None:
    """The rule is everything before the options; options are parsed; bad ones are refused."""
    assert _grant_params("Bash(npm run test:*) --for 30m --session app-1") == {
        "op": "grant",
        "rule": "Bash(npm run test:*)",
        "duration": "30m",
        "session": "app-1",
    }
    assert _grant_params("Edit(src/**)") == {"op": "grant", "rule": "Edit(src/**)"}
    with pytest.raises(ValueError, match="unknown or incomplete"):
        _grant_params("Bash --forever")
    with pytest.raises(ValueError, match="give a rule"):
        _grant_params("  ")


def test_a_tracked_conflict_is_one_row_as_the_console_shows_it() -> None:
    """A check_conflicts row: the repository's name, both worktrees with branch and sessions,
    the files, git's verdict and since how long."""
    snap = Snapshot(
        conflicts=[
            {
                "repo": "/w/app/.git",
                "a": {"worktree": "/w/app", "branch": "main", "sessions": ["a-1"]},
                "b": {"worktree": "/w/app-feature", "branch": None, "sessions": []},
                "files": ["src/app.py"],
                "since": 40.0,
                "conflicts": ["src/app.py"],
            }
        ]
    )
    assert conflict_rows(snap, 100.0) == [
        (
            "app",
            "app (main) a-1 and app-feature (detached)",
            "src/app.py",
            "their commits WILL conflict in src/app.py (git merge-tree)",
            "1m",
        )
    ]
