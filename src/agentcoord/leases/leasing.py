"""The leases service: who may write a file, and what the claim, the write guard and the commit
check do about it (docs/claims.md "The leases service").

:class:`Leases` sits above the claim store (:class:`~agentcoord.stores.kv.ClaimStore` keeps
the compare-and-set and the KV view) and the focus store, and owns the rest: file keys, holders,
the holders' sites, the write-guard decision, automatic edit leases and the commit check. The
``claim`` tools, the PreToolUse/SessionEnd hook handlers and the pre-commit check are thin
adapters over it. Built once by the composition root.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from agentcoord.errors import DomainError
from agentcoord.leases.commit import blockers, candidates, legacy_file_key
from agentcoord.leases.editleases import AUTO_LEASE_PURPOSE, EditLeases, lease_step
from agentcoord.leases.filekeys import FileKey, resolve_file_key, resolve_file_keys
from agentcoord.leases.guard import Deny, decide_write
from agentcoord.leases.holders import canonical_key, holder_process, holder_site
from agentcoord.leases.refusal import commit_refusal, deny_text
from agentcoord.leases.sites import ClaimSites, Site
from agentcoord.stores.kv import Contention, Granted
from agentcoord.stores.kv.keys import MAX_KEY_CHARS

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller
    from agentcoord.stores.kv import ClaimStore, FocusStore, Holder, Mode

__all__ = ["Leases"]

log = logging.getLogger(__name__)


class Leases:
    """Claims on files and other keys, over the claim store ``claims`` and the focus store
    ``focus`` (whose intents the refusals quote)."""

    def __init__(
        self, claims: ClaimStore, focus: FocusStore, edit_leases: EditLeases | None = None
    ) -> None:
        self.claims = claims
        self.focus = focus
        self.edit_leases = edit_leases or EditLeases()
        self.sites = ClaimSites(claims)  # each live file claim's holder site, in this daemon

    def site(self, key: str, token: int | None) -> Site | None:
        """The worktree and branch the grant ``token`` on ``key`` was taken from, if known."""
        return self.sites.get(key, token)

    def intent_of(self, agent: str) -> str:
        """``agent``'s focus intent, or empty."""
        focus = self.focus.get(agent)
        return focus.intent if focus is not None and focus.intent else ""

    # ---- claims ----------------------------------------------------------------------------

    async def claim(
        self, caller: Caller, agent: str, key: str, mode: Mode, ttl: float, purpose: str = ""
    ) -> tuple[str, FileKey | None, Granted | Contention]:
        """Claim ``key`` for ``agent`` on behalf of ``caller``: a file key is resolved against
        the claimer's cwd, not whoever later writes (docs/claims.md "Claiming files"); the
        grant is bound to the caller's process and its site noted. The stored key, the file's
        identity (None for other keys) and the store's answer."""
        stored, fk = canonical_key(key, caller.cwd)
        out = await self.claims.claim(
            agent, stored, mode, ttl, purpose=purpose, proc=holder_process(caller)
        )
        if fk is not None and isinstance(out, Granted):
            self.sites.note(stored, out.holder.token, holder_site(fk, caller.cwd))
        return stored, fk, out

    # ---- the write guard -------------------------------------------------------------------

    async def guard_write(self, writer: Caller, path: str, cwd: str | None) -> str | None:
        """The write guard for ``writer`` about to change ``path`` (resolved against ``cwd``):
        the deny reason when another agent holds a write claim on the file, else None, after
        taking or renewing the writer's automatic edit lease (docs/claims.md "Claiming
        files")."""
        fk = resolve_file_key(path, cwd)
        # One lookup of exactly this key, not a walk over every claim: the guard runs on every
        # edit (docs/claims.md "Benchmark").
        holders = self.claims.holders(fk.key)
        leasable = len(fk.key) <= MAX_KEY_CHARS
        decision = decide_write(holders, writer.agent, writer.kind, leasable, self.edit_leases)
        if isinstance(decision, Deny):
            return self._deny(fk, decision.holder)
        if decision is None:
            return None
        return await self._edit_lease(writer, cwd, fk, decision.mine)

    async def _edit_lease(
        self, writer: Caller, cwd: str | None, fk: FileKey, mine: Holder | None
    ) -> str | None:
        """Take the writer's lease on its first edit of a file, renew it on later ones; the
        writer's own explicit claim (any mode) is left as it is: granting would replace it."""
        quiet = self.edit_leases.quiet
        step = lease_step(mine, time.time(), quiet)
        if step == "keep":
            return None
        if step == "renew" and mine is not None:
            try:
                await self.claims.renew(writer.agent, fk.key, mine.token, quiet)
                return None
            except DomainError:
                pass  # it lapsed or was replaced meanwhile: take a new one below
        out = await self.claims.claim(
            writer.agent,
            fk.key,
            "write",
            quiet,
            purpose=AUTO_LEASE_PURPOSE,
            proc=holder_process(writer),
        )
        if isinstance(out, Contention):
            if out.holder.agent == writer.agent:
                return None
            return self._deny(fk, out.holder)
        self.sites.note(fk.key, out.holder.token, holder_site(fk, cwd))
        return None

    def _deny(self, fk: FileKey, holder: Holder) -> str:
        return deny_text(
            fk, holder, self.sites.get(fk.key, holder.token), self.intent_of(holder.agent)
        )

    async def release_edit_leases(self, agent: str) -> None:
        """``agent``'s automatic edit leases go (its conversation ended); its explicit claims
        stay."""
        for key, holder in self.claims.held_by(agent):
            if holder.purpose == AUTO_LEASE_PURPOSE and holder.token is not None:
                try:
                    await self.claims.release(agent, key, holder.token)
                except DomainError as exc:  # replaced or lapsed meanwhile
                    log.debug("edit lease on %s not released: %s", key, exc)

    # ---- the commit check ------------------------------------------------------------------

    async def check_commit(self, committer: Caller, cwd: str, paths: list[str]) -> dict[str, Any]:
        """Which of ``paths`` (relative to the worktree ``cwd``) another agent holds a write
        claim on: ``{"ok", "checked", "agent", "blocked": [...], "message"}`` (docs/claims.md
        "Commit guard")."""
        live = [(key, h) for key, h in self.claims.check("") if h.mode == "write"]
        # Stored keys naming an absolute path (non-canonical, claimed before keys were) -> it.
        legacy = {key: path for key, _ in live if (path := legacy_file_key(key)) is not None}

        def resolve() -> tuple[dict[str, str], dict[str, str]]:
            # Resolving runs git (once per directory, cached): off the event loop.
            resolved = resolve_file_keys(list(legacy.values()), None)
            aliases = {key: fk.key for key, fk in zip(legacy, resolved, strict=True)}
            claimed = {aliases.get(key, key) for key, _ in live}
            wanted: dict[str, str] = {}
            asked = candidates(paths, cwd, claimed)
            for path, fk in zip(asked, resolve_file_keys(asked, cwd), strict=True):
                wanted.setdefault(fk.key, path)
            return wanted, aliases

        # No write claim at all (the usual case): nothing to resolve, no git to run.
        wanted, aliases = await asyncio.to_thread(resolve) if paths and live else ({}, {})
        found = blockers(live, wanted, committer, self.intent_of, aliases)
        return {
            "ok": not found,
            "checked": len(paths),
            "agent": committer.agent,
            "blocked": [b.as_dict() for b in found],
            "message": commit_refusal(found, committer, time.time()) if found else "",
        }
