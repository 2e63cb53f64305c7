"""What the conflict watch decides, as values (docs/claims.md "Conflicts between worktrees"):
which pairs of live worktrees change the same files, since when, which sessions must be told
of which files, and what they are told. Pure: no git, no clock, no I/O.

A session is told once per other worktree and file: a notice names the files that newly joined
the overlap, and nothing is said again while they stay in it, except when git merge-tree's
verdict gets worse: it names a file that will conflict which the session was not told of (from
"cannot tell yet" or "merge cleanly" to "will conflict"), one notice per such change. A verdict
that improves or stays says nothing; one that says "merge cleanly" again forgets the conflicts
told, so a later conflict is news again. When two worktrees no longer share any file, what their
sessions were told of each other is forgotten, so a later overlap is news again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentcoord.kernel.timetext import human_time

__all__ = [
    "Pair",
    "Told",
    "Verdict",
    "notice_text",
    "pair_key",
    "shared_files",
    "verdict_text",
    "worse_text",
]

# The merge-tree verdict of a pair: the files their commits conflict in (empty: they merge
# cleanly), or None while git cannot tell (a shared file not committed on one side).
Verdict = tuple[str, ...] | None


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The key of the pair of worktrees ``a`` and ``b`` (top levels), in either order."""
    return (a, b) if a < b else (b, a)


def shared_files(a: Iterable[str], b: Iterable[str]) -> frozenset[str]:
    """The files both change."""
    return frozenset(a) & frozenset(b)


@dataclass(frozen=True)
class Pair:
    """Two live worktrees of one repository that change the same files: ``since`` holds when
    each shared file joined the overlap (epoch seconds), ``told`` whether git can judge it
    (every shared file committed on both sides), ``conflicts`` git merge-tree's verdict."""

    repo: str
    a: str
    b: str
    since: Mapping[str, float]
    conflicts: Verdict = None

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted(self.since))

    @property
    def began(self) -> float:
        return min(self.since.values())


class Told:
    """Which files each session was told another worktree also changes, and which of them it
    was told will conflict: ``(agent, other worktree) -> files``."""

    def __init__(self) -> None:
        self._told: dict[tuple[str, str], set[str]] = {}
        self._conflicts: dict[tuple[str, str], set[str]] = {}

    def news(self, agent: str, other: str, files: Iterable[str]) -> list[str]:
        """The files of ``files`` not yet told to ``agent`` about ``other``, now taken as
        told."""
        told = self._told.setdefault((agent, other), set())
        new = sorted(set(files) - told)
        told.update(new)
        return new

    def worse(self, agent: str, other: str, conflicts: Verdict) -> list[str]:
        """The files the verdict ``conflicts`` says will conflict that ``agent`` was not told
        of about ``other``, now taken as told. A verdict of no conflict (``()``) forgets those
        told; one that cannot tell (None) keeps them: git has not said they were resolved."""
        told = self._conflicts.setdefault((agent, other), set())
        if conflicts is None:
            return []
        if not conflicts:
            told.clear()
            return []
        new = sorted(set(conflicts) - told)
        told.update(new)
        return new

    def keep_only(self, live: set[tuple[str, str]]) -> None:
        """Forget what was told about pairs no longer overlapping (``live``: (agent, other
        worktree) that still share files)."""
        for key in [k for k in self._told if k not in live]:
            del self._told[key]
        for key in [k for k in self._conflicts if k not in live]:
            del self._conflicts[key]


def verdict_text(conflicts: Verdict) -> str:
    """git merge-tree's verdict as people read it."""
    if conflicts is None:
        return "not all committed yet: git cannot tell yet whether they will conflict"
    if not conflicts:
        return "their commits merge cleanly (git merge-tree)"
    return f"their commits WILL conflict in {', '.join(conflicts)} (git merge-tree)"


def _tree(top: str, branch: str | None) -> str:
    return f"{top} ({'branch ' + branch if branch else 'detached'})"


def notice_text(
    *,
    mine: str,
    my_branch: str | None,
    other: str,
    other_branch: str | None,
    others: Iterable[str],
    new: list[str],
    pair: Pair,
    now: float,
) -> str:
    """The inbox notice for a session in worktree ``mine``: ``new`` files are also changed in
    ``other`` by the sessions ``others``, since when, and git's verdict."""
    who = ", ".join(sorted(others)) or "no live session"
    since = min(pair.since[f] for f in new)
    ago = max(0, round(now - since))
    count = f"{len(new)} file" + ("s" if len(new) != 1 else "")
    lines = [
        f"agentcoord: {count} your worktree {_tree(mine, my_branch)} changes "
        f"{'are' if len(new) != 1 else 'is'} also changed in {_tree(other, other_branch)} "
        f"by {who}, since {human_time(since)} ({ago}s ago): {', '.join(new)}",
        f"  {verdict_text(pair.conflicts)}",
    ]
    rest = [f for f in pair.files if f not in new]
    if rest:
        lines.append(f"  (also shared, told before: {', '.join(rest)})")
    lines.append(
        f"Agree with {who} who changes what before you both go on (send_message); "
        "check_conflicts shows the current overlaps."
    )
    return "\n".join(lines)


def worse_text(
    *,
    mine: str,
    my_branch: str | None,
    other: str,
    other_branch: str | None,
    others: Iterable[str],
    new: list[str],
    pair: Pair,
    now: float,
) -> str:
    """The inbox notice for a session in worktree ``mine`` told of the overlap with ``other``
    before, when git merge-tree's verdict got worse: the files now said to conflict (takes
    :func:`notice_text`'s arguments; ``new`` is empty here)."""
    who = ", ".join(sorted(others)) or "no live session"
    conflicts = pair.conflicts or ()
    return "\n".join(
        [
            f"agentcoord: git merge-tree now says your worktree {_tree(mine, my_branch)} and "
            f"{_tree(other, other_branch)} (worked in by {who}) WILL conflict in "
            f"{', '.join(conflicts)}",
            f"  both change, told before: {', '.join(pair.files)}; shared since "
            f"{human_time(pair.began)} ({max(0, round(now - pair.began))}s ago)",
            f"Agree with {who} how to resolve it before you both go on (send_message); "
            "check_conflicts shows the current overlaps.",
        ]
    )
