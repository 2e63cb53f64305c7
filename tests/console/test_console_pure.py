"""The console's pure parts (docs/console.md): the queue's order and the rule a permission wait
suggests, an audit event's row for the filters, where a transcript is and which of its turns
are shown, and the conflicts between worktrees read from real git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcoord.console.auditrows import audit_row
from agentcoord.console.conflictsource import WorktreeConflicts
from agentcoord.console.queue import queue_items
from agentcoord.console.transcripts import TAIL_BYTES, last_turns, transcript_path
from agentcoord.kernel.timetext import human_time
from agentcoord.stores.records import PromptRecord

WHEN = "2026-01-01T00:00:00.000Z"
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


@pytest.mark.unit
def test_queue_order() -> None:
    """Prompts oldest first, then permission waits, then input waits, each oldest first;
    ended and working sessions are not queued; a wait carries its repository and rule."""
    prompts = [
        PromptRecord("p2", "b", "choice", "which?", choices=["x", "y"], created_at=20.0),
        PromptRecord("p1", "a", "approval", "ok?", created_at=10.0),
    ]
    agents: list[dict[str, Any]] = [
        {"name": "in-1", "state": "waiting for input", "state_since": 1.0},
        {"name": "perm-2", "state": "waiting for permission: Bash make", "state_since": 5.0},
        {"name": "perm-1", "state": "waiting for permission: Read", "state_since": 2.0},
        {"name": "gone", "state": "waiting for input", "ended": True},
        {"name": "busy", "state": "working"},
    ]
    items = queue_items(prompts, agents, {"perm-2": "shop"})
    assert [i["id"] for i in items] == [
        "prompt:p1",
        "prompt:p2",
        "wait:perm-1",
        "wait:perm-2",
        "wait:in-1",
    ]
    assert items[1]["choices"] == ["x", "y"]
    assert (items[3]["rule"], items[3]["repo"]) == ("Bash(make:*)", "shop")
    assert (items[4]["type"], items[4]["rule"]) == ("input", "")


@pytest.mark.unit
def test_audit_row_names_and_repos() -> None:
    """An event's row has the CLI's line, every agent it names and the repositories of its
    file keys, in both shapes an event travels in."""
    stored = {
        "type": "CLAIM_REFUSED",
        "agent": "app-2",
        "ts": 0,
        "seq": 7,
        "data": {"resource_key": "file:/w/app/.git//src/a.py", "holder": "app-1"},
    }
    row = audit_row(stored)
    assert row["names"] == ["app-1", "app-2"]
    assert row["repos"] == ["app"]
    assert row["seq"] == 7
    assert "CLAIM_REFUSED  app-2  resource_key=app:src/a.py holder=app-1" in row["text"]
    flat = {"type": "CHANNEL_OPENED", "agent": "x", "channel": "c", "participants": ["y", "z"]}
    assert audit_row(flat)["names"] == ["x", "y", "z"]
    assert "seq" not in audit_row(flat)


@pytest.mark.unit
def test_transcript_path_is_derived(tmp_path: Path) -> None:
    """The path is the projects dir of the cwd and the session id; an id that is not a plain
    id (a path, a dot-dot) names nothing."""
    got = transcript_path(tmp_path, "/home/me/my app", "abc-123")
    assert got == tmp_path / "projects" / "-home-me-my-app" / "abc-123.jsonl"
    for bad in ("../etc/passwd", "a/b", "", ".hidden", "x" * 200):
        assert transcript_path(tmp_path, "/home/me", bad) is None
    assert transcript_path(tmp_path, "relative/dir", "abc") is None


def _line(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra})


@pytest.mark.unit
def test_last_turns(tmp_path: Path) -> None:
    """The last text turns, oldest first; tool calls, tool results, meta and inserted command
    lines are left out; a long turn is cut with its length said; a missing file is none."""
    path = tmp_path / "t.jsonl"
    lines = [_line("user", f"question {i}") for i in range(10)]
    lines += [
        _line("assistant", [{"type": "tool_use", "name": "Bash", "input": {}}]),
        _line("user", [{"type": "tool_result", "content": "out"}]),
        _line("user", "<command-name>/clear</command-name>"),
        _line("user", "meta", isMeta=True),
        _line("assistant", [{"type": "text", "text": "x" * 3000}], timestamp=WHEN),
        "not json",
    ]
    path.write_text("\n".join(lines) + "\n")
    turns = last_turns(path, count=3)
    assert [t["text"] for t in turns[:2]] == ["question 8", "question 9"]
    assert turns[2]["role"] == "assistant"
    assert turns[2]["ts"] == human_time(WHEN)
    assert turns[2]["text"].endswith("... (3000 characters)")
    assert last_turns(tmp_path / "missing.jsonl") == []
    assert last_turns(None) == []


@pytest.mark.unit
def test_last_turns_reads_only_the_tail(tmp_path: Path) -> None:
    """A transcript longer than the tail read still gives its last turns (the cut first line
    of the tail is skipped, not misread)."""
    path = tmp_path / "big.jsonl"
    filler = _line("user", "y" * 1000) + "\n"
    path.write_text(filler * (TAIL_BYTES // len(filler) + 5) + _line("user", "the last") + "\n")
    assert last_turns(path, count=1)[0]["text"] == "the last"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=30)


async def test_conflicts_between_worktrees(tmp_path: Path) -> None:
    """Two worktrees committing the same file differently conflict, said as git says it, once
    per repository however many of its directories are asked about."""
    app = tmp_path / "shop"
    app.mkdir()
    _git(app, "init", "-q", "-b", "main")
    (app / "a.txt").write_text("base\n")
    _git(app, "add", "a.txt")
    _git(app, "commit", "-q", "-m", "base")
    fix = tmp_path / "shop-fix"
    _git(app, "worktree", "add", "-q", "-b", "fix", str(fix))
    _git(app, "checkout", "-q", "-b", "feature")
    for tree, text in ((app, "feature\n"), (fix, "fix\n")):
        (tree / "a.txt").write_text(text)
        _git(tree, "commit", "-q", "-am", "change")
    rows = await WorktreeConflicts().rows([str(app), str(fix)])
    assert len(rows) == 1
    [row] = rows
    assert row["repo"] == "shop"
    assert row["files"] == ["shop:a.txt"]
    assert row["conflicts"] == ["a.txt"]
    assert row["verdict"] == "conflict in a.txt"
    assert {row["a"]["branch"], row["b"]["branch"]} == {"feature", "fix"}
    assert await WorktreeConflicts().rows([str(tmp_path / "nowhere")]) == []
