"""A claim key as people read it: ``repo:path`` (docs/architecture.md "Times and keys shown to
people").

A file claim's key is stored as ``file:<git common dir>//<path>``
(:mod:`agentcoord.leases.filekeys`), which is exact but long:
``file:/home/me/app/.git//src/app.py``. People see ``app:src/app.py``: the repository's name (the
directory of its main worktree) and the path in it, and, where known, the holder's worktree (when
it is not the main one) and branch: ``app:src/app.py (worktree app-fix, branch fix)``. A file
outside git is its absolute path; any other key is shown as it is.
Scripts keep the real key (``--json``, ``structuredContent``). Pure
(docs/architecture.md "Pure rules, thin I/O").
"""

from __future__ import annotations

import os

from agentcoord.leases.filekeys import split_file_key

__all__ = ["display_key", "repo_name", "where_text"]


def repo_name(common: str) -> str:
    """A repository's short name from its git common dir: ``/x/app/.git`` is ``app``,
    ``/srv/app.git`` (bare) is ``app``."""
    if os.path.basename(common) == ".git":
        common = os.path.dirname(common)
    name = os.path.basename(common)
    return name[:-4] if name.endswith(".git") and len(name) > 4 else name


def where_text(common: str | None, worktree: str | None, branch: str | None) -> str:
    """``worktree W, branch B``: the holder's worktree (its directory name, said only when it
    is not the repository's main worktree) and branch; empty when neither helps."""
    parts = []
    main = os.path.dirname(common) if common and os.path.basename(common) == ".git" else None
    if worktree and worktree != main:
        parts.append(f"worktree {os.path.basename(worktree.rstrip('/')) or worktree}")
    if branch:
        parts.append(f"branch {branch}")
    return ", ".join(parts)


def display_key(key: str, worktree: str | None = None, branch: str | None = None) -> str:
    """``key`` as people read it: ``repo:path`` for a file in git (with the worktree and
    branch where they help), the absolute path for a file outside git, any other key as is."""
    common, path = split_file_key(key)
    if common is None:
        return path
    shown = f"{repo_name(common)}:{path}"
    where = where_text(common, worktree, branch)
    return f"{shown} ({where})" if where else shown
