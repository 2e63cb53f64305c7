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

from agentcoord.leases.conflicts import choose_target, merge_target, overlaps
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


def _clone_with_trunk(tmp_path: Path, env: dict[str, str]) -> Path:
    """A clone (``app``, on ``trunk``) of a remote whose default branch is ``trunk``, neither
    main nor master: ``trunk`` tracks ``origin/trunk`` and ``origin/HEAD`` names it."""
    src = tmp_path / "src"
    src.mkdir()
    git(src, env, "init", "-q", "-b", "trunk")
    for name in ("app.py", "notes.txt"):
        (src / name).write_text(LINES)
    git(src, env, "add", ".")
    git(src, env, "commit", "-q", "-m", "init")
    assert git(tmp_path, env, "clone", "-q", "--bare", str(src), "origin.git").returncode == 0
    assert git(tmp_path, env, "clone", "-q", "origin.git", "app").returncode == 0
    return tmp_path / "app"


def test_the_target_is_the_upstream_else_the_remote_default_branch(tmp_path: Path) -> None:
    """In a clone whose trunk is ``trunk``: a branch tracking origin/trunk, one pushed with
    ``-u`` (its upstream is itself) and a detached worktree merge into origin/trunk; the trunk
    worktree compares against its upstream; a branch tracking ``develop`` merges into it."""
    env = git_env(tmp_path / "run")
    app = _clone_with_trunk(tmp_path, env)
    add = ("worktree", "add", "-q")
    assert git(app, env, *add, "-b", "x", str(tmp_path / "x"), "origin/trunk").returncode == 0
    assert (
        git(app, env, *add, "--no-track", "-b", "y", str(tmp_path / "y"), "trunk").returncode == 0
    )
    assert git(tmp_path / "y", env, "push", "-q", "-u", "origin", "y").returncode == 0
    git(app, env, "branch", "develop")
    assert git(app, env, *add, "--track", "-b", "f", str(tmp_path / "f"), "develop").returncode == 0
    assert git(app, env, *add, "--detach", str(tmp_path / "d")).returncode == 0
    trunk = "refs/remotes/origin/trunk"
    for tree, branch, target in [
        ("app", "trunk", trunk),
        ("x", "x", trunk),
        ("y", "y", trunk),
        ("f", "f", "refs/heads/develop"),
        ("d", None, trunk),
    ]:
        assert merge_target(str(tmp_path / tree), branch) == target, tree


def test_a_trunk_named_trunk_has_a_committed_side(tmp_path: Path) -> None:
    """With neither main nor master, x and y commit the same line of app.py: they will
    conflict, as git merge-tree says; the trunk's commits not pushed yet count against its
    upstream (notes.txt, changed in x without a commit, overlaps)."""
    env = git_env(tmp_path / "run")
    app = _clone_with_trunk(tmp_path, env)
    for name in ("x", "y"):
        done = git(app, env, "worktree", "add", "-q", "-b", name, str(tmp_path / name), "trunk")
        assert done.returncode == 0
    x, y = tmp_path / "x", tmp_path / "y"
    _edit(x, env, "app.py", "one", "ONE", commit=True)
    _edit(y, env, "app.py", "one", "uno", commit=True)
    _edit(app, env, "notes.txt", "two", "TWO", commit=True)
    _edit(x, env, "notes.txt", "six", "SIX", commit=False)
    found = {(o.a.branch, o.b.branch): o for o in overlaps(str(app))}
    assert set(found) == {("trunk", "x"), ("x", "y")}
    assert (found[("x", "y")].files, found[("x", "y")].conflicts) == (("app.py",), ("app.py",))
    assert found[("trunk", "x")].files == ("notes.txt",)


def test_init_default_branch_then_no_target(tmp_path: Path) -> None:
    """With no remote, ``init.defaultBranch`` names the trunk; a repository with no trunk at
    all has no committed side, but changes not committed still overlap."""
    env = git_env(tmp_path / "run")
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "trunk")
    (repo / "app.py").write_text(LINES)
    git(repo, env, "add", ".")
    git(repo, env, "commit", "-q", "-m", "init")
    git(repo, env, "worktree", "add", "-q", "-b", "x", str(tmp_path / "x"))
    assert merge_target(str(tmp_path / "x"), "x") is None
    (repo / "app.py").write_text("trunk\n")
    (tmp_path / "x" / "app.py").write_text("x\n")
    (found,) = overlaps(str(repo))
    assert (found.files, found.conflicts) == (("app.py",), None)
    git(repo, env, "config", "init.defaultBranch", "trunk")
    assert merge_target(str(tmp_path / "x"), "x") == "refs/heads/trunk"
    assert merge_target(str(repo), "trunk") == "refs/heads/trunk"


def test_choose_target_rules() -> None:
    """Another branch as upstream decides; an upstream of the branch's own name does not;
    the trunk's own worktree compares against its upstream, else itself; no trunk, none."""
    trunk = "refs/remotes/origin/trunk"
    assert choose_target("f", "refs/heads/develop", trunk) == "refs/heads/develop"
    assert choose_target("f", "refs/remotes/origin/f", trunk) == trunk
    assert choose_target("trunk", "refs/remotes/origin/trunk", trunk) == trunk
    assert choose_target("main", None, "refs/heads/main") == "refs/heads/main"
    assert choose_target("main", "refs/remotes/up/main", "refs/heads/main") == (
        "refs/remotes/up/main"
    )
    assert choose_target(None, None, trunk) == trunk
    assert choose_target("f", None, None) is None
    assert choose_target("f", "refs/remotes/origin/f", None) is None
