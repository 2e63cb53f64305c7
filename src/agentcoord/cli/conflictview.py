"""``agentcoord conflicts [REPO]``: the files two worktrees of a repository both change, and
whether git says their commits will conflict (docs/claims.md "Conflicts between worktrees").

Asks git directly (:mod:`agentcoord.leases.conflicts`), so it needs no daemon.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from agentcoord.leases.conflicts import Overlap, Worktree, overlaps

__all__ = ["render", "show_conflicts"]


def _tree(t: Worktree) -> str:
    return f"{t.top} ({'branch ' + t.branch if t.branch else 'detached'})"


def _verdict(o: Overlap) -> str:
    if o.conflicts is None:
        return "not all committed yet: git cannot tell whether they will conflict"
    if not o.conflicts:
        return "their commits merge cleanly (git merge-tree)"
    return f"their commits will conflict in {', '.join(o.conflicts)} (git merge-tree)"


def render(found: list[Overlap]) -> str:
    """The overlaps as people read them, one block per pair of worktrees."""
    if not found:
        return "no two worktrees change the same files"
    blocks = [
        f"{_tree(o.a)} and {_tree(o.b)} both change: {', '.join(o.files)}\n  {_verdict(o)}"
        for o in found
    ]
    return "\n".join(blocks)


def show_conflicts(repo: str | None, as_json: bool) -> int:
    """Print the overlaps of ``repo``'s worktrees (default: the current directory's)."""
    found = overlaps(os.path.abspath(repo or os.getcwd()))
    if as_json:
        print(json.dumps({"overlaps": [asdict(o) for o in found]}, indent=2))
    else:
        print(render(found))
    return 0
