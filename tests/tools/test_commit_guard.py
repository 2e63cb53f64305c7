"""The commit guard against the real daemon: two worktrees of one repository, sessions as
stand-in ``claude`` processes (the daemon resolves a ``git commit`` run under one as that
session, by ancestry), and a plain ``git commit`` from this process as the anonymous human's
terminal (docs/claims.md "Commit guard")."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.test_commitguard import (
    OVERRIDE_HINT,
    change,
    git,
    git_env,
    head,
    make_worktrees,
    setup_git,
)
from tests.tools.session_helpers import CALLS, finish, read_results, unix_request


@pytest.fixture
def repo(daemon: Daemon, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """W1 and W2 of one repository, the guard installed (from W1, shared by W2)."""
    env = git_env(daemon.runtime_dir)
    w1, w2 = make_worktrees(tmp_path / "repo", env)
    assert setup_git(env, str(w1)).returncode == 0
    return w1, w2, env


def _hold(
    d: Daemon, claude: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]
) -> subprocess.Popen[bytes]:
    """A session in ``cwd`` that makes ``calls`` and stays alive (its claims with it)."""
    return subprocess.Popen(
        [str(claude), "--", sys.executable, str(CALLS), str(d.socket), "--hold", json.dumps(calls)],
        env=d.env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )


@pytest.fixture
def holder(
    daemon: Daemon, claude_bin: Path, repo: tuple[Path, Path, dict[str, str]]
) -> Iterator[str]:
    """A session in W1 holding a write claim on W1's src/auth.py, with a focus intent; its
    agent name."""
    w1 = repo[0]
    proc = _hold(
        daemon,
        claude_bin,
        w1,
        [
            ("annotate", {"intent": "rewriting the login flow"}),
            ("claim", {"resource_key": f"file:{w1 / 'src' / 'auth.py'}", "mode": "write"}),
            ("whoami", {}),
        ],
    )
    try:
        results = read_results(proc)
        assert results[1]["structuredContent"]["acquired"] is True, results
        yield results[2]["structuredContent"]["agent"]
    finally:
        finish(proc)


def _session_commit(
    claude: Path, cwd: Path, env: dict[str, str], message: str
) -> subprocess.CompletedProcess[str]:
    """``git commit`` as a session's Bash tool runs it: a child of a ``claude`` process."""
    return subprocess.run(
        [str(claude), "--", "git", "commit", "-q", "-m", message],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_claimed_file_refuses_another_sessions_commit_from_the_other_worktree(
    daemon: Daemon, claude_bin: Path, repo: tuple[Path, Path, dict[str, str]], holder: str
) -> None:
    """A session's commit in W2 of the file a session holds a write claim on (claimed from W1)
    is refused, naming the holder, its intent and since when; no commit is made."""
    _, w2, env = repo
    change(w2, env, "docs/notes.md", "src/auth.py", "src/util.py")  # the claimed one not first
    start = head(w2, env)
    out = _session_commit(claude_bin, w2, env, "touch auth")
    assert out.returncode != 0
    assert head(w2, env) == start
    assert "commit refused: 1 staged file is claimed for writing" in out.stderr
    assert f"src/auth.py: {holder} (rewriting the login flow), since " in out.stderr
    assert OVERRIDE_HINT in out.stderr
    assert "your own claims never block" in out.stderr  # it was resolved as a session


def test_the_humans_terminal_is_refused_too_and_the_override_commits(
    daemon: Daemon, repo: tuple[Path, Path, dict[str, str]], holder: str
) -> None:
    """A plain ``git commit`` (no agent above it: anonymous) is refused by the claim too and
    told why; ``AGENTCOORD_ALLOW_CLAIMED=1`` makes the same commit."""
    _, w2, env = repo
    change(w2, env, "src/auth.py")
    start = head(w2, env)
    refused = git(w2, env, "commit", "-q", "-m", "touch auth")
    assert refused.returncode != 0
    assert holder in refused.stderr
    assert "any agent's write claim blocks it" in refused.stderr
    assert head(w2, env) == start
    allowed = git(w2, dict(env, AGENTCOORD_ALLOW_CLAIMED="1"), "commit", "-q", "-m", "anyway")
    assert allowed.returncode == 0, allowed.stderr
    assert head(w2, env) != start
    assert "AGENTCOORD_ALLOW_CLAIMED is set" in allowed.stderr


def test_unclaimed_files_commit_while_another_is_claimed(
    daemon: Daemon, claude_bin: Path, repo: tuple[Path, Path, dict[str, str]], holder: str
) -> None:
    """With src/auth.py claimed, a session's commit of other files (one changed, one new) goes
    through, and the hook prints nothing."""
    _, w2, env = repo
    change(w2, env, "src/util.py", "docs/new.md")
    start = head(w2, env)
    out = _session_commit(claude_bin, w2, env, "util")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert head(w2, env) != start


def test_the_committers_own_claim_does_not_block(
    daemon: Daemon, claude_bin: Path, repo: tuple[Path, Path, dict[str, str]]
) -> None:
    """A session that claims a file and then commits it (both under one ``claude`` process,
    as its MCP server and its Bash tool are) is not blocked, while the same staged change is
    refused to the anonymous terminal."""
    _, w2, env = repo
    change(w2, env, "src/auth.py")
    claim = [("claim", {"resource_key": f"file:{w2 / 'src' / 'auth.py'}", "mode": "write"})]
    script = (
        '"$PY" "$CALLS" "$SOCK" "$CALLS_JSON" || exit 9\n'
        "echo claimed\n"
        "read go\n"  # the test commits as the terminal meanwhile
        "git commit -q -m mine || exit 8\necho committed\nread done\n"
    )
    proc = subprocess.Popen(
        [str(claude_bin), "--", "sh", "-c", script],
        cwd=w2,
        env=dict(
            env,
            PY=sys.executable,
            CALLS=str(CALLS),
            SOCK=str(daemon.socket),
            CALLS_JSON=json.dumps(claim),
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        results = json.loads(proc.stdout.readline())
        assert results[0]["structuredContent"]["acquired"] is True, results
        assert proc.stdout.readline() == "claimed\n"
        assert git(w2, env, "commit", "-q", "-m", "terminal").returncode != 0
        start = head(w2, env)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "committed\n"
        assert head(w2, env) != start
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the stand-in claude and what it runs
        proc.communicate(timeout=30)


def test_the_check_answers_an_anonymous_caller_only_for_its_own_directory(
    daemon: Daemon, repo: tuple[Path, Path, dict[str, str]], holder: str
) -> None:
    """Anonymous callers (refused every other method) get the commit check, but only for
    their own working directory: this process asks about W2 from another cwd and is refused;
    and ``initialize`` stays refused to it."""
    _, w2, _ = repo
    req = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "agentcoord/commit-check",
        "params": {"cwd": str(w2), "paths": ["src/auth.py"]},
    }
    other_dir = unix_request(daemon, req, human=False)
    assert other_dir["error"]["code"] == -32602, other_dir
    assert "not your working directory" in other_dir["error"]["message"]
    init = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}}
    assert unix_request(daemon, init, human=False)["error"]["code"] == -32001
    as_human = unix_request(daemon, req)["result"]
    assert as_human["ok"] is False
    assert [b["agent"] for b in as_human["blocked"]] == [holder]
    assert as_human["blocked"][0]["intent"] == "rewriting the login flow"
