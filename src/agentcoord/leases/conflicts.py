"""Conflicts seen before the merge: the files two worktrees of one repository both change
(docs/claims.md "Conflicts between worktrees").

For each worktree of a repository (``git worktree list``), the files it changes against the
merge base with the branch it will merge into (``main``, else ``master``), committed and not
(``git diff <merge-base>`` against the working tree, and untracked files). Two worktrees whose
sets share files overlap; whether their commits will really conflict is ``git merge-tree``'s
answer (git 2.38 or newer), which sees commits only: changes not yet committed overlap, but git
cannot tell yet whether they conflict. Runs git: call it off the event loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from agentcoord.leases.gitrun import git

__all__ = [
    "Overlap",
    "Worktree",
    "base_branch",
    "changed_files",
    "merge_conflicts",
    "overlaps",
    "worktrees",
]

_GIT_TIMEOUT = 20.0
_BASES = ("main", "master")


@dataclass(frozen=True)
class Worktree:
    """A worktree: its top level, its branch (None when detached) and its HEAD commit."""

    top: str
    branch: str | None
    head: str


@dataclass(frozen=True)
class Overlap:
    """Two worktrees changing the same files; ``conflicts``: the files their commits will
    conflict in (``git merge-tree``), empty when they merge cleanly, None when git cannot tell
    (a change not committed yet, or an older git)."""

    a: Worktree
    b: Worktree
    files: tuple[str, ...]
    conflicts: tuple[str, ...] | None


def _git(directory: str, *args: str) -> tuple[int, str]:
    return git(directory, *args, timeout=_GIT_TIMEOUT)


def worktrees(directory: str) -> list[Worktree]:
    """The repository's worktrees (the one ``directory`` is in and every linked one), bare
    and missing ones left out."""
    code, out = _git(directory, "worktree", "list", "--porcelain")
    if code != 0:
        return []
    found: list[Worktree] = []
    for block in out.split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
        top, head = fields.get("worktree"), fields.get("HEAD")
        if not top or not head or "bare" in fields or not os.path.isdir(top):
            continue
        branch = fields.get("branch", "").removeprefix("refs/heads/") or None
        found.append(Worktree(top, branch, head))
    return found


def base_branch(directory: str) -> str | None:
    """The branch work merges into: ``main``, else ``master``; None when neither exists."""
    for name in _BASES:
        if _git(directory, "rev-parse", "--verify", "-q", f"refs/heads/{name}")[0] == 0:
            return name
    return None


def changed_files(tree: Worktree, base: str) -> tuple[set[str], set[str]]:
    """The files ``tree`` changes against its merge base with ``base``: those its commits
    change, and those changed but not committed (staged, unstaged, untracked)."""
    code, mb = _git(tree.top, "merge-base", "HEAD", base)
    if code != 0:
        return set(), set()
    _, committed = _git(tree.top, "diff", "--name-only", "--no-renames", "-z", mb.strip(), "HEAD")
    _, worked = _git(tree.top, "diff", "--name-only", "--no-renames", "-z", "HEAD")
    _, untracked = _git(tree.top, "ls-files", "--others", "--exclude-standard", "-z")
    pending = {p for p in (worked + "\0" + untracked).split("\0") if p}
    return {p for p in committed.split("\0") if p}, pending


def merge_conflicts(directory: str, a: str, b: str) -> tuple[str, ...] | None:
    """The files the commits ``a`` and ``b`` conflict in when merged (``git merge-tree
    --write-tree``, no tree touched); empty when they merge cleanly; None when git cannot
    say (older than 2.38, or an error)."""
    code, out = _git(directory, "merge-tree", "--write-tree", "--name-only", "--no-messages", a, b)
    if code == 0:
        return ()
    if code != 1:
        return None  # an older git without --write-tree, or an error
    return tuple(line for line in out.splitlines()[1:] if line)


def overlaps(directory: str) -> list[Overlap]:
    """Every pair of worktrees of ``directory``'s repository whose changes share files."""
    trees = worktrees(directory)
    base = base_branch(directory)
    if base is None or len(trees) < 2:
        return []
    sets = [changed_files(t, base) for t in trees]
    found: list[Overlap] = []
    for i, a in enumerate(trees):
        for j in range(i + 1, len(trees)):
            b = trees[j]
            (ca, pa), (cb, pb) = sets[i], sets[j]
            shared = (ca | pa) & (cb | pb)
            if not shared:
                continue
            # merge-tree reads commits: a shared file not committed on one side cannot be told.
            told = not shared & (pa | pb)
            conflicts = merge_conflicts(directory, a.head, b.head) if told else None
            found.append(Overlap(a, b, tuple(sorted(shared)), conflicts))
    return found
