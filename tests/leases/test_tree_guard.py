"""The working-tree guard against the real daemon (docs/claims.md "Working-tree guard"): real
repositories with ``git worktree add``, sessions as stand-in ``claude`` processes whose
PreToolUse hook runs as their child with the Bash payload Claude Code sends; a command the hook
allows is then run for real, as Claude Code would, so a refusal leaves the tree as it was."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.tools.test_repo_claims import Session, _git, sessions, wt

__all__ = ["sessions", "wt"]  # fixtures used here


def bash(session: Session, command: str, cwd: Path | None = None) -> str | None:
    """The session's Bash tool: the PreToolUse hook first (None when it allows), then, if
    allowed, the command itself in ``cwd`` (default: the session's)."""
    where = cwd or session.cwd
    payload = {
        "session_id": session.session_id,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "cwd": str(where),
    }
    out = session._ask({"hook": "pre-tool-use", "payload": payload})
    assert out["returncode"] == 0, out
    if out["output"].strip():
        spec = json.loads(out["output"])["hookSpecificOutput"]
        assert spec["permissionDecision"] == "deny"
        return str(spec["permissionDecisionReason"])
    ran = subprocess.run(
        ["bash", "-c", command],
        cwd=where,
        env=_IDENTITY,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    return None


_IDENTITY = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def branch(tree: Path) -> str:
    return subprocess.run(
        ["git", "branch", "--show-current"], cwd=tree, capture_output=True, text=True, check=True
    ).stdout.strip()


def _committed(tree: Path, *names: str) -> None:
    for name in names:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("v1\n")
    _git(tree, "add", *names)
    _git(tree, "commit", "-q", "-m", "files")


def test_a_branch_switch_under_another_session_is_refused_and_the_tree_stays(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A and B work in W1; A's ``git checkout -b other`` is refused naming B and what B is
    on, and W1 stays on main; B's own worktree neighbour W2 is not involved."""
    w1, _ = wt
    a, b = sessions(w1), sessions(w1)
    b.call("annotate", intent="fixing the parser")
    reason = bash(a, "git checkout -b other")
    assert reason is not None
    assert "`git checkout -b other` would change the branch or files of the worktree" in reason
    assert f"{b.name}: works there ({w1})" in reason
    assert "working on: fixing the parser" in reason
    assert f"send_message to {b.name}" in reason
    assert branch(w1) == "main"


def test_cd_and_dash_c_reach_the_other_tree(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """From W2, ``cd`` into W1 then ``git stash``, ``git -C W1 reset --hard``, a subshell's
    ``git clean`` and ``git worktree remove W1`` are refused while B works in W1; the same
    commands on W2 itself (where nobody else works) run."""
    w1, w2 = wt
    a, b = sessions(w2), sessions(w1)
    (w1 / "dirty.txt").write_text("B's work\n")
    for command in (
        f"cd {w1} && git stash -u",
        f"git -C {w1} reset --hard",
        f"true; (cd {w1}/src && git clean -fd)",
        f"bash -c 'cd {w1} && git pull'",
    ):
        reason = bash(a, command)
        assert reason is not None, command
        assert b.name in reason
    assert (w1 / "dirty.txt").read_text() == "B's work\n"
    reason = bash(a, f"git worktree remove --force {w1}")  # from W2: W1 is the tree it takes
    assert reason is not None
    assert b.name in reason
    assert bash(a, "git checkout -q -b mine && git stash list") is None
    assert branch(w2) == "mine"


def test_claims_taken_from_a_tree_count_and_an_alias_is_resolved(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session], tmp_path: Path
) -> None:
    """C, whose cwd is outside the repository, holds a claim on a file of W1: A's ``git co``
    (an alias of checkout in the repository's config) in W1 is refused naming C's file."""
    w1, _ = wt
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    a, c = sessions(w1), sessions(elsewhere)
    assert c.call("claim", resource_key=f"file:{w1 / 'src' / 'app.py'}")["acquired"] is True
    _git(w1, "config", "alias.co", "checkout")
    reason = bash(a, "git co -q -b side")
    assert reason is not None
    assert f"{c.name}: holds src/app.py" in reason
    assert branch(w1) == "main"


def test_staging_everything_leaves_the_other_sessions_files_out(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A and B edit files in W1 (their edit leases say whose is which): A's ``git add -A``
    and ``git commit -am`` are refused listing B's file and the command that stages A's own;
    that command runs, and B's file stays unstaged."""
    w1, _ = wt
    _committed(w1, "src/a.py", "src/b.py")
    a, b = sessions(w1), sessions(w1)
    assert a.edit("src/a.py") is None
    assert b.edit("src/b.py") is None
    (w1 / "src" / "a.py").write_text("A's change\n")
    (w1 / "src" / "b.py").write_text("B's half-done change\n")
    for command in ("git add -A", "git commit -q -am mine", "cd src && git add ."):
        reason = bash(a, command)
        assert reason is not None, command
        assert f"  src/b.py: {b.name}" in reason.splitlines()
        assert "Stage only the other changes: git add -- src/a.py" in reason
    assert bash(a, "git add -- src/a.py && git commit -q -m mine") is None
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=w1, capture_output=True, text=True, check=True
    ).stdout
    assert status.splitlines() == [" M src/b.py"]


def test_a_tree_of_ones_own_is_free_and_frees_when_the_other_session_goes(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """Alone in W1 (B works in W2), A switches branches; once B, then in W1 too, exits, A
    may switch again."""
    w1, w2 = wt
    a = sessions(w1)
    sessions(w2)
    assert bash(a, "git switch -q -c one") is None
    b = sessions(w1)
    assert bash(a, "git switch -q main") is not None
    b.close()
    deadline = time.monotonic() + 15
    while bash(a, "git switch -q main") is not None:
        assert time.monotonic() < deadline, "B's exit was not seen"
    assert branch(w1) == "main"
