"""``agentcoord conflicts [REPO]``: the files two worktrees of a repository both change, and
whether git says their commits will conflict (docs/claims.md "Conflicts between worktrees").

With a daemon running it shows what the daemon holds (the ``check_conflicts`` tool, as the
human: the live sessions of each side, since when); with none, it asks git directly
(:mod:`agentcoord.leases.conflicts`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

from agentcoord.errors import AgentCoordError, ToolError
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.conflicts import Overlap, Worktree, overlaps

__all__ = ["render", "render_rows", "show_conflicts"]


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


def _side(row: dict[str, Any]) -> str:
    branch = f"branch {row['branch']}" if row.get("branch") else "detached"
    who = f"; {', '.join(row['sessions'])}" if row.get("sessions") else ""
    return f"{row['worktree']} ({branch}{who})"


def render_rows(rows: list[dict[str, Any]]) -> str:
    """The daemon's overlaps (``check_conflicts`` rows) as people read them."""
    if not rows:
        return "no two worktrees change the same files"
    blocks = []
    for o in rows:
        since = f" (since {human_time(o['since'])})" if o.get("since") else ""
        verdict = _verdict(
            Overlap(Worktree("", None, ""), Worktree("", None, ""), (), _conflicts(o))
        )
        blocks.append(
            f"{_side(o['a'])} and {_side(o['b'])} both change: {', '.join(o['files'])}{since}"
            f"\n  {verdict}"
        )
    return "\n".join(blocks)


def _conflicts(row: dict[str, Any]) -> tuple[str, ...] | None:
    found = row.get("conflicts")
    return None if found is None else tuple(found)


def _from_daemon(where: str) -> dict[str, Any] | None:
    """The daemon's answer for ``where``, or None when no daemon answers."""
    from agentcoord.cli.views import call_tool
    from agentcoord.kernel.config import load_config

    try:
        result, _ = call_tool(load_config({}), "check_conflicts", {"repo": where})
    except ToolError:
        raise
    except AgentCoordError:
        return None  # no daemon, or not reachable: git alone answers
    return result if isinstance(result, dict) else None


def show_conflicts(repo: str | None, as_json: bool) -> int:
    """Print the overlaps of ``repo``'s worktrees (default: the current directory's): the
    daemon's when it runs, else computed here."""
    where = os.path.abspath(repo or os.getcwd())
    held = _from_daemon(where)
    if held is not None:
        if as_json:
            print(json.dumps(held, indent=2))
        else:
            print(render_rows(held["overlaps"]))
        return 0
    found = overlaps(where)
    if as_json:
        print(json.dumps({"tracked": False, "overlaps": [asdict(o) for o in found]}, indent=2))
    else:
        print(render(found))
    return 0
