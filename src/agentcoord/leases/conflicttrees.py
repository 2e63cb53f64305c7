"""The git side of the daemon's conflict watch (docs/claims.md "Conflicts between worktrees"):
what one live worktree changes against its merge base, asked of git in as few commands as a
change needs.

A file edit changes only what is not committed: one ``git status --porcelain`` answers it. A
commit, a branch switch or a move of the target branch changes the committed side: ``git
symbolic-ref`` and ``git rev-parse`` of HEAD and the target, and only when one of them moved,
``git merge-base`` and one ``git diff --name-only``. The target itself
(:func:`agentcoord.leases.conflicts.merge_target`, up to four git commands) is kept with the
worktree and asked again only when its branch changed, its target ref went, or the caller says
the repository's configuration or other refs changed (``retarget``). Runs git: call it off the
event loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from agentcoord.leases.conflicts import merge_target
from agentcoord.leases.gitrun import git

__all__ = ["TreeChanges", "locate", "refresh_commits", "refresh_pending"]

_GIT_TIMEOUT = 20.0


@dataclass(frozen=True)
class TreeChanges:
    """One worktree as the watch keeps it: where it is (top level, the repository's common git
    dir, its own git dir), its branch and HEAD, the ref its work merges into (``target``, a full
    ref name; None when there is none, or not asked yet) and that ref's commit, the merge base,
    and the files it changes: committed since the merge base, and not committed."""

    top: str
    repo: str
    gitdir: str
    branch: str | None = None
    head: str = ""
    target: str | None = None
    target_head: str = ""
    merge_base: str = ""
    committed: frozenset[str] = frozenset()
    pending: frozenset[str] = frozenset()

    @property
    def changes(self) -> frozenset[str]:
        """Every file the worktree changes against its merge base."""
        return self.committed | self.pending


def _git(directory: str, *args: str) -> tuple[int, str]:
    return git(directory, *args, timeout=_GIT_TIMEOUT)


def locate(directory: str) -> TreeChanges | None:
    """The worktree ``directory`` is in (nothing known of its changes yet); None outside git."""
    code, out = _git(
        directory,
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-common-dir",
        "--git-dir",
    )
    lines = out.splitlines()
    if code != 0 or len(lines) != 3:
        return None
    top, repo, gitdir = (os.path.realpath(p) for p in lines)
    return TreeChanges(top=top, repo=repo, gitdir=gitdir)


def _names(out: str) -> frozenset[str]:
    return frozenset(p for p in out.split("\0") if p)


def refresh_commits(tree: TreeChanges, retarget: bool = False) -> TreeChanges:
    """``tree`` with its branch, HEAD, target and committed changes as they are now; git runs
    the merge base and the diff only when HEAD or the target moved, and looks for the target
    again only when the branch changed, the target's ref went, or ``retarget``."""
    _, out = _git(tree.top, "symbolic-ref", "-q", "--short", "HEAD")
    branch = out.strip() or None
    # No target yet (or none found last time, when a trunk may have appeared since): ask.
    fresh = retarget or branch != tree.branch or tree.target is None
    if fresh:
        tree = replace(tree, target=merge_target(tree.top, branch))
    tree = replace(tree, branch=branch)
    while True:
        if tree.target is None:
            code, out = _git(tree.top, "rev-parse", "-q", "--verify", "HEAD")
            head = out.strip() if code == 0 else ""
            return replace(tree, head=head, target_head="", merge_base="", committed=frozenset())
        code, out = _git(tree.top, "rev-parse", "HEAD", tree.target)
        shas = out.split()
        if code == 0 and len(shas) == 2:
            break
        if fresh:  # no commit yet, or a target just found is gone again
            tree = replace(tree, target=None)
        else:  # the target's ref went (a branch deleted, a remote pruned): look again
            tree, fresh = replace(tree, target=merge_target(tree.top, branch)), True
    head, target_head = shas
    if (head, target_head) == (tree.head, tree.target_head) and tree.merge_base:
        return tree
    code, mb = _git(tree.top, "merge-base", head, target_head)
    if code != 0:
        return replace(
            tree, head=head, target_head=target_head, merge_base="", committed=frozenset()
        )
    mb = mb.strip()
    _, names = _git(tree.top, "diff", "--name-only", "--no-renames", "-z", mb, head)
    return replace(tree, head=head, target_head=target_head, merge_base=mb, committed=_names(names))


def refresh_pending(tree: TreeChanges) -> TreeChanges:
    """``tree`` with what it has not committed (staged, unstaged, untracked but not ignored)
    as it is now: one ``git status``."""
    # --no-optional-locks: git status would otherwise refresh the index under index.lock, and a
    # user's own git command at that moment would fail on the lock (git(1) "GIT_OPTIONAL_LOCKS").
    code, out = _git(
        tree.top,
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
    )
    if code != 0:
        return tree
    return replace(tree, pending=frozenset(e[3:] for e in out.split("\0") if len(e) > 3))
