"""Folder and glob claims against the real daemon (docs/claims.md "Folders and globs"): real
repositories with ``git worktree add``, sessions as stand-in ``claude`` processes whose hooks
run as their children; the write guard, automatic edit leases, ``claim``, ``check_claims`` and
the commit guard all see a folder or glob cover a file, and overlapping claims sent at the same
moment are never both granted."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.test_commitguard import change, git, git_env, head, make_worktrees, setup_git
from tests.tools.session_helpers import finish, read_results
from tests.tools.test_commit_guard import _hold, _session_commit
from tests.tools.test_repo_claims import Session, sessions, wt

__all__ = ["sessions", "wt"]  # fixtures used here


def test_a_folder_claim_denies_a_write_to_a_new_file_in_it(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A claims the folder src/api/ in W1; B's Write of a new file below it in W2 is denied,
    naming the folder and A; B's files beside the folder are not."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    got = a.call("claim", resource_key="file:src/api/", purpose="api rework")
    assert got["acquired"] is True
    assert got["claim"]["path"] == "src/api/"
    reason = b.edit(w2 / "src" / "api" / "v2" / "new.py", "Write")
    assert reason is not None
    assert "src/api/v2/new.py" in reason
    assert "is inside src/api/, which is claimed for writing by " + a.name in reason
    assert b.edit("src/apiclient.py", "Write") is None
    assert a.edit("src/api/mine.py", "Write") is None  # its own folder
    # The holder's own folder holds the file: no automatic lease beside it.
    assert [c["path"] for c in a.call("check_claims", holder=a.name)["claims"]] == ["src/api/"]


def test_glob_and_file_claims_refuse_each_other_both_ways(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A glob refuses a claim on a file it covers (showing the glob as the holder's key), a
    file claim refuses a folder over it, a file the glob does not match is free, and read
    claims on overlapping keys share."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    glob = a.call("claim", resource_key="file:src/**/*.py")
    assert glob["acquired"] is True
    refused = b.call("claim", resource_key="file:src/deep/x.py")
    assert refused["acquired"] is False
    assert refused["holder"]["resource_key"] == glob["claim"]["resource_key"]
    assert refused["holder"]["agent"] == a.name
    assert b.call("claim", resource_key="file:src/notes.md")["acquired"] is True
    assert b.call("claim", resource_key="file:lib/x.py")["acquired"] is True
    folder = a.call("claim", resource_key="file:lib/")
    assert folder["acquired"] is False
    assert folder["holder"]["path"] == "lib/x.py"
    assert a.call("claim", resource_key="file:docs/", mode="read")["acquired"] is True
    assert b.call("claim", resource_key="file:docs/a.md", mode="read")["acquired"] is True
    assert b.call("claim", resource_key="file:docs/b.md")["acquired"] is False


def test_an_edit_lease_keeps_a_folder_claim_out_until_it_goes(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """B's automatic edit lease on a file refuses A's claim of its folder; when B's session
    ends the folder can be claimed."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    assert b.edit("src/api/handler.py") is None
    refused = a.call("claim", resource_key="file:src/")
    assert refused["acquired"] is False
    assert refused["holder"]["agent"] == b.name
    b.end()
    assert a.call("claim", resource_key="file:src/")["acquired"] is True


def test_check_claims_lists_the_folders_and_globs_over_a_path(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """check_claims for a file lists the folder and the glob that cover it (and not a glob
    that does not); for a folder, the globs reaching into it and the files in it."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    for who, key in ((a, "src/api/"), (b, "**/*.md"), (b, "lib/**/*.rs"), (b, "lib/core/mod.go")):
        # read claims: the folder and the glob over *.md overlap, and share
        assert who.call("claim", resource_key=f"file:{key}", mode="read")["acquired"] is True
    rows = a.call("check_claims", prefix="file:src/api/README.md")["claims"]
    assert sorted(r["path"] for r in rows) == ["**/*.md", "src/api/"]
    rows = a.call("check_claims", prefix="file:lib/core/")["claims"]
    assert sorted(r["path"] for r in rows) == ["**/*.md", "lib/**/*.rs", "lib/core/mod.go"]


def _at_once(calls: list[tuple[Session, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each session's ``claim`` sent at the same moment (threads released by one barrier)."""
    out: list[dict[str, Any]] = [{} for _ in calls]
    barrier = threading.Barrier(len(calls))

    def run(k: int) -> None:
        session, args = calls[k]
        barrier.wait()
        out[k] = session.call("claim", **args)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_overlapping_claims_sent_at_once_are_never_both_granted(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """Forty rounds of a folder, a file in it and a glob over it, claimed by three sessions at
    the same moment: exactly one is granted each round (the other two name a holder)."""
    w1, w2 = wt
    a, b, c = sessions(w1), sessions(w2), sessions(w1)
    for k in range(40):
        got = _at_once(
            [
                (a, {"resource_key": f"file:r{k}/"}),
                (b, {"resource_key": f"file:r{k}/sub/f.py"}),
                (c, {"resource_key": f"file:r{k}/**/*.py"}),
            ]
        )
        assert [g["acquired"] for g in got].count(True) == 1, (k, got)


def test_a_folder_claim_refuses_a_commit_from_another_worktree(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """A session holding src/ in W1 refuses another session's commit of a new file below it
    in W2, naming the folder; a commit outside it goes through."""
    env = git_env(daemon.runtime_dir)
    w1, w2 = make_worktrees(tmp_path / "repo", env)
    assert setup_git(env, str(w1)).returncode == 0
    proc = _hold(daemon, claude_bin, w1, [("claim", {"resource_key": "file:src/"})])
    try:
        assert read_results(proc)[0]["structuredContent"]["acquired"] is True
        change(w2, env, "src/new/mod.py")
        start = head(w2, env)
        out = _session_commit(claude_bin, w2, env, "new module")
        assert out.returncode != 0
        assert head(w2, env) == start
        assert "src/new/mod.py: " in out.stderr
        assert "(claims src/)" in out.stderr
        assert git(w2, env, "reset", "-q").returncode == 0
        change(w2, env, "docs/notes.md")
        done = _session_commit(claude_bin, w2, env, "notes")
        assert done.returncode == 0, done.stderr
    finally:
        finish(proc)
