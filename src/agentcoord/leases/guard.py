"""The write guard's decision: may this writer change this file now (docs/claims.md
"Claiming files").

Another agent's live ``write`` claim on the file's canonical key, or on a folder or glob that
covers it (docs/claims.md "Folders and globs"), denies the write; otherwise a session or runner
writing a file whose key the store can hold takes or renews its automatic edit lease, unless a
write claim of its own on a folder or glob already holds the file. Pure: the file's live
holders and the writer in, the decision out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentcoord.leases.editleases import EditLeases

if TYPE_CHECKING:
    from agentcoord.stores.kv import Holder

__all__ = ["Deny", "Lease", "WriteDecision", "decide_write", "write_blocker"]


@dataclass(frozen=True)
class Deny:
    """The write is refused: ``holder`` (another agent) holds a write claim on the file, or on
    the folder or glob ``key`` that covers it."""

    holder: Holder
    key: str | None = None


@dataclass(frozen=True)
class Lease:
    """The write goes ahead under the writer's edit lease; ``mine`` is the writer's own live
    claim on the file, if any."""

    mine: Holder | None


WriteDecision = Deny | Lease | None  # None: allowed, and nothing to lease


def write_blocker(holders: Sequence[Holder], writer: str | None) -> Holder | None:
    """The first live write claim among ``holders`` that is not ``writer``'s (None for a
    writer nobody can be attributed to: every write claim blocks it)."""
    for holder in holders:
        if holder.mode == "write" and holder.agent != writer:
            return holder
    return None


def decide_write(
    holders: Sequence[Holder],
    writer: str,
    writer_kind: str,
    leasable: bool,
    edit_leases: EditLeases,
    covering: Iterable[tuple[str, Holder]] = (),
) -> WriteDecision:
    """The guard's answer for ``writer`` (of kind ``writer_kind``) about to change a file whose
    live holders are ``holders`` and whose folder and glob claims are ``covering`` (key,
    holder); ``leasable`` says whether its key fits in the store (a key over the limit cannot
    be claimed: such a file is guarded but not leased)."""
    blocker = write_blocker(holders, writer)
    if blocker is not None:
        return Deny(blocker)
    covering = list(covering)
    for key, holder in covering:
        if holder.mode == "write" and holder.agent != writer:
            return Deny(holder, key)
    if leasable and edit_leases.enabled and writer_kind in ("session", "runner"):
        mine = next((h for h in holders if h.agent == writer), None)
        if mine is None and any(h.agent == writer and h.mode == "write" for _, h in covering):
            return None  # the writer's own folder or glob claim holds the file already
        return Lease(mine)
    return None
