"""Where the console's "conflicts between worktrees" come from (docs/console.md "Claims and
conflicts").

In the daemon, from its conflict watch (:class:`TrackedConflicts`: the overlaps between live
worktrees it already keeps, with each side's sessions and since when; docs/claims.md
"Conflicts between worktrees"), so the page runs no git. Without a watch (a console over
stores alone), :class:`WorktreeConflicts` asks git, through
:func:`agentcoord.leases.conflicts.overlaps`, about each repository a file claim or a live
session names; that runs off the event loop, and its answer is kept for :data:`CACHE_S`
seconds: the page refreshes every few seconds, git need not.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from agentcoord.kernel.timetext import human_time
from agentcoord.leases.conflicts import Overlap, overlaps, worktrees
from agentcoord.leases.conflictwatch import ConflictWatch, TrackedOverlap, TreeSide
from agentcoord.leases.keytext import repo_name

__all__ = ["CACHE_S", "ConflictSource", "TrackedConflicts", "WorktreeConflicts", "overlap_row"]

CACHE_S = 15.0


class ConflictSource(Protocol):
    """What the console's conflicts section reads: rows for the repositories of
    ``directories`` (a source that tracks them itself may ignore the hint)."""

    async def rows(self, directories: Iterable[str]) -> list[dict[str, Any]]: ...


def overlap_row(overlap: Overlap | TrackedOverlap, common: str) -> dict[str, Any]:
    """One overlap as the page shows it: the repository's name, both worktrees (directory name,
    branch and, when tracked, the sessions there), the files both change, since when (when
    tracked), and what git says of them."""

    def side(tree: Any) -> dict[str, Any]:
        row = {
            "worktree": os.path.basename(tree.top.rstrip("/")) or tree.top,
            "branch": tree.branch or "(detached)",
        }
        if isinstance(tree, TreeSide):
            row["sessions"] = ", ".join(tree.sessions)
        return row

    if overlap.conflicts is None:
        verdict = "not committed yet: git cannot tell whether they conflict"
    elif overlap.conflicts:
        verdict = "conflict in " + ", ".join(overlap.conflicts)
    else:
        verdict = "merge cleanly"
    return {
        "repo": repo_name(common),
        "a": side(overlap.a),
        "b": side(overlap.b),
        "files": [f"{repo_name(common)}:{f}" for f in overlap.files],
        "conflicts": list(overlap.conflicts) if overlap.conflicts is not None else None,
        "verdict": verdict,
        **({"since": human_time(overlap.since)} if isinstance(overlap, TrackedOverlap) else {}),
    }


class TrackedConflicts:
    """The daemon's conflict watch as the console's source: no git on the page's path."""

    def __init__(self, watch: ConflictWatch) -> None:
        self._watch = watch

    async def rows(self, directories: Iterable[str]) -> list[dict[str, Any]]:
        return [overlap_row(o, o.repo) for o in self._watch.overlaps()]


def _scan(directories: Iterable[str]) -> list[dict[str, Any]]:
    seen: set[tuple[str, ...]] = set()
    rows: list[dict[str, Any]] = []
    for directory in sorted(set(directories)):
        if not os.path.isdir(directory):
            continue
        trees = worktrees(directory)
        tops = tuple(sorted(t.top for t in trees))
        if len(tops) < 2 or tops in seen:
            continue  # one worktree overlaps nothing; a repository is asked once
        seen.add(tops)
        common = _common_dir(trees[0].top)
        rows += [overlap_row(o, common) for o in overlaps(directory)]
    return rows


def _common_dir(top: str) -> str:
    """The main worktree's ``.git`` for a linked worktree's top, else ``top/.git``."""
    dotgit = os.path.join(top, ".git")
    if os.path.isfile(dotgit):  # a linked worktree: "gitdir: <common>/worktrees/<name>"
        try:
            with open(dotgit) as fh:
                gitdir = fh.read().strip().removeprefix("gitdir: ")
            return os.path.dirname(os.path.dirname(gitdir))
        except OSError:
            pass
    return dotgit


class WorktreeConflicts:
    """The overlaps of the repositories ``directories`` are in, cached for :data:`CACHE_S`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cached: tuple[float, frozenset[str], list[dict[str, Any]]] | None = None

    async def rows(self, directories: Iterable[str]) -> list[dict[str, Any]]:
        wanted = frozenset(directories)
        now = self._clock()
        if self._cached and self._cached[1] == wanted and now - self._cached[0] < CACHE_S:
            return self._cached[2]
        rows = await asyncio.to_thread(_scan, wanted)
        self._cached = (now, wanted, rows)
        return rows
