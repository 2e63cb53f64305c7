"""The daemon side of the git pre-commit guard (docs/claims.md "Commit guard").

Edits made through a shell (``sed -i``, a formatter, a script) pass no Claude Code hook, so the
pre-commit hook that ``agentcoord setup git`` installs (:mod:`agentcoord.commitguard`) asks the
daemon, with the vendor method ``agentcoord/commit-check {cwd, paths}``, whether the commit
touches a file another agent holds a ``write`` claim on. The committer is the caller the
transport resolved (a ``git commit`` run by a session's Bash tool descends from that session's
``claude``); its own claims never block it. A commit nobody can be attributed to (the human's
terminal is ``anonymous`` until it presents the human token, which the hook does not) is
blocked by every write claim.

Staged paths are compared by canonical key (:func:`agentcoord.filekeys.resolve_file_keys`: the
repository's git common dir and the path from the worktree's top level), so a claim taken in
one worktree blocks a commit of the same file from another. Claims still stored under an
absolute path (taken before keys were canonical) are resolved the same way and match too.
Resolving asks git once per directory, and a commit may span hundreds: with no write claim
live nothing is resolved, and otherwise only the paths that can match a claim
(:func:`_candidates`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcoord.commitguard import ALLOW_ENV
from agentcoord.errors import ProtocolError
from agentcoord.filekeys import FILE_PREFIX, SEPARATOR, resolve_file_keys, split_file_key
from agentcoord.kernel.jsonrpc import INVALID_PARAMS
from agentcoord.stores.kv import format_duration

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller
    from agentcoord.stores.kv import ClaimStore, FocusStore, Holder

__all__ = [
    "COMMIT_CHECK",
    "Blocker",
    "blockers",
    "check_commit",
    "commit_params",
    "refusal_text",
]

COMMIT_CHECK = "agentcoord/commit-check"
MAX_PATHS = 100_000  # a bound on one request's work; the frame limit bounds its bytes first


@dataclass(frozen=True)
class Blocker:
    """A staged path and the live write claim of someone else that covers it."""

    path: str
    key: str
    holder: Holder
    intent: str  # the claim's purpose and the holder's focus intent, those that are set

    def as_dict(self) -> dict[str, Any]:
        h = self.holder
        row: dict[str, Any] = {
            "path": self.path,
            "resource_key": self.key,
            "agent": h.agent,
            "mode": h.mode,
            "acquired_at": _iso(h.acquired),
            "expires_at": _iso(h.expires),
            "token": h.token,
        }
        if h.purpose:
            row["purpose"] = h.purpose
        if self.intent:
            row["intent"] = self.intent
        return row


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


def _legacy_file_key(key: str) -> str | None:
    """The absolute path a non-canonical file claim names (``file:/abs`` or ``/abs``, no
    repository part), else None. Relative keys name a path of their claimer's directory,
    unknown here, so they are not matched."""
    body = key[len(FILE_PREFIX) :] if key.startswith(FILE_PREFIX) else key
    if not body.startswith("/") or SEPARATOR in body:
        return None
    return body


def blockers(
    live: Iterable[tuple[str, Holder]],
    wanted: Mapping[str, str],
    committer: Caller,
    intent_of: Callable[[str], str],
    aliases: Mapping[str, str] | None = None,
) -> list[Blocker]:
    """The write claims among ``live`` (key, holder) that cover a key of ``wanted`` (canonical
    key -> staged path) and are not the committer's own. ``aliases`` maps a stored legacy key
    to its canonical one; ``intent_of`` gives an agent's focus intent, shown with the claim's
    purpose."""
    aliases = aliases or {}
    own = committer.agent if committer.kind != "anonymous" else None
    out: list[Blocker] = []
    for key, holder in live:
        if holder.mode != "write" or holder.agent == own:
            continue
        path = wanted.get(key) or wanted.get(aliases.get(key, ""))
        if path is None:
            continue
        # Both when both say something: an automatic edit lease's purpose says how the file
        # was claimed, the focus what the holder is doing (docs/claims.md "Claiming files").
        said = (holder.purpose, intent_of(holder.agent))
        intent = "; ".join(dict.fromkeys(s for s in said if s))
        out.append(Blocker(path, key, holder, intent))
    out.sort(key=lambda b: (b.path, b.holder.agent))
    return out


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def refusal_text(found: list[Blocker], committer: Caller, now: float) -> str:
    """What the hook prints when it refuses the commit: each file, its holder, their intent
    and since when, then how to go on (the override, and what ``--no-verify`` also skips)."""
    n = len(found)
    files = "1 staged file is" if n == 1 else f"{n} staged files are"
    lines = [f"agentcoord: commit refused: {files} claimed for writing by another agent:"]
    for b in found:
        h = b.holder
        why = f" ({b.intent})" if b.intent else ""
        lines.append(
            f"  {b.path}: {h.agent}{why}, since {_clock(h.acquired)} "
            f"({format_duration(max(0.0, now - h.acquired))} ago), until {_clock(h.expires)}"
        )
    if committer.kind == "anonymous":
        lines.append(
            "This commit comes from no agent (your terminal, or a process agentcoord cannot "
            "attribute), so any agent's write claim blocks it."
        )
    else:
        lines.append(f"You are {committer.agent}; your own claims never block your commits.")
    lines.append(
        "Ask the holder, or wait for the claim to be released (agentcoord claims), or "
        "commit anyway:"
    )
    lines.append(f"  {ALLOW_ENV}=1 git commit ...")
    lines.append("(git commit --no-verify also skips it, and every other pre-commit hook)")
    return "\n".join(lines)


async def check_commit(
    claims: ClaimStore, focus: FocusStore, caller: Caller, cwd: str, paths: list[str]
) -> dict[str, Any]:
    """Which of ``paths`` (relative to the worktree ``cwd``) another agent holds a write claim
    on: ``{"ok", "checked", "agent", "blocked": [...], "message"}``."""
    if caller.kind == "anonymous" and caller.cwd and not _same_dir(cwd, caller.cwd):
        # Git runs the hook in the worktree's top level: an unattributed caller learns about
        # its own commit only (docs/security.md "The commit check").
        raise ProtocolError(INVALID_PARAMS, "commit-check: `cwd` is not your working directory")
    live = [(key, h) for key, h in claims.check("") if h.mode == "write"]
    # Stored keys naming an absolute path (non-canonical, claimed before keys were) -> it.
    legacy = {key: path for key, _ in live if (path := _legacy_file_key(key)) is not None}

    def resolve() -> tuple[dict[str, str], dict[str, str]]:
        # filekeys runs git (once per directory, cached): off the event loop.
        resolved = resolve_file_keys(list(legacy.values()), None)
        aliases = {key: fk.key for key, fk in zip(legacy, resolved, strict=True)}
        claimed = {aliases.get(key, key) for key, _ in live}
        wanted: dict[str, str] = {}
        asked = _candidates(paths, cwd, claimed)
        for path, fk in zip(asked, resolve_file_keys(asked, cwd), strict=True):
            wanted.setdefault(fk.key, path)
        return wanted, aliases

    # No write claim at all (the usual case): nothing to resolve, no git to run.
    wanted, aliases = await asyncio.to_thread(resolve) if paths and live else ({}, {})

    def intent_of(agent: str) -> str:
        f = focus.get(agent)
        return f.intent if f is not None else ""

    found = blockers(live, wanted, caller, intent_of, aliases)
    return {
        "ok": not found,
        "checked": len(paths),
        "agent": caller.agent,
        "blocked": [b.as_dict() for b in found],
        "message": refusal_text(found, caller, time.time()) if found else "",
    }


def _candidates(paths: list[str], cwd: str, claimed: set[str]) -> list[str]:
    """The staged paths whose canonical key may be one of ``claimed``. filekeys asks git once
    per directory, and a commit may span hundreds; but a key ends in the file's real path
    (filekeys.py), whose last name is the path's own unless the path is itself a symlink. So a
    path that is no symlink and whose name no claimed key ends in cannot match: only the
    others are resolved."""
    names = {split_file_key(key)[1].rpartition("/")[2] for key in claimed}
    return [
        p for p in paths if p.rpartition("/")[2] in names or os.path.islink(os.path.join(cwd, p))
    ]


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False
