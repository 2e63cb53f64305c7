"""The push guard against the real daemon and real git (docs/claims.md "Push guard"): two
worktrees of one repository and a bare remote; a session in W1 holds a write claim, and pushes
of commits that change the claimed file (edited, renamed from or to it, deleted) are refused,
while other pushes, the override, a chained pre-push hook and a missing daemon behave as the
commit guard's do."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Daemon
from tests.test_commitguard import change, git, git_env, make_worktrees, setup_git
from tests.tools.session_helpers import finish, read_results
from tests.tools.test_commit_guard import _hold

ALLOW = {"AGENTCOORD_ALLOW_CLAIMED": "1"}


@pytest.fixture
def pushable(daemon: Daemon, tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """W1 and W2 of one repository with a bare remote ``origin`` holding main, the guards
    installed (from W1)."""
    env = git_env(daemon.runtime_dir)
    w1, w2 = make_worktrees(tmp_path / "repo", env)
    origin = tmp_path / "origin.git"
    assert git(tmp_path, env, "init", "-q", "--bare", str(origin)).returncode == 0
    assert git(w1, env, "remote", "add", "origin", str(origin)).returncode == 0
    assert git(w1, env, "push", "-q", "origin", "main").returncode == 0
    installed = setup_git(env, str(w1))
    assert installed.returncode == 0, installed.stderr
    assert "installed the push guard" in installed.stdout
    return w1, w2, origin, env


@pytest.fixture
def holder(
    daemon: Daemon, claude_bin: Path, pushable: tuple[Path, Path, Path, dict[str, str]]
) -> Iterator[str]:
    """A session in W1 holding a write claim on src/auth.py; its agent name."""
    w1 = pushable[0]
    proc = _hold(
        daemon,
        claude_bin,
        w1,
        [
            ("annotate", {"intent": "rewriting the login flow"}),
            ("claim", {"resource_key": "file:src/auth.py"}),
            ("whoami", {}),
        ],
    )
    try:
        results = read_results(proc)
        assert results[1]["structuredContent"]["acquired"] is True, results
        yield results[2]["structuredContent"]["agent"]
    finally:
        finish(proc)


def _session_push(claude: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``git push origin w2`` as a session's Bash tool runs it: a child of a ``claude``."""
    return subprocess.run(
        [str(claude), "--", "git", "push", "-q", "origin", "w2"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _remote_has(origin: Path, env: dict[str, str], branch: str) -> bool:
    return git(origin, env, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode == 0


def _commit(tree: Path, env: dict[str, str], message: str) -> None:
    done = git(tree, dict(env, **ALLOW), "commit", "-q", "-m", message)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "how",
    ["edit", "rename-from", "rename-to", "delete"],
)
def test_a_push_of_commits_touching_a_claimed_file_is_refused(
    daemon: Daemon,
    claude_bin: Path,
    pushable: tuple[Path, Path, Path, dict[str, str]],
    holder: str,
    how: str,
) -> None:
    """Commits in W2 that edit src/auth.py, rename it away, rename another file onto it, or
    delete it (each committed with the override) cannot be pushed by another session while
    the W1 session holds it: the push is refused naming the file and the holder, and the
    remote gets no branch."""
    _, w2, origin, env = pushable
    if how == "edit":
        change(w2, env, "src/auth.py")
    elif how == "rename-from":
        assert git(w2, env, "mv", "src/auth.py", "src/login.py").returncode == 0
    elif how == "rename-to":
        assert git(w2, env, "rm", "-q", "src/auth.py").returncode == 0
        _commit(w2, env, "drop auth")
        assert git(w2, env, "mv", "src/util.py", "src/auth.py").returncode == 0
    else:
        assert git(w2, env, "rm", "-q", "src/auth.py").returncode == 0
    _commit(w2, env, how)
    change(w2, env, "docs/later.md")
    _commit(w2, env, "a later commit touching nothing claimed")
    out = _session_push(claude_bin, w2, env)
    assert out.returncode != 0
    assert "push refused: 1 file the pushed commits change is claimed" in out.stderr
    assert f"src/auth.py: {holder} (rewriting the login flow), since " in out.stderr
    assert "AGENTCOORD_ALLOW_CLAIMED=1 git push" in out.stderr
    assert not _remote_has(origin, env, "w2")


def test_unclaimed_pushes_go_and_the_override_pushes_anyway(
    daemon: Daemon,
    claude_bin: Path,
    pushable: tuple[Path, Path, Path, dict[str, str]],
    holder: str,
) -> None:
    """A push of commits touching only unclaimed files goes through silently; after a commit
    of the claimed file, the human's terminal is refused too and the override pushes."""
    _, w2, origin, env = pushable
    change(w2, env, "src/util.py")
    _commit(w2, env, "util")
    out = _session_push(claude_bin, w2, env)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert _remote_has(origin, env, "w2")
    change(w2, env, "src/auth.py")
    _commit(w2, env, "auth")
    refused = git(w2, env, "push", "-q", "origin", "w2")
    assert refused.returncode != 0
    assert "This push comes from no agent" in refused.stderr
    before = git(origin, env, "rev-parse", "w2").stdout
    allowed = git(w2, dict(env, **ALLOW), "push", "-q", "origin", "w2")
    assert allowed.returncode == 0, allowed.stderr
    assert "AGENTCOORD_ALLOW_CLAIMED is set: pushing without checking claims" in allowed.stderr
    assert git(origin, env, "rev-parse", "w2").stdout != before


PREVIOUS_PRE_PUSH = """#!/bin/sh
# the user's own pre-push hook: records its arguments and the ref lines git gave it
echo "args $1 $2" >> "$MARKER_FILE"
cat >> "$MARKER_FILE"
"""


def test_a_chained_pre_push_hook_gets_the_refs_and_no_daemon_lets_the_push_go(
    tmp_path: Path,
) -> None:
    """With no daemon, a push goes through with one line saying the guard is off; the
    pre-push hook that was there runs first with git's arguments and the same ref lines on
    its stdin; --remove gives it back."""
    env = git_env(tmp_path / "no-daemon")
    w1, _ = make_worktrees(tmp_path / "repo", env)
    origin = tmp_path / "origin.git"
    git(tmp_path, env, "init", "-q", "--bare", str(origin))
    git(w1, env, "remote", "add", "origin", str(origin))
    hook = w1 / ".git" / "hooks" / "pre-push"
    hook.write_text(PREVIOUS_PRE_PUSH)
    hook.chmod(0o755)
    marker = tmp_path / "ran"
    env = dict(env, MARKER_FILE=str(marker))
    assert setup_git(env, str(w1)).returncode == 0
    done = git(w1, env, "push", "-q", "origin", "main")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"agentcoord: no daemon on {tmp_path / 'no-daemon' / 'agentcoord.sock'}; the push "
        "guard is off for this push"
    ]
    sha = git(w1, env, "rev-parse", "main").stdout.strip()
    assert marker.read_text().splitlines() == [
        f"args origin {origin}",
        f"refs/heads/main {sha} refs/heads/main {'0' * 40}",
    ]
    removed = setup_git(env, "--remove", str(w1))
    assert "restored the pre-push hook it ran first" in removed.stdout
    assert hook.read_text() == PREVIOUS_PRE_PUSH


@pytest.mark.parametrize("how", ["edit", "rename"])
def test_a_merge_whose_resolution_touches_a_claimed_file_is_refused(
    daemon: Daemon,
    claude_bin: Path,
    pushable: tuple[Path, Path, Path, dict[str, str]],
    holder: str,
    how: str,
) -> None:
    """A merge in W2 of two branches that never touch src/auth.py, whose own resolution edits
    it (or renames it away), cannot be pushed while the W1 session holds it: the merge counts
    what it changes against its first parent."""
    _, w2, origin, env = pushable
    assert git(w2, env, "checkout", "-q", "-b", "side").returncode == 0
    change(w2, env, "src/util.py")
    _commit(w2, env, "side")
    assert git(w2, env, "checkout", "-q", "w2").returncode == 0
    change(w2, env, "docs/w2.md")
    _commit(w2, env, "w2")
    merging = git(w2, env, "merge", "-q", "--no-ff", "--no-commit", "side")
    assert merging.returncode == 0, merging.stderr
    if how == "edit":
        change(w2, env, "src/auth.py")
    else:
        assert git(w2, env, "mv", "src/auth.py", "src/login.py").returncode == 0
    _commit(w2, env, "merge side, auth touched in the resolution")
    parents = git(w2, env, "rev-list", "--parents", "-n", "1", "HEAD").stdout.split()
    assert len(parents) == 3  # a merge commit
    out = _session_push(claude_bin, w2, env)
    assert out.returncode != 0, out.stderr
    assert "push refused: 1 file the pushed commits change is claimed" in out.stderr
    assert f"src/auth.py: {holder} (rewriting the login flow), since " in out.stderr
    assert not _remote_has(origin, env, "w2")
