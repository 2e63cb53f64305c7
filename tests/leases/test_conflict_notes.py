"""The conflict watch's decisions as values (docs/claims.md "Conflicts between worktrees"): who
is told which files once, when what was told is forgotten, what a notice says; and the checks
of the tree guard's request (gitguard/treecheck.py)."""

from __future__ import annotations

import pytest

from agentcoord.errors import ProtocolError
from agentcoord.gitguard.treecheck import message, tree_params
from agentcoord.leases.conflictnotes import (
    Pair,
    Told,
    notice_text,
    pair_key,
    verdict_text,
    worse_text,
)
from agentcoord.leases.worktrees import Peer, Tree

pytestmark = pytest.mark.unit


def test_a_file_is_told_once_and_a_new_one_is_news() -> None:
    """The first overlap is news; the same files again are not; a new file is news alone."""
    told = Told()
    assert told.news("a", "/y", ["f.py"]) == ["f.py"]
    assert told.news("a", "/y", ["f.py"]) == []
    assert told.news("a", "/y", ["f.py", "g.py"]) == ["g.py"]
    assert told.news("b", "/x", ["f.py"]) == ["f.py"]  # each session, each other worktree


def test_what_was_told_is_forgotten_when_the_overlap_ends() -> None:
    """Once two worktrees share nothing, a later overlap of the same file is news again; an
    overlap still live keeps its memory."""
    told = Told()
    told.news("a", "/y", ["f.py"])
    told.news("a", "/z", ["h.py"])
    told.keep_only({("a", "/z")})
    assert told.news("a", "/y", ["f.py"]) == ["f.py"]
    assert told.news("a", "/z", ["h.py"]) == []


def test_the_notice_names_files_worktrees_sessions_since_and_verdict() -> None:
    """A notice names the new files, the other worktree, its sessions, since when (and how
    long ago), git's verdict and the files told before."""
    pair = Pair("/repo/.git", "/x", "/y", {"a.py": 100.0, "b.py": 160.0}, ("a.py",))
    text = notice_text(
        mine="/x",
        my_branch="x",
        other="/y",
        other_branch=None,
        others=["y-1"],
        new=["b.py"],
        pair=pair,
        now=190.0,
    )
    first = text.splitlines()[0]
    assert first.startswith("agentcoord: 1 file your worktree /x (branch x) changes is also")
    assert "changed in /y (detached) by y-1, since " in first
    assert first.endswith("(30s ago): b.py")
    assert "their commits WILL conflict in a.py (git merge-tree)" in text
    assert "(also shared, told before: a.py)" in text
    assert "send_message" in text


def test_a_verdict_getting_worse_is_news_once() -> None:
    """A conflict where git could not tell, or where the commits merged cleanly, is news once
    per file; the same conflict again, or cannot-tell in between, is not; a clean verdict
    forgets it, so a later conflict is news; each session and other worktree on its own."""
    told = Told()
    assert told.worse("a", "/y", None) == []
    assert told.worse("a", "/y", ("f.py",)) == ["f.py"]
    assert told.worse("a", "/y", ("f.py",)) == []
    assert told.worse("a", "/y", None) == []
    assert told.worse("a", "/y", ("f.py",)) == []
    assert told.worse("a", "/y", ("f.py", "g.py")) == ["g.py"]
    assert told.worse("b", "/x", ("f.py",)) == ["f.py"]
    assert told.worse("a", "/y", ()) == []
    assert told.worse("a", "/y", ("f.py",)) == ["f.py"]
    told.keep_only({("b", "/x")})
    assert told.worse("a", "/y", ("f.py",)) == ["f.py"]
    assert told.worse("b", "/x", ("f.py",)) == []


def test_the_worse_notice_names_the_conflict_and_the_other_side() -> None:
    """The notice of a worse verdict says git merge-tree now says they will conflict, in which
    files, with which worktree and sessions, and the files shared since when."""
    pair = Pair("/repo/.git", "/x", "/y", {"a.py": 100.0, "b.py": 160.0}, ("a.py",))
    text = worse_text(
        mine="/x",
        my_branch="x",
        other="/y",
        other_branch="y",
        others=["y-1"],
        new=[],
        pair=pair,
        now=190.0,
    )
    first = text.splitlines()[0]
    assert first == (
        "agentcoord: git merge-tree now says your worktree /x (branch x) and /y (branch y) "
        "(worked in by y-1) WILL conflict in a.py"
    )
    assert "both change, told before: a.py, b.py; shared since " in text
    assert "(90s ago)" in text
    assert "send_message" in text


def test_verdicts_read_as_git_said() -> None:
    """None: git cannot tell yet; empty: clean; files: a conflict in them."""
    assert "cannot tell yet" in verdict_text(None)
    assert "merge cleanly" in verdict_text(())
    assert "WILL conflict in a, b" in verdict_text(("a", "b"))
    assert pair_key("/b", "/a") == pair_key("/a", "/b") == ("/a", "/b")


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"cwd": "relative"},
        {"cwd": "/x", "what": 3},
        {"cwd": "/x", "what": "w" * 201},
        {"cwd": "/x", "refuse": "yes"},
    ],
)
def test_tree_check_params_are_checked(params: dict[str, object]) -> None:
    """A tree-check request needs an absolute cwd, a short text and a boolean."""
    with pytest.raises(ProtocolError):
        tree_params(params)


def test_the_tree_message_says_warn_or_refuse_and_how_to_go_on() -> None:
    """Warned: it happened, tell them; refused: ask first, the override named."""
    tree = Tree("/r/.git", "/w", "main")
    peers = {"app-2": Peer("app-2", "/w/src", ["src/p.py"])}
    warned = message("`git checkout` of paths", tree, peers, {"app-2": "parser"}, False)
    assert warned.startswith("agentcoord: warning: `git checkout` of paths moved the worktree")
    assert "  app-2: works there (/w/src); holds src/p.py; working on: parser" in warned
    refused = message("an update of main", tree, peers, {}, True)
    assert refused.startswith("agentcoord: refused: an update of main would move")
    assert "AGENTCOORD_ALLOW_MOVE=1 git ..." in refused
