"""Conflicts between worktrees seen before the merge (docs/claims.md "Conflicts between
worktrees"): real repositories with linked worktrees; files both change against the merge base
(committed or not) overlap, and ``git merge-tree`` decides whether committed changes will really
conflict. ``agentcoord conflicts`` prints it, as the user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcoord.leases.conflicts import overlaps
from tests.test_commitguard import git, git_env

pytestmark = pytest.mark.unit

LINES = "one\ntwo\nthree\nfour\nfive\nsix\n"


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """A repository on main (app.py, lib.py committed) and two linked worktrees, x and y."""
    env = git_env(tmp_path / "run")
    main = tmp_path / "app"
    main.mkdir()
    git(main, env, "init", "-q", "-b", "main")
    (main / "app.py").write_text(LINES)
    (main / "lib.py").write_text(LINES)
    git(main, env, "add", ".")
    git(main, env, "commit", "-q", "-m", "init")
    for name in ("x", "y"):
        assert (
            git(main, env, "worktree", "add", "-q", "-b", name, str(tmp_path / name)).returncode
            == 0
        )
    return main, tmp_path / "x", tmp_path / "y", env


def _edit(tree: Path, env: dict[str, str], name: str, old: str, new: str, commit: bool) -> None:
    path = tree / name
    path.write_text(path.read_text().replace(old, new))
    if commit:
        git(tree, env, "commit", "-q", "-am", f"{old} -> {new}")


def test_the_same_lines_changed_in_two_worktrees_will_conflict(
    trees: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    """x and y both commit a change of app.py's first line: one overlap, app.py, and git
    merge-tree says it will conflict there."""
    main, x, y, env = trees
    _edit(x, env, "app.py", "one", "ONE", commit=True)
    _edit(y, env, "app.py", "one", "uno", commit=True)
    (found,) = overlaps(str(main))
    assert {found.a.branch, found.b.branch} == {"x", "y"}
    assert found.files == ("app.py",)
    assert found.conflicts == ("app.py",)


def test_other_lines_merge_cleanly_and_other_files_do_not_overlap(
    trees: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    """x changes app.py's first line and y its last, both committed: they overlap on app.py
    and merge cleanly; a change of lib.py in x alone is no overlap."""
    _, x, y, env = trees
    _edit(x, env, "app.py", "one", "ONE", commit=True)
    _edit(x, env, "lib.py", "two", "TWO", commit=True)
    _edit(y, env, "app.py", "six", "SIX", commit=True)
    (found,) = overlaps(str(x))
    assert found.files == ("app.py",)
    assert found.conflicts == ()


def test_uncommitted_and_new_files_count_and_git_cannot_tell_yet(
    trees: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    """An uncommitted edit in the main worktree and a committed one in y overlap on app.py
    (git cannot tell yet whether they conflict); an untracked new.py in x and in y overlaps
    too; worktrees with nothing in common are not listed."""
    main, x, y, env = trees
    _edit(main, env, "app.py", "three", "THREE", commit=False)
    _edit(y, env, "app.py", "one", "ONE", commit=True)
    (x / "new.py").write_text("x\n")
    (y / "new.py").write_text("y\n")
    found = {(o.a.top, o.b.top): o for o in overlaps(str(main))}
    assert set(found) == {(str(main), str(y)), (str(x), str(y))}
    assert found[(str(main), str(y))].files == ("app.py",)
    assert found[(str(main), str(y))].conflicts is None
    assert found[(str(x), str(y))].files == ("new.py",)


def test_the_cli_prints_the_overlaps(trees: tuple[Path, Path, Path, dict[str, str]]) -> None:
    """``agentcoord conflicts`` from a worktree names both worktrees, the files and git's
    verdict; ``--json`` gives the same as data; with nothing shared it says so."""
    main, x, y, env = trees

    def cli(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "agentcoord", "conflicts", *args],
            cwd=x,
            env=dict(env, HOME=str(x.parent / "home")),  # no daemon: git alone answers
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert cli().strip() == "no two worktrees change the same files"
    _edit(x, env, "app.py", "one", "ONE", commit=True)
    _edit(y, env, "app.py", "one", "uno", commit=True)
    text = cli()
    assert f"{x} (branch x) and {y} (branch y) both change: app.py" in text
    assert "will conflict in app.py (git merge-tree)" in text
    (row,) = json.loads(cli("--json"))["overlaps"]
    assert (row["files"], row["conflicts"]) == (["app.py"], ["app.py"])
    assert str(main) not in text
