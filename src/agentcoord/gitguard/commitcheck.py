"""The daemon side of the git pre-commit guard (docs/claims.md "Commit guard"): the vendor
method ``agentcoord/commit-check {cwd, paths}``, a thin adapter over the leases service.

Edits made through a shell (``sed -i``, a formatter, a script) pass no Claude Code hook, so the
pre-commit hook that ``agentcoord setup git`` installs
(:mod:`agentcoord.gitguard.commitguard`) asks the daemon whether the commit touches a file another
agent holds a ``write`` claim on. The
committer is the caller the transport resolved (a ``git commit`` run by a session's Bash tool
descends from that session's ``claude``); its own claims never block it. What blocks and what
is said is decided by :meth:`agentcoord.leases.leasing.Leases.check_commit`; here the request's
parameters are checked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentcoord.errors import ProtocolError
from agentcoord.kernel.jsonrpc import INVALID_PARAMS

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller
    from agentcoord.leases.leasing import Leases

__all__ = ["COMMIT_CHECK", "check_commit", "commit_params", "is_push"]

COMMIT_CHECK = "agentcoord/commit-check"
MAX_PATHS = 100_000  # a bound on one request's work; the frame limit bounds its bytes first


def commit_params(params: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``(cwd, paths)`` of a commit-check request: an absolute cwd (the worktree's top level)
    and the staged paths relative to it, none leaving it."""
    cwd = params.get("cwd")
    paths = params.get("paths")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise ProtocolError(INVALID_PARAMS, "commit-check needs `cwd`, an absolute path")
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise ProtocolError(INVALID_PARAMS, "commit-check needs `paths`, a list of paths")
    if len(paths) > MAX_PATHS:
        raise ProtocolError(INVALID_PARAMS, f"commit-check takes at most {MAX_PATHS} paths")
    for p in paths:
        norm = os.path.normpath(p)
        if os.path.isabs(p) or norm == ".." or norm.startswith("../") or "\0" in p:
            raise ProtocolError(INVALID_PARAMS, f"{p!r} is not a path inside the worktree")
    return cwd, paths


def is_push(params: Mapping[str, Any]) -> bool:
    """Whether the request comes from the pre-push guard (``"push": true``: the paths are
    those the pushed commits change, docs/claims.md "Push guard")."""
    push = params.get("push", False)
    if not isinstance(push, bool):
        raise ProtocolError(INVALID_PARAMS, "commit-check: `push` is true or false")
    return push


async def check_commit(
    leases: Leases, caller: Caller, cwd: str, paths: list[str], push: bool = False
) -> dict[str, Any]:
    """Which of ``paths`` (relative to the worktree ``cwd``) another agent holds a write claim
    on: ``{"ok", "checked", "agent", "blocked": [...], "message"}``; ``push`` words the
    refusal for a push."""
    if caller.kind == "anonymous" and caller.cwd and not _same_dir(cwd, caller.cwd):
        # Git runs the hook in the worktree's top level: an unattributed caller learns about
        # its own commit only (docs/security.md "The commit check").
        raise ProtocolError(INVALID_PARAMS, "commit-check: `cwd` is not your working directory")
    return await leases.check_commit(caller, cwd, paths, push=push)


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False
