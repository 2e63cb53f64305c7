"""The git checkout and ref guards against the real daemon (docs/claims.md "From a terminal or a
script"): ``agentcoord setup git`` installs ``post-checkout`` and ``reference-transaction``
beside the commit and push guards; real git, run from this process as a terminal would (no
session above it), in a worktree where a live session (a stand-in ``claude``) works."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcoord.gitguard.movehook import CHECKOUT, REFS
from tests.conftest import Daemon
from tests.test_commitguard import git, git_env, make_worktrees, setup_git
from tests.tools.test_repo_claims import Session, sessions

__all__ = ["sessions"]  # fixture used here


@pytest.fixture
def trees(daemon: Daemon, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """W1 (main, two commits) and W2 of one repository, every guard installed."""
    env = git_env(daemon.runtime_dir)
    w1, w2 = make_worktrees(tmp_path / "repo", env)
    (w1 / "src" / "util.py").write_text("x = 2\n")
    assert git(w1, env, "commit", "-q", "-am", "second").returncode == 0
    done = setup_git(env, str(w1))
    assert done.returncode == 0, done.stderr
    assert "installed the checkout guard" in done.stdout
    assert "installed the ref update guard" in done.stdout
    return w1, w2, env


def _head(tree: Path, env: dict[str, str]) -> str:
    return git(tree, env, "rev-parse", "HEAD").stdout.strip()


def test_a_checkout_under_a_live_session_warns_naming_it(
    trees: tuple[Path, Path, dict[str, str]], sessions: Callable[[Path], Session]
) -> None:
    """A terminal's ``git checkout -b topic`` in W1, where a live session works, is made and
    warned about naming the session and its intent; a checkout of paths too; the same in W2,
    where nobody works, says nothing."""
    w1, w2, env = trees
    s = sessions(w1)
    s.call("annotate", intent="fixing util")
    done = git(w1, env, "checkout", "-q", "-b", "topic")
    assert done.returncode == 0, done.stderr
    assert "agentcoord: warning: `git checkout` of another branch moved the worktree" in done.stderr
    assert f"{s.name}: works there ({w1}); working on: fixing util" in done.stderr
    assert git(w1, env, "branch", "--show-current").stdout.strip() == "topic"
    (w1 / "src" / "util.py").write_text("scratch\n")
    paths = git(w1, env, "checkout", "--", "src/util.py")
    assert "`git checkout` of paths moved the worktree" in paths.stderr, paths.stderr
    alone = git(w2, env, "checkout", "-q", "-b", "elsewhere")
    assert alone.returncode == 0
    assert alone.stderr == ""


def test_a_reset_warns_by_default_and_is_refused_when_configured(
    trees: tuple[Path, Path, dict[str, str]], sessions: Callable[[Path], Session]
) -> None:
    """``git reset --hard HEAD~1`` in W1 under a live session: by default it happens with a
    warning; with ``agentcoord.treeGuard refuse`` the ref update is aborted (HEAD stays) naming
    the session; the override lets it through; a commit made there is never warned about."""
    w1, _, env = trees
    s = sessions(w1)
    first = _head(w1, env)
    warned = git(w1, env, "reset", "-q", "--hard", "HEAD~1")
    assert warned.returncode == 0, warned.stderr
    assert "agentcoord: warning: an update of main" in warned.stderr
    assert s.name in warned.stderr
    assert _head(w1, env) != first
    assert git(w1, env, "reset", "-q", "--hard", first).returncode == 0
    assert git(w1, env, "config", "agentcoord.treeGuard", "refuse").returncode == 0
    refused = git(w1, env, "reset", "-q", "--hard", "HEAD~1")
    assert refused.returncode != 0
    assert "agentcoord: refused: an update of main" in refused.stderr
    assert f"{s.name}: works there" in refused.stderr
    assert _head(w1, env) == first
    allowed = git(w1, dict(env, AGENTCOORD_ALLOW_MOVE="1"), "reset", "-q", "--hard", "HEAD~1")
    assert allowed.returncode == 0, allowed.stderr
    assert "AGENTCOORD_ALLOW_MOVE is set" in allowed.stderr
    (w1 / "src" / "util.py").write_text("x = 3\n")
    committed = git(w1, env, "commit", "-q", "-am", "third")
    assert committed.returncode == 0, committed.stderr
    assert "agentcoord" not in committed.stderr
    amended = git(w1, env, "commit", "-q", "--amend", "-m", "third, amended")
    assert amended.returncode == 0, amended.stderr
    assert "agentcoord" not in amended.stderr


def test_previous_hooks_are_chained_and_given_back_byte_for_byte(
    trees: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """A post-checkout and a reference-transaction hook already there run first, with git's
    arguments (and the ref lines on stdin), by every checkout; ``--remove`` gives them back,
    bytes and mode as they were."""
    w1, w2, env = trees
    hooks = w1 / ".git" / "hooks"
    assert setup_git(env, "--remove", str(w1)).returncode == 0
    log = tmp_path / "ran"
    before = {}
    for guard in (CHECKOUT, REFS):
        old = hooks / guard.hook
        old.write_text(f'#!/bin/sh\necho "{guard.hook} $1 $(cat | wc -l)" >> {log}\n')
        old.chmod(0o750)
        before[guard.hook] = (old.read_bytes(), old.stat().st_mode)
    done = setup_git(env, str(w1))
    assert done.returncode == 0, done.stderr
    for guard in (CHECKOUT, REFS):
        chained = hooks / guard.chained
        assert (chained.read_bytes(), chained.stat().st_mode) == before[guard.hook]
    assert git(w2, env, "reset", "-q", "--hard", "HEAD").returncode == 0
    assert git(w2, env, "checkout", "-q", "-b", "next").returncode == 0
    ran = log.read_text().splitlines()
    prepared = [line for line in ran if line.startswith("reference-transaction prepared ")]
    assert prepared, ran
    assert all(int(line.split()[-1]) >= 1 for line in prepared), ran  # the ref lines passed on
    assert any(line.startswith("reference-transaction committed") for line in ran), ran
    assert any(line.startswith("post-checkout ") for line in ran), ran
    removed = setup_git(env, "--remove", str(w2))
    assert removed.returncode == 0, removed.stderr
    for guard in (CHECKOUT, REFS):
        old = hooks / guard.hook
        assert (old.read_bytes(), old.stat().st_mode) == before[guard.hook]
        assert not (hooks / guard.chained).exists()


def test_no_daemon_lets_the_checkout_go_with_one_line(
    trees: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """With no daemon the checkout is made and the hook says in one line that its guard is
    off; a commit, which moves no worktree, asks nothing and says nothing."""
    w1, _, env = trees
    env = dict(env, AGENTCOORD_RUNTIME_DIR=str(tmp_path / "none"))
    done = git(w1, env, "checkout", "-q", "-b", "topic")
    assert done.returncode == 0
    (line,) = done.stderr.splitlines()
    assert "no daemon on" in line
    assert "the checkout guard is off for this checkout" in line
    (w1 / "src" / "util.py").write_text("x = 9\n")
    committed = git(w1, env, "commit", "-q", "-am", "x")
    assert committed.returncode == 0
    assert "ref update" not in committed.stderr
    assert os.access(w1 / ".git" / "hooks" / REFS.hook, os.X_OK)
