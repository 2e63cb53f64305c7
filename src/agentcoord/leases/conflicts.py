"""Conflicts seen before the merge: the files two worktrees of one repository both change
(docs/claims.md "Conflicts between worktrees").

For each worktree of a repository (``git worktree list``), the files it changes against the
merge base with the branch it will merge into (:func:`merge_target`, decided per worktree:
docs/claims.md "Which branch work merges into"), committed and not (``git diff <merge-base>``
against the working tree, and untracked files). Two worktrees whose sets share files overlap;
whether their commits will really conflict is ``git merge-tree``'s answer (git 2.38 or newer),
which sees commits only: changes not yet committed overlap, but git cannot tell yet whether
they conflict. Runs git: call it off the event loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from agentcoord.leases.gitrun import git

__all__ = [
    "Overlap",
    "Worktree",
    "branch_of",
    "changed_files",
    "choose_target",
    "merge_conflicts",
    "merge_target",
    "overlaps",
    "worktrees",
]

_GIT_TIMEOUT = 20.0
_TRUNKS = ("main", "master")  # after init.defaultBranch


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


def branch_of(ref: str) -> str:
    """The branch a full ref name names: ``refs/heads/x`` and ``refs/remotes/origin/x`` name
    ``x`` (a remote's name is taken to be one path component)."""
    if ref.startswith("refs/heads/"):
        return ref.removeprefix("refs/heads/")
    if ref.startswith("refs/remotes/"):
        return ref.removeprefix("refs/remotes/").partition("/")[2]
    return ref


def choose_target(branch: str | None, upstream: str | None, trunk: str | None) -> str | None:
    """The ref a worktree's work merges into (docs/claims.md "Which branch work merges into"),
    from what git said: the worktree's ``branch`` (None: detached), that branch's ``upstream``
    and the repository's ``trunk`` (full ref names, None when there is none). Pure.

    An upstream naming another branch (``develop``, ``origin/trunk``) is the target. An upstream
    of the branch's own name (``git push -u`` made it) is where the branch is published, not
    where it merges: the trunk is the target, unless the worktree is on the trunk itself, which
    compares against its upstream (its commits not pushed yet), or against itself when it has
    none (only what it has not committed counts)."""
    if branch is not None and upstream is not None and branch_of(upstream) != branch:
        return upstream
    if trunk is None:
        return None
    if branch is not None and branch_of(trunk) == branch:
        return upstream or f"refs/heads/{branch}"
    return trunk


def merge_target(directory: str, branch: str | None) -> str | None:
    """The ref (a full name) the work of the worktree ``directory``, on ``branch`` (None:
    detached), merges into: :func:`choose_target` over the branch's upstream (``branch.<b>.merge``
    and ``.remote``, when its ref exists) and the repository's trunk: the remote's default
    branch (``refs/remotes/<remote>/HEAD``, the upstream's remote, else ``origin``), else
    ``init.defaultBranch``, else ``main``, else ``master``, the first whose ref exists. None
    when neither is found. At most four git commands; one when the upstream decides."""
    upstream = None
    if branch is not None:
        code, out = _git(directory, "rev-parse", "--symbolic-full-name", f"{branch}@{{upstream}}")
        upstream = out.strip() if code == 0 and out.strip().startswith("refs/") else None
        if upstream is not None and branch_of(upstream) != branch:
            return upstream  # the trunk is not asked for
    remote = "origin"
    if upstream is not None and upstream.startswith("refs/remotes/"):
        remote = upstream.removeprefix("refs/remotes/").partition("/")[0]
    candidates = []
    code, out = _git(directory, "symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD")
    if code == 0 and out.strip():
        candidates.append(out.strip())
    code, out = _git(directory, "config", "--get", "init.defaultBranch")
    names = [out.strip()] if code == 0 and out.strip() else []
    candidates += [f"refs/heads/{name}" for name in (*names, *_TRUNKS)]
    # One for-each-ref says which exist (it matches a pattern as a prefix too: kept exact).
    code, out = _git(directory, "for-each-ref", "--format=%(refname)", *candidates)
    there = set(out.splitlines()) if code == 0 else set()
    trunk = next((c for c in candidates if c in there), None)
    return choose_target(branch, upstream, trunk)


def changed_files(tree: Worktree, target: str | None) -> tuple[set[str], set[str]]:
    """The files ``tree`` changes against its merge base with ``target`` (a ref; None: there
    is none, nothing committed counts): those its commits change, and those changed but not
    committed (staged, unstaged, untracked)."""
    committed = ""
    code, mb = _git(tree.top, "merge-base", "HEAD", target) if target else (1, "")
    if code == 0:
        _, committed = _git(
            tree.top, "diff", "--name-only", "--no-renames", "-z", mb.strip(), "HEAD"
        )
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
    if len(trees) < 2:
        return []
    sets = [changed_files(t, merge_target(t.top, t.branch)) for t in trees]
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
