"""``check_conflicts``: the files your worktree and other worktrees of its repository both
change, and whether git says their commits will conflict (docs/claims.md "Conflicts between
worktrees"); a thin adapter over the daemon's conflict watch
(:class:`agentcoord.leases.conflictwatch.ConflictWatch`).

A repository the watch follows (a live session works in it) is answered from what it holds,
with the sessions of each side; another is asked of git now (``tracked: false``).
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.leases.conflictnotes import verdict_text
from agentcoord.leases.conflicts import Overlap, overlaps
from agentcoord.leases.conflicttrees import locate
from agentcoord.leases.conflictwatch import overlap_row
from agentcoord.tools._shape import for_model, short_time
from agentcoord.tools.base import obj_schema, tool, unlisted

if TYPE_CHECKING:
    from agentcoord.leases.conflictwatch import ConflictWatch

__all__ = ["ConflictTools"]


def _side(row: dict[str, Any]) -> str:
    branch = f"branch {row['branch']}" if row.get("branch") else "detached"
    who = f", {', '.join(row['sessions'])}" if row.get("sessions") else ""
    return f"{row['worktree']} ({branch}{who})"


def _render(r: dict[str, Any]) -> str:
    if not r["overlaps"]:
        return "no two worktrees change the same files"
    return "\n".join(
        f"{_side(o['a'])} and {_side(o['b'])} both change: {', '.join(o['files'])}\n"
        f"  {verdict_text(None if o['conflicts'] is None else tuple(o['conflicts']))}"
        for o in r["overlaps"]
    )


def _computed(o: Overlap) -> dict[str, Any]:
    """An overlap computed now, in the watch's row shape (no sessions, no since)."""
    return {
        "a": {"worktree": o.a.top, "branch": o.a.branch, "sessions": []},
        "b": {"worktree": o.b.top, "branch": o.b.branch, "sessions": []},
        "files": list(o.files),
        "since": None,
        "conflicts": None if o.conflicts is None else list(o.conflicts),
    }


class ConflictTools:
    """``check_conflicts`` over the conflict watch."""

    def __init__(self, watch: ConflictWatch) -> None:
        self._watch = watch

    @tool(
        description="Files other worktrees change too; git's verdict.",
        schema=obj_schema(
            repo=unlisted({"type": "string", "maxLength": 4096}),
            every=unlisted({"type": "boolean"}),
        ),
        render=_render,
        read_only=True,
    )
    async def check_conflicts(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        """The overlaps of the caller's repository (``repo``, a directory in another one: the
        CLI's ``agentcoord conflicts REPO``); ``every``, for the human: every repository the
        watch follows, each row with its ``repo`` (``agentcoord top``, as the console shows
        them: docs/top.md)."""
        if args.get("every") and caller.kind == "human":
            every = [{**overlap_row(o), "repo": o.repo} for o in self._watch.overlaps()]
            return {"repo": None, "tracked": True, "overlaps": every}
        where = args.get("repo") or caller.cwd
        if not where or not os.path.isabs(where):
            raise InvalidArguments("check_conflicts needs `repo` as an absolute path here")
        repo = self._watch.repo_of(where)
        tracked = repo is not None
        if repo is not None:
            rows = [overlap_row(o) for o in self._watch.overlaps(repo)]
        else:
            tree = await asyncio.to_thread(locate, where)
            if tree is None:
                raise InvalidArguments(f"{where} is not in a git repository")
            repo = tree.repo
            rows = [_computed(o) for o in await asyncio.to_thread(overlaps, where)]
        if for_model(caller):
            for row in rows:
                row["since"] = short_time(row["since"])
        return {"repo": repo, "tracked": tracked, "overlaps": rows}
