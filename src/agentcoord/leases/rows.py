"""A claim as data: the row the claim tools and the commit check return, and its key as people
read it (docs/claims.md "Tools").

Machine rows keep ISO 8601 UTC times (:func:`iso_time`); text for people goes through
:mod:`agentcoord.leases.refusal`.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from agentcoord.leases.filekeys import FILE_PREFIX, split_file_key
from agentcoord.leases.keytext import repo_name
from agentcoord.stores.kv import format_duration

if TYPE_CHECKING:
    from agentcoord.leases.sites import Site
    from agentcoord.stores.kv import Holder

__all__ = ["claim_row", "iso_time", "shown_key"]


def iso_time(ts: float) -> str:
    """``datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")``, without building
    a datetime (two per claim result): microseconds rounded as datetime rounds them, then
    truncated to milliseconds as isoformat truncates them."""
    secs = math.floor(ts)
    micros = round((ts - secs) * 1e6)
    if micros >= 1_000_000:
        secs, micros = secs + 1, micros - 1_000_000
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(secs))}.{micros // 1000:03d}+00:00"


def shown_key(row: dict[str, Any]) -> str:
    """A claim row's key as people read it: a file's repository-relative path, the repository
    and the holder's worktree and branch; any other key as it is."""
    if "path" not in row:
        return str(row["resource_key"])
    where = [f"repo {repo_name(row['repository'])}"] if row.get("repository") else []
    if row.get("worktree"):
        where.append(f"worktree {row['worktree']}")
    if row.get("branch"):
        where.append(f"branch {row['branch']}")
    return f"{row['path']} ({', '.join(where)})" if where else str(row["path"])


def claim_row(key: str, h: Holder, site: Site | None = None) -> dict[str, Any]:
    """One claim as the tools show it (resource_key, agent, mode, ttl, expires_at, then the
    token, purpose and acquired_at; a file claim adds its repository, repository-relative
    path, and the holder's worktree and branch)."""
    row: dict[str, Any] = {
        "resource_key": key,
        "agent": h.agent,
        "mode": h.mode,
        "ttl": format_duration(h.ttl),
        "expires_at": iso_time(h.expires),
        "acquired_at": iso_time(h.acquired),
        "token": h.token,
    }
    if h.purpose:
        row["purpose"] = h.purpose
    if key.startswith(FILE_PREFIX):
        repo, path = split_file_key(key)
        row["path"] = path
        if repo is not None:
            row["repository"] = repo
        if site is not None:
            row["worktree"] = site.worktree
            row["branch"] = site.branch
    return row
