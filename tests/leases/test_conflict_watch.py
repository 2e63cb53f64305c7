"""The daemon's conflict watch against the real daemon (docs/claims.md "Conflicts between
worktrees"): real repositories with ``git worktree add``, sessions as stand-in ``claude``
processes; files are edited and committed with real git, and what each session is told is read
from its own inbox (a long poll: the test waits on the message, not on a clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.tools.test_repo_claims import Session, _git, _worktree, sessions, wt

__all__ = ["sessions", "wt"]  # fixtures used here

WAIT = 30


def _notices(session: Session) -> list[str]:
    """The next messages in the session's inbox (waiting for the first), those from the daemon
    as text."""
    got: list[dict[str, Any]] = session.call("inbox", wait_secs=WAIT)["messages"]
    assert got, f"{session.name} was told nothing in {WAIT}s"
    return [str(m.get("text") or m.get("body")) for m in got if m.get("from") == "agentcoord"]


def _write(tree: Path, name: str, text: str) -> None:
    (tree / name).parent.mkdir(parents=True, exist_ok=True)
    (tree / name).write_text(text)


def test_two_sessions_changing_one_file_are_each_told_once(
    daemon: Daemon, wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A in W1 and B in W2 both change src/app.py (uncommitted): each is told once, naming the
    file, the other session and that git cannot tell yet; editing the file again on both sides
    tells nothing more, and a second shared file is a notice of its own naming only it;
    ``agentcoord conflicts`` shows the daemon's overlap with both sessions."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    _write(w1, "src/app.py", "a's change\n")
    _write(w2, "src/app.py", "b's change\n")
    (to_a,) = _notices(a)
    (to_b,) = _notices(b)
    for text, other, there in ((to_a, b, w2), (to_b, a, w1)):
        assert "src/app.py" in text, text
        assert other.name in text, text
        assert str(there) in text, text
    assert "git cannot tell yet" in to_a
    # The same file again, then a new one: the next notice (after the re-edit's recompute)
    # names only the new file.
    _write(w1, "src/app.py", "a's second change\n")
    _write(w2, "src/app.py", "b's second change\n")
    _write(w1, "src/other.py", "a\n")
    _write(w2, "src/other.py", "b\n")
    (again_a,) = _notices(a)
    (again_b,) = _notices(b)
    for text in (again_a, again_b):
        assert text.splitlines()[0].endswith(": src/other.py"), text
        assert "also shared, told before: src/app.py" in text
    shown = a.call("check_conflicts")
    assert shown["tracked"] is True
    (overlap,) = shown["overlaps"]
    assert overlap["files"] == ["src/app.py", "src/other.py"]
    assert overlap["conflicts"] is None
    sides = {overlap["a"]["worktree"]: overlap["a"], overlap["b"]["worktree"]: overlap["b"]}
    assert sides[str(w1)]["sessions"] == [a.name]
    assert sides[str(w2)]["sessions"] == [b.name]
    cli = subprocess.run(
        [sys.executable, "-m", "agentcoord", "conflicts"],
        cwd=w1,
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    assert f"{w1} (branch main; {a.name}) and {w2} (branch feature; {b.name})" in cli.stdout
    assert "both change: src/app.py, src/other.py (since " in cli.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "agentcoord", "conflicts", str(w2), "--json"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (row,) = json.loads(as_json.stdout)["overlaps"]
    assert isinstance(row.pop("since"), float)  # epoch seconds for scripts
    assert row == {k: v for k, v in overlap.items() if k != "since"}


@pytest.mark.parametrize("clash", [True, False])
def test_git_merge_tree_says_whether_committed_changes_conflict(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session], clash: bool
) -> None:
    """Two feature worktrees commit changes to one file, on the same line (a real conflict) or
    far apart (none): the notice and check_conflicts give git merge-tree's verdict."""
    w1, w2 = wt
    lines = [f"line {n}\n" for n in range(40)]
    _write(w1, "shared.txt", "".join(lines))
    _git(w1, "add", "shared.txt")
    _git(w1, "commit", "-q", "-m", "shared")
    w3 = _worktree(w1, w1.parent / "app-other", "other")
    _git(w2, "merge", "-q", "--ff-only", "main")
    mine, theirs = list(lines), list(lines)
    mine[0] = "feature's line 0\n"
    theirs[0 if clash else 39] = "other's line\n"
    for tree, text in ((w2, mine), (w3, theirs)):
        _write(tree, "shared.txt", "".join(text))
        _git(tree, "commit", "-q", "-am", "change")
    b, c = sessions(w2), sessions(w3)
    (told,) = _notices(b)
    assert c.name in told
    (overlap,) = c.call("check_conflicts")["overlaps"]
    assert overlap["files"] == ["shared.txt"]
    if clash:
        assert "WILL conflict in shared.txt (git merge-tree)" in told, told
        assert overlap["conflicts"] == ["shared.txt"]
    else:
        assert "merge cleanly (git merge-tree)" in told, told
        assert overlap["conflicts"] == []


def test_a_repository_no_session_works_in_is_computed_on_demand(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session], tmp_path: Path
) -> None:
    """check_conflicts with ``repo`` naming a repository no live session works in answers from
    git at once (``tracked`` false), with the shared file; a path outside git is a clear
    error."""
    w1, w2 = wt
    _write(w1, "src/x.py", "1\n")
    _write(w2, "src/x.py", "2\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    s = sessions(elsewhere)
    shown = s.call("check_conflicts", repo=str(w1))
    assert shown["tracked"] is False
    assert [o["files"] for o in shown["overlaps"]] == [["src/x.py"]]
    assert "not in a git repository" in s.text("check_conflicts", repo=str(elsewhere))


class _Inboxes:
    """Where a watch built in the test process sends its notices: a list."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def deliver(self, to: str, msg: Any, msg_id: str | None = None) -> None:
        self.sent.append((to, msg.body.decode()))

    def emit(self, event: str, agent: str, **data: Any) -> None:
        pass


def test_a_change_under_dot_github_is_a_change_of_the_tree(wt: tuple[Path, Path]) -> None:
    """The watch (built here, over two named sessions) takes ``.github/ci.yml`` for a file of
    the worktree, not for git's own dir: both sessions are told of it; a change inside the
    repository's objects tells nothing and runs no git."""
    import asyncio

    from agentcoord.leases.conflictwatch import ConflictWatch

    w1, w2 = wt
    for tree in (w1, w2):
        _write(tree, ".github/ci.yml", f"{tree.name}\n")
    inboxes = _Inboxes()
    watch = ConflictWatch(lambda: {"a": str(w1), "b": str(w2)}, inboxes)

    async def run() -> int:
        await watch.follow_sessions()
        await watch.changed([str(w1.resolve() / ".git" / "objects" / "ab" / "cd")])
        before = watch.recomputes
        await watch.changed([str(t.resolve() / ".github" / "ci.yml") for t in (w1, w2)])
        return before

    assert asyncio.run(run()) == 0
    assert sorted(to for to, _ in inboxes.sent) == ["a", "b"]
    assert all(".github/ci.yml" in text for _, text in inboxes.sent)


def _shared_lines(w1: Path) -> list[str]:
    """shared.txt (40 lines) committed on main in W1."""
    lines = [f"line {n}\n" for n in range(40)]
    _write(w1, "shared.txt", "".join(lines))
    _git(w1, "add", "shared.txt")
    _git(w1, "commit", "-q", "-m", "shared")
    return lines


def _commit_lines(tree: Path, lines: list[str], **changed: str) -> None:
    """shared.txt with lines ``n<k>`` replaced, committed."""
    text = list(lines)
    for key, line in changed.items():
        text[int(key[1:])] = line + "\n"
    _write(tree, "shared.txt", "".join(text))
    _git(tree, "commit", "-q", "-am", "change")


@pytest.mark.parametrize("first", ["not committed", "clean"])
def test_a_verdict_getting_worse_is_told_once_to_each_side(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session], first: str
) -> None:
    """Two worktrees told they share shared.txt (git cannot tell yet, or it merges cleanly)
    are each told once more when their commits will conflict; a verdict that improves again
    (one side drops its conflicting commit) tells nothing: the next notice is the one of a new
    shared file."""
    w1, w2 = wt
    lines = _shared_lines(w1)
    w3 = _worktree(w1, w1.parent / "app-other", "other")
    _git(w2, "merge", "-q", "--ff-only", "main")
    if first == "clean":
        _commit_lines(w2, lines, n0="feature's line 0")
        _commit_lines(w3, lines, n39="other's line 39")
    else:
        _write(w2, "shared.txt", "".join(["feature's line 0\n", *lines[1:]]))
        _write(w3, "shared.txt", "".join([*lines[:39], "other's line 39\n"]))
    b, c = sessions(w2), sessions(w3)
    told = {s.name: _notices(s) for s in (b, c)}
    expected = "merge cleanly" if first == "clean" else "git cannot tell yet"
    assert all(len(t) == 1 and expected in t[0] for t in told.values()), told
    # Worse: both commit, and other's commit changes line 0 as well.
    if first != "clean":
        _git(w2, "commit", "-q", "-am", "feature")
    _commit_lines(w3, lines, n0="other's line 0", n39="other's line 39")
    for s, there in ((b, w3), (c, w2)):
        (worse,) = _notices(s)
        first_line = worse.splitlines()[0]
        assert first_line.startswith("agentcoord: git merge-tree now says your worktree"), worse
        assert first_line.endswith("WILL conflict in shared.txt"), worse
        assert str(there) in first_line
    (overlap,) = b.call("check_conflicts")["overlaps"]
    assert overlap["conflicts"] == ["shared.txt"]
    # Better: other drops its last commit (clean again, or back to not committed), then a new
    # file is shared: the next notice of each is that file's, not the verdict's.
    _git(w3, "reset", "-q", "--hard" if first == "clean" else "--mixed", "HEAD~1")
    _write(w2, "src/new.py", "b\n")
    _write(w3, "src/new.py", "c\n")
    for s in (b, c):
        (again,) = _notices(s)
        assert again.splitlines()[0].endswith(": src/new.py"), again
        assert "also shared, told before: shared.txt" in again


def test_a_trunk_named_trunk_with_upstreams_is_compared_against(
    tmp_path: Path, sessions: Callable[[Path], Session]
) -> None:
    """A clone whose trunk is ``trunk`` (no main, no master): x tracks origin/trunk, y was
    pushed with ``-u``; both commit the same line and their sessions are told it WILL
    conflict; the trunk worktree's commit not pushed yet overlaps a change in x."""
    src = tmp_path / "src"
    src.mkdir()
    _git(src, "init", "-q", "-b", "trunk")
    lines = _shared_lines(src)
    _write(src, "notes.txt", "notes\n")
    _git(src, "add", "notes.txt")
    _git(src, "commit", "-q", "-m", "notes")
    _git(tmp_path, "clone", "-q", "--bare", str(src), "origin.git")
    _git(tmp_path, "clone", "-q", "origin.git", "app")
    app, x, y = tmp_path / "app", tmp_path / "app-x", tmp_path / "app-y"
    _git(app, "worktree", "add", "-q", "-b", "x", str(x), "origin/trunk")
    _git(app, "worktree", "add", "-q", "--no-track", "-b", "y", str(y), "trunk")
    _git(y, "push", "-q", "-u", "origin", "y")
    _commit_lines(x, lines, n0="x's line 0")
    _commit_lines(y, lines, n0="y's line 0")
    _write(app, "notes.txt", "trunk's notes\n")
    _git(app, "commit", "-q", "-am", "notes on trunk, not pushed")
    _write(x, "notes.txt", "x's notes\n")
    a, _, cy = sessions(app), sessions(x), sessions(y)
    (to_y,) = _notices(cy)
    assert to_y.splitlines()[0].endswith(": shared.txt"), to_y
    assert str(x) in to_y
    assert "WILL conflict in shared.txt (git merge-tree)" in to_y
    (to_app,) = _notices(a)
    assert to_app.splitlines()[0].endswith(": notes.txt"), to_app
    assert "git cannot tell yet" in to_app


def test_a_branch_tracking_develop_is_compared_against_develop(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """Two worktrees on branches tracking ``develop`` count only what they change since
    develop: develop's own commit (dev.txt, not on main) is shared by neither."""
    w1, _ = wt
    lines = _shared_lines(w1)
    _git(w1, "checkout", "-q", "-b", "develop")
    _write(w1, "dev.txt", "develop's work\n")
    _git(w1, "add", "dev.txt")
    _git(w1, "commit", "-q", "-m", "develop")
    _git(w1, "checkout", "-q", "main")
    f, g = w1.parent / "app-f", w1.parent / "app-g"
    for tree, name in ((f, "f"), (g, "g")):
        _git(w1, "worktree", "add", "-q", "--track", "-b", name, str(tree), "develop")
    _commit_lines(f, lines, n0="f's line 0")
    _commit_lines(g, lines, n39="g's line 39")
    sf, sg = sessions(f), sessions(g)
    (told,) = _notices(sf)
    assert told.splitlines()[0].endswith(": shared.txt"), told
    assert "merge cleanly (git merge-tree)" in told
    (overlap,) = sg.call("check_conflicts")["overlaps"]
    assert (overlap["files"], overlap["conflicts"]) == (["shared.txt"], [])


def test_the_target_is_asked_again_on_a_config_change_not_on_a_commit(
    wt: tuple[Path, Path],
) -> None:
    """The watch (built here) keeps each worktree's target: a commit's ref change does not ask
    it again, a change of the repository's config (an upstream set or unset) does."""
    import asyncio

    from agentcoord.leases.conflictwatch import ConflictWatch

    w1, w2 = wt
    _git(w1, "branch", "develop")
    watch = ConflictWatch(lambda: {"a": str(w1), "b": str(w2)}, _Inboxes())
    common = w1.resolve() / ".git"

    def target() -> str | None:
        (row,) = [t for t in watch.status()["worktrees"] if t["top"] == str(w2.resolve())]
        return row["target"]  # type: ignore[no-any-return]

    async def run() -> list[str | None]:
        seen = []
        await watch.follow_sessions()
        await watch.changed([str(w2.resolve() / "README")])
        seen.append(target())
        _git(w2, "branch", "-q", "--set-upstream-to=develop")
        await watch.changed([str(common / "config")])
        seen.append(target())
        _git(w2, "branch", "-q", "--unset-upstream")
        _write(w2, "README", "y\n")
        _git(w2, "commit", "-q", "-am", "a commit")
        await watch.changed([str(common / "refs" / "heads" / "feature")])
        seen.append(target())
        await watch.changed([str(common / "config")])
        seen.append(target())
        return seen

    assert asyncio.run(run()) == [
        "refs/heads/main",
        "refs/heads/develop",
        "refs/heads/develop",
        "refs/heads/main",
    ]
