"""The commit check's decision: which staged files another agent holds a write claim on
(docs/claims.md "Commit guard").

Staged paths are compared by canonical key
(:meth:`agentcoord.leases.filekeys.FileKeys.file_keys`: the repository's git common dir and the
path from the worktree's top level), so a claim taken in one worktree blocks a commit of the
same file from another. Claims still stored under an absolute path (taken before keys were
canonical) are resolved the same way and match too (:func:`legacy_file_key`). A committer nobody
can be attributed to is blocked by every write claim. Pure: values in, values out; the service
resolves the keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcoord.leases.filekeys import FILE_PREFIX, SEPARATOR, split_file_key
from agentcoord.leases.rows import iso_time

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller
    from agentcoord.stores.kv import Holder

__all__ = ["Blocker", "blockers", "candidates", "legacy_file_key", "why_held"]


@dataclass(frozen=True)
class Blocker:
    """A staged path and the live write claim of someone else that covers it."""

    path: str
    key: str
    holder: Holder
    intent: str  # the claim's purpose and the holder's focus intent, those that are set
    within: str = ""  # the folder or glob the claim names, when it is not the file itself

    def as_dict(self) -> dict[str, Any]:
        """The blocker as the commit check's result lists it."""
        h = self.holder
        row: dict[str, Any] = {
            "path": self.path,
            "resource_key": self.key,
            "agent": h.agent,
            "mode": h.mode,
            "acquired_at": iso_time(h.acquired),
            "expires_at": iso_time(h.expires),
            "token": h.token,
        }
        if h.purpose:
            row["purpose"] = h.purpose
        if self.intent:
            row["intent"] = self.intent
        if self.within:
            row["within"] = self.within
        return row


def legacy_file_key(key: str) -> str | None:
    """The absolute path a non-canonical file claim names (``file:/abs`` or ``/abs``, no
    repository part), else None. Relative keys name a path of their claimer's directory,
    unknown here, so they are not matched."""
    body = key[len(FILE_PREFIX) :] if key.startswith(FILE_PREFIX) else key
    if not body.startswith("/") or SEPARATOR in body:
        return None
    return body


def why_held(purpose: str, intent: str) -> str:
    """The claim's purpose and the holder's focus intent, those that are set, once each: an
    automatic edit lease's purpose says how the file was claimed, the focus what the holder is
    doing (docs/claims.md "Claiming files")."""
    return "; ".join(dict.fromkeys(s for s in (purpose, intent) if s))


def blockers(
    live: Iterable[tuple[str, Holder]],
    wanted: Mapping[str, str],
    committer: Caller,
    intent_of: Callable[[str], str],
    aliases: Mapping[str, str] | None = None,
    covered: Mapping[str, Iterable[str]] | None = None,
) -> list[Blocker]:
    """The write claims among ``live`` (key, holder) that cover a key of ``wanted`` (canonical
    key -> staged path) and are not the committer's own. ``aliases`` maps a stored legacy key
    to its canonical one; ``covered`` maps a folder or glob claim's key to the staged paths it
    covers (:mod:`agentcoord.leases.matcher`); ``intent_of`` gives an agent's focus intent,
    shown with the claim's purpose."""
    aliases = aliases or {}
    covered = covered or {}
    own = committer.agent if committer.kind != "anonymous" else None
    out: list[Blocker] = []
    for key, holder in live:
        if holder.mode != "write" or holder.agent == own:
            continue
        why = why_held(holder.purpose, intent_of(holder.agent))
        path = wanted.get(key) or wanted.get(aliases.get(key, ""))
        if path is not None:
            out.append(Blocker(path, key, holder, why))
        within = split_file_key(key)[1]
        for p in covered.get(key, ()):
            if p != path:
                out.append(Blocker(p, key, holder, why, within))
    out.sort(key=lambda b: (b.path, b.holder.agent))
    return out


def candidates(paths: list[str], cwd: str, claimed: set[str]) -> list[str]:
    """The staged paths whose canonical key may be one of ``claimed``. Resolving asks git once
    per directory, and a commit may span hundreds; but a key ends in the file's real path
    (docs/claims.md "Claiming files"), whose last name is the path's own unless the path is
    itself a symlink. So a path that is no symlink and whose name no claimed key ends in cannot
    match: only the others are resolved."""
    names = {split_file_key(key)[1].rpartition("/")[2] for key in claimed}
    return [
        p for p in paths if p.rpartition("/")[2] in names or os.path.islink(os.path.join(cwd, p))
    ]
